# SPDX-License-Identifier: MIT
"""Zoo: a JAX jitted training step of a small MLP, 20 steps."""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax
import jax.numpy as jnp


def loss(p, x, y):
    h = jnp.tanh(x @ p["w1"])
    return jnp.mean((h @ p["w2"] - y) ** 2)


@jax.jit
def step(p, x, y):
    g = jax.grad(loss)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)


k = jax.random.PRNGKey(0)
p = {"w1": jax.random.normal(k, (256, 512)), "w2": jax.random.normal(k, (512, 16))}
x = jax.random.normal(k, (128, 256))
y = jax.random.normal(k, (128, 16))
for _ in range(20):
    p = step(p, x, y)
jax.block_until_ready(p)
print("jax: 20 steps")
