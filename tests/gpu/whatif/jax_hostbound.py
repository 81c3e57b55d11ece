# SPDX-License-Identifier: MIT
"""A host-bound JAX loop: a small jitted training step of an MLP, called
from Python once per step (each call's dispatch costs more than the GPU's
work).
Fix: 10 steps a call with lax.scan, so the host dispatches once per 10."""
import time

import jax
import jax.numpy as jnp

from common import args

a = args(steps=500, warmup=20)
k = jax.random.PRNGKey(0)
params = [jax.random.normal(k, (256, 256)) * 0.05 for _ in range(6)]
x = jax.random.normal(k, (64, 256))


def loss(p, x):
    for w in p:
        x = jnp.tanh(x @ w)
    return jnp.mean(x ** 2)


@jax.jit
def step(p, x):
    g = jax.grad(loss)(p, x)
    return [w - 1e-3 * gw for w, gw in zip(p, g)]


@jax.jit
def ten(p, x):
    return jax.lax.scan(lambda p, _: (step(p, x), None), p, None, length=10)[0]


f, per = (ten, 10) if a.fix else (step, 1)
for _ in range(max(1, a.warmup // per)):
    params = f(params, x)
jax.block_until_ready(params)
n = a.steps // per
t = time.perf_counter()
for _ in range(n):
    params = f(params, x)
jax.block_until_ready(params)
print(f"whatif step_ms={(time.perf_counter() - t) * 1e3 / (n * per):.4f} steps={n * per}", flush=True)
