# SPDX-License-Identifier: MIT
"""A host-bound JAX loop: a small jitted training step of an MLP, called
from Python once per step (each call's dispatch costs more than the GPU's
work).
Fix: 10 steps a call with lax.scan, so the host dispatches once per 10.
Timed over 30000 steps (3 s) after 200: a process's speed moves between
0.07 and 0.10-0.14 ms a step every few hundred ms, so 5000 steps (run1-11)
ran 0.070-0.149 ms by process, 30000 0.067-0.102 (an H100; fix 0.051-0.053:
tests/gpu/results/round3/jax-spread-h100.md, its 52m and 52l parts).
--ab N: both in one process, N blocks of each in turn, the slow loop then
its fix (what a fix saves in this process, its speed being its own:
tests/gpu/whatif/jax_spread.sh). --blocks N: see cpu()."""
import time

import jax
import jax.numpy as jnp

from common import args

a = args(steps=30000, warmup=200, ab=0, blocks=0)
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


def timed_loop(f, per, steps):
    """ms a step of f over steps steps, f doing per steps a call."""
    global params
    n = steps // per
    jax.block_until_ready(params)
    t = time.perf_counter()
    for _ in range(n):
        params = f(params, x)
    jax.block_until_ready(params)
    return (time.perf_counter() - t) * 1e3 / (n * per)


def cpu(tid=None):
    """The CPU a thread of this process (default: this one) last ran on,
    its stat's 39th field, or None if it has ended. With --blocks N, the
    steps run first in N blocks of steps/N, a line each with its ms a step
    and this CPU, then as without it (tests/gpu/whatif/jax_modes.sh:
    whether a process's speed is its own from start to end)."""
    import threading
    try:
        with open(f"/proc/self/task/{tid or threading.get_native_id()}/stat") as st:
            return int(st.read().rsplit(")", 1)[1].split()[36])
    except OSError:
        return None


for f, per in ([(step, 1), (ten, 10)] if a.ab else [(ten, 10) if a.fix else (step, 1)]):
    for _ in range(max(1, a.warmup // per)):
        params = f(params, x)
if a.ab:
    blocks = [(timed_loop(step, 1, a.steps), timed_loop(ten, 10, a.steps)) for _ in range(a.ab)]
    s_ms = sorted(b[0] for b in blocks)[len(blocks) // 2]
    f_ms = sorted(b[1] for b in blocks)[len(blocks) // 2]
    print(f"whatif ab slow_ms={s_ms:.4f} fixed_ms={f_ms:.4f} blocks={a.ab} steps={a.steps}", flush=True)
else:
    f, per = (ten, 10) if a.fix else (step, 1)
    for b in range(a.blocks):
        print(f"whatif block={b} ms={timed_loop(f, per, a.steps // a.blocks):.4f} cpu={cpu()}", flush=True)
    ms = timed_loop(f, per, a.steps)
    if a.blocks:  # the process's threads, where they last ran, and its huge pages
        import os
        tasks = os.listdir("/proc/self/task")
        cpus = sorted({c for c in map(cpu, tasks) if c is not None})
        with open("/proc/self/smaps_rollup") as sm:
            thp = [ln.split()[1] for ln in sm if ln.startswith("AnonHugePages:")]
        print(f"whatif threads={len(tasks)} cpus={','.join(map(str, cpus))} thp_kb={thp[0] if thp else '-'}", flush=True)
    print(f"whatif step_ms={ms:.4f} steps={a.steps // per * per}", flush=True)
