# SPDX-License-Identifier: MIT
"""What the what-if programs share: the steady-state step time, measured as
docs/measurements.md's "what a fix really saves" says: the warm-up steps
first, then synchronize, start the clock, run the steps, synchronize, stop.
Each program prints one line, `whatif step_ms=X steps=N`, which run.sh
reads; `--fix` runs the program with its textbook fix."""
import argparse
import time


def args(steps=50, warmup=5, **extra):
    ap = argparse.ArgumentParser()
    ap.add_argument("--fix", action="store_true", help="the program with its textbook fix")
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--warmup", type=int, default=warmup)
    for k, v in extra.items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    return ap.parse_args()


def timed(step, a, sync):
    """Runs step(i) a.warmup times, then a.steps times between two
    synchronizations; prints the steady-state time a step."""
    for i in range(a.warmup):
        step(i)
    sync()
    t = time.perf_counter()
    for i in range(a.steps):
        step(a.warmup + i)
    sync()
    ms = (time.perf_counter() - t) * 1e3 / a.steps
    print(f"whatif step_ms={ms:.4f} steps={a.steps}", flush=True)
    return ms


def torch_sync():
    import torch
    torch.cuda.synchronize()


def host_work(ms):
    """Host work of a known length that is not a wait (logging, metrics,
    data preparation): a busy loop, so the CPU is really busy."""
    end = time.perf_counter() + ms / 1e3
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x
