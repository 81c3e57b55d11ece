#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A dry run of bench/gpu_lockstep.py without a GPU: speaks loops.py's
--lockstep protocol, each window a 2 ms sleep, STUB_SLOW_<GPUSPY_CUPTI> times
longer under gpuspy (e.g. STUB_SLOW_on=1.2) and 1.1 times under the bare
collector; CPU per step reported as 1000 us times that, plus the window's
number mod 3 (all threads: 100 us more). LOOP_CMD="python3 bench/lockstep_stub.py" STUB_SLOW_on=1.2 \\
python3 bench/gpu_lockstep.py /tmp/w /tmp/o  gives gpuspy+cupti about 0.83."""
import argparse
import os
import time

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int)
ap.add_argument("--window", type=int)
ap.add_argument("--lockstep", action="store_true")
ap.add_argument("--profile", action="store_true")  # torch.profiler mode: nothing to do here
ap.add_argument("--blocking-sync", action="store_true")  # BLOCKING_SYNC=1: written to stub_env.txt
a = ap.parse_args()
slow = float(os.environ.get("STUB_SLOW_" + os.environ.get("GPUSPY_CUPTI", "none"), "1"))
slow *= 1.1 if os.environ.get("CUDA_INJECTION64_PATH") else 1
if os.environ.get("GPUSPY_DIR"):  # what the bench set for this mode, for its test
    with open(os.path.join(os.environ["GPUSPY_DIR"], "stub_env.txt"), "w") as f:
        f.write(f"GPUSPY_CUPTI={os.environ.get('GPUSPY_CUPTI', '')} LD_PRELOAD={os.environ.get('LD_PRELOAD', '')}"
                + (" blocking" if a.blocking_sync else "")
                + "".join(f" {k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("CUPTI_COUNT_")
                          and k != "CUPTI_COUNT_OUT") + "\n")
ready, tin, tout = (int(x) for x in os.environ["LOCKSTEP_FDS"].split(","))
os.write(ready, b"r")
rates, cpu = [], []
for i in range(a.steps // a.window):
    os.read(tin, 1)
    t = time.monotonic()
    time.sleep(0.002 * slow)
    rates.append(a.window / (time.monotonic() - t))
    main = round(1000 * slow) + i % 3  # made-up CPU us per step the test can predict
    cpu.append(f"{main:.1f}/{main + 100:.1f}")
    os.write(tout, b"t")
print("lockstep_windows " + " ".join(f"{r:.2f}" for r in rates))
print("lockstep_cpu " + " ".join(cpu))
print("lockstep_sched " + " ".join(f"{i % 2}@{i % 4}" for i in range(len(cpu))))  # made up too
