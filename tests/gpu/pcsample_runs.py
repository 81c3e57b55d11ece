#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libgpuspy's time a step in each run of tests/gpu/pcsample.sh, unrounded:
its share of the run's samples times the main thread's CPU time a step.
Usage: pcsample_runs.py DIR STEPS (DIR: the runs' MODE.ROUND.txt files, as
pcsample.tar.gz holds them; STEPS: the steps each run sampled)."""
import collections
import glob
import os
import sys


def one_run(path, steps):
    """(libgpuspy us a step, main thread us a step) of one run's file."""
    maps, total, ours, cpu_s = [], 0, 0, 0.0
    for line in open(path):
        f = line.split()
        if f[0] == "samples":
            cpu_s = float(f[f.index("main_cpu_s") + 1])
        elif f[0] == "map":
            lo, hi = (int(x, 16) for x in f[1].split("-"))
            maps.append((lo, hi, os.path.basename(f[-1]).startswith("libgpuspy")))
        elif f[0] == "pc":
            pc, n = int(f[1], 16), int(f[2])
            total += n
            ours += n if any(lo <= pc < hi and mine for lo, hi, mine in maps) else 0
    step_us = cpu_s / steps * 1e6
    return (ours / total * step_us if total else 0.0), step_us


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pcsample_runs.py DIR STEPS")
    runs = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.*.txt"))):
        runs[os.path.basename(path).split(".")[0]].append(one_run(path, int(sys.argv[2])))
    for mode, v in sorted(runs.items()):
        print(f"{mode:14s} libgpuspy us/step " + " ".join(f"{a:.2f}" for a, _ in v) +
              "   main thread us/step " + " ".join(f"{b:.1f}" for _, b in v))


if __name__ == "__main__":
    main()
