#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pools the rounds of H200 overhead runs (the rounds files bench/gpu_overhead.py
writes, or the window
rates of bench/gpu_lockstep.py, lockstep_rates.txt, whose rounds are its
windows, the first and the last left out) and prints, per
loop and mode, the median of the per-round ratios with a 95% bootstrap
confidence interval of that median (10,000 resamples of the rounds, fixed
seed). A target like "at least 0.98 of untraced" is shown when the interval's
lower end is at or above it, ruled out when its upper end is below it.
Given the lock step's lockstep_cpu.txt files too, it also prints, per mode,
the CPU time per step that the mode's main thread (and all its threads)
adds to the untraced process's in the same round: median and interval.
A lock-step file names its loop on a first line "# loop=conv" (none: mlp).
A mode with replicas also gets a row that pools all its processes
("untraced" there: the untraced processes not divided by, the A/A check).
Lock-step rates also give one median ratio per process (a file's mode, or
its replica "MODE #2"; "untraced b" and "untraced #2" are the untraced
processes not divided by): where a mode has two or more, they are listed, so
that the spread between processes of one mode, which bootstrapping rounds
does not see, is in view, with their median and, from six processes on, a
distribution-free 95% interval of it (order statistics: each process one
draw); likewise each pair gpuspy+cupti #k / bare cupti #k's median ratio
to the collector ("by pair"). A mode "gpuspy NAME=VALUE" (an A/B of one
setting, e.g. ALT_LIB=1) is also divided by plain gpuspy round by round
(each side the mean rate of its processes).
Usage: bench/overhead_table.py ROUNDS_FILE..."""
import math
import random
import re
import statistics
import sys


def parse(paths):
    """(rounds, cpu, procs): per loop, a list of {mode: rate} and of {mode:
    (main, all)}; per loop and base mode, each lock-step process's median ratio."""
    rounds, cpu, procs = {}, {}, {}
    for path in paths:
        lines = open(path).read().splitlines()
        loop = "mlp"
        if lines and lines[0].startswith("# loop="):
            loop = lines.pop(0)[len("# loop="):].strip()
        if lines and re.match(r"[\w .+=#]+: [\d./]+ ", lines[0]):  # lock step: "mode: v v ..."
            vals = {l.split(": ")[0]: l.split(": ")[1].split() for l in lines if ": " in l}
            n = min(len(r) for r in vals.values())
            if "/" in lines[0]:  # lockstep_cpu.txt: main/all threads CPU us per step
                cpu.setdefault(loop + " (lock step)", []).extend(
                    {m: tuple(float(x) for x in r[k].split("/")) for m, r in vals.items()} for k in range(1, n - 1))
            else:
                rs = [{m: float(r[k]) for m, r in vals.items()} for k in range(1, n - 1)]
                rounds.setdefault(loop + " (lock step)", []).extend(rs)
                for m in vals:  # "untraced b" and "untraced #3" are other untraced processes
                    if m != "untraced" and "untraced" in vals:
                        procs.setdefault((loop + " (lock step)", base(m)), []).append(
                            statistics.median(d[m] / d["untraced"] for d in rs))
                for m in vals:  # gpuspy+cupti #k against bare cupti #k: each pair one draw
                    b = "bare cupti" + m[len("gpuspy+cupti"):]
                    if base(m) == "gpuspy+cupti" and b in vals:
                        procs.setdefault((loop + " (lock step)", "gpuspy+cupti / bare cupti, by pair"), []).append(
                            statistics.median(d[m] / d[b] for d in rs))
            continue
        for line in lines:
            m = re.match(r"(\w+) round \d+: (.*)", line.strip())
            if not m:
                continue
            d = {}
            for part in m.group(2).split(", "):
                p = re.match(r"(.+) ([\d.]+) \((\d+) B\)", part)
                if p:
                    d[p.group(1)] = float(p.group(2))
            rounds.setdefault(m.group(1), []).append(d)
    return rounds, cpu, procs


def base(mode):
    """The mode a process is one of: "gpuspy #2" is gpuspy; "untraced b" untraced."""
    return "untraced" if mode == "untraced b" else mode.split(" #")[0]


def ci(values, rng, n=10000):
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def median_interval(values):
    """A distribution-free 95% interval of the median from the order
    statistics (x(k), x(n+1-k)), k the largest with P(Bin(n, 1/2) < k) <=
    0.025; None below 6 values. It treats each process as one draw: the
    spread between processes, which bootstrapping rounds does not see."""
    n, xs = len(values), sorted(values)
    k, tail = 0, 0.0
    while True:
        nxt = tail + math.comb(n, k) / 2 ** n  # P(Bin(n, 1/2) <= k)
        if nxt > 0.025:
            break
        tail, k = nxt, k + 1
    return (xs[k - 1], xs[n - k]) if k >= 1 else None


def main():
    rng = random.Random(1)
    rounds, cpu, procs = parse(sys.argv[1:])
    print("| loop | ratio | rounds | median | 95% CI of the median |")
    print("| --- | --- | --- | --- | --- |")
    for loop, rs in rounds.items():
        modes = []
        for d in rs:
            modes += [m for m in d if m != "untraced" and m not in modes]
        pairs = [(m, "untraced") for m in modes]
        pairs.append(("gpuspy+cupti", "bare cupti"))
        for a, b in pairs:
            v = [d[a] / d[b] for d in rs if a in d and b in d]
            if len(v) < 2:
                continue
            lo, hi = ci(v, rng)
            print(f"| {loop} | {a} / {b} | {len(v)} | {statistics.median(v):.3f} | {lo:.3f}..{hi:.3f} |")
        # A mode with replicas: all its processes pooled (a round counts
        # once per process; gpuspy+cupti #k goes with bare cupti #k).
        for b in dict.fromkeys(base(m) for m in modes if base(m) != m):
            if b == "untraced":
                v = [d[m] / d["untraced"] for d in rs for m in d if m != "untraced" and base(m) == b]
            else:
                v = [d[m] / d["untraced"] for d in rs for m in d if base(m) == b and "untraced" in d]
            w = [d[m] / d["bare cupti" + m[len(b):]] for d in rs for m in d
                 if base(m) == b and "bare cupti" + m[len(b):] in d] if b == "gpuspy+cupti" else []
            for name, x in ((f"{b}, every process / untraced", v), ("gpuspy+cupti / bare cupti, every pair", w)):
                if len(x) >= 2:
                    lo, hi = ci(x, rng)
                    print(f"| {loop} | {name} | {len(x)} | {statistics.median(x):.3f} | {lo:.3f}..{hi:.3f} |")
        # An A/B of gpuspy against itself with one setting changed ("gpuspy
        # ALT_LIB=1", "gpuspy HOST_SHIM=1"): per round, the mean rate of
        # that mode's processes over the mean of plain gpuspy's.
        for b in dict.fromkeys(base(m) for m in modes):
            if not b.startswith("gpuspy ") or "=" not in b:
                continue
            x = []
            for d in rs:
                ra = [d[m] for m in d if base(m) == b]
                rb = [d[m] for m in d if base(m) == "gpuspy"]
                if ra and rb:
                    x.append(statistics.mean(ra) / statistics.mean(rb))
            if len(x) >= 2:
                lo, hi = ci(x, rng)
                print(f"| {loop} | {b} / gpuspy, the processes' mean per round | {len(x)} "
                      f"| {statistics.median(x):.3f} | {lo:.3f}..{hi:.3f} |")
    if cpu:
        print()
        print("| loop | mode | rounds | main thread CPU us/step added to untraced's | 95% CI "
              "| all threads added | 95% CI |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
    for loop, rs in cpu.items():
        modes = []
        for d in rs:
            modes += [m for m in d if m != "untraced" and m not in modes]
        for m in modes:
            both = [d for d in rs if m in d and "untraced" in d]
            if len(both) < 2:
                continue
            cells = []
            for i in (0, 1):
                v = [d[m][i] - d["untraced"][i] for d in both]
                lo, hi = ci(v, rng)
                cells.append(f"{statistics.median(v):+.1f} | {lo:+.1f}..{hi:+.1f}")
            print(f"| {loop} | {m} | {len(both)} | {cells[0]} | {cells[1]} |")
    many = {k: v for k, v in procs.items() if len(v) > 1}
    if many:
        print()
        print("| loop | mode | processes | each process's median ratio to untraced | min..max "
              "| their median | 95% interval, by processes |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
    for (loop, m), v in many.items():
        if m == "untraced":
            m = "untraced (A/A: the other untraced processes)"
        iv = median_interval(v)
        iv = f"{iv[0]:.3f}..{iv[1]:.3f}" if iv else "(too few)"
        print(f"| {loop} | {m} | {len(v)} | {' '.join(f'{x:.3f}' for x in v)} | {min(v):.3f}..{max(v):.3f} "
              f"| {statistics.median(v):.3f} | {iv} |")


if __name__ == "__main__":
    main()
