# SPDX-License-Identifier: MIT
"""A host-bound JAX loop: a small jitted training step of an MLP, called
from Python once per step (each call's dispatch costs more than the GPU's
work).
Fix: 10 steps a call with lax.scan, so the host dispatches once per 10.
Timed over 5000 steps (about 0.5 s) after 200: over 500 steps (50 ms) the
slow loop's step ran 0.070 to 0.137 ms from one process to the next on the
H200 while its fix's held at 0.052-0.053 (tests/gpu/results/round3/
whatif-run3.md and the fixtures' realized.json)."""
import time

import jax
import jax.numpy as jnp

from common import args

a = args(steps=5000, warmup=200)
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
