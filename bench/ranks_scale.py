#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How `gpuspy report` copes with a big job's rank files (issue 34, point
4): N traces of E events each (tests/mktrace, 4 threads a trace), read on
one core (taskset) and on every core of this machine; wall time, events a
second, and the report's peak resident memory, for N/4 and N traces (the
memory must not grow with the events, only with the reports kept).
Median of 3 runs each. SCALE_CORES=1,all (the default) picks the core
counts ("all": every core this process may run on). Usage:
bench/ranks_scale.py [N] [EVENTS] [DIR]"""
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUSPY = os.path.join(ROOT, "tools", "gpuspy")
MKTRACE = os.path.join(ROOT, "tests", "bin", "mktrace")


def one(cmd):
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    err = p.stderr.read().decode()
    p.stderr.close()
    if status:
        raise SystemExit(f"{cmd[:3]}: status {status}: {err}")
    return wall, ru.ru_maxrss  # KiB


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    events = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    d = sys.argv[3] if len(sys.argv) > 3 else "/tmp/gpuspy-ranks-scale"
    for k in (n, n // 4):  # the smaller set: hard links to the first of the larger
        sub = os.path.join(d, str(k))
        os.makedirs(sub, exist_ok=True)
        for i in range(k):
            f = os.path.join(sub, f"rank{i:04d}.gspy")
            if os.path.exists(f):
                continue
            if k == n:
                subprocess.run([MKTRACE, f, str(events), "4"], check=True)
            else:
                os.link(os.path.join(d, str(n), f"rank{i:04d}.gspy"), f)
    cores = len(os.sched_getaffinity(0))
    print(f"| traces | events | cores | wall (median of 3) | events/s | peak RSS |")
    print("| --- | --- | --- | --- | --- | --- |")
    want = [cores if c == "all" else int(c) for c in os.environ.get("SCALE_CORES", "1,all").split(",")]
    for k in (n // 4, n):
        sub = os.path.join(d, str(k))
        for c in want:
            cpus = ",".join(str(x) for x in sorted(os.sched_getaffinity(0))[:c])
            cmd = (["taskset", "-c", cpus] if c < cores else []) + [GPUSPY, "report", "--json", sub]
            runs = [one(cmd) for _ in range(3)]
            wall = statistics.median(w for w, _ in runs)
            rss = max(r for _, r in runs)
            print(f"| {k} | {k * events:,} | {c} | {wall:.2f} s | {k * events / wall / 1e6:.1f} M | "
                  f"{rss / 1024:.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()
