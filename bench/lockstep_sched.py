#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads a lock-step run's lockstep_sched.txt (each window's involuntary
context switches of the main thread and the CPU it ended on, "N@CPU") beside
its lockstep_rates.txt, to tell whether a slow ("unlucky") process was
preempted or slow on one CPU. Per process: its median ratio to untraced
(as bench/overhead_table.py's per-process list), the mean and largest
number of involuntary switches a window, and for each CPU it ran on, the
windows there and the median of their rates over the process's own median
rate. Then, all processes together, that median by CPU. The first and last
windows are left out, as overhead_table.py does.
Usage: bench/lockstep_sched.py RATES_FILE SCHED_FILE [RATES_FILE SCHED_FILE ...]"""
import collections
import statistics
import sys


def load(path, conv):
    """{mode: [value per window]} from "mode: v v ..." lines."""
    out = {}
    for line in open(path):
        if line.startswith("#") or ": " not in line:
            continue
        mode, rest = line.split(": ", 1)
        out[mode] = [conv(t) for t in rest.split()]
    return out


def sched_value(tok):
    n, cpu = tok.split("@")
    return int(n), int(cpu)


def report(rates_path, sched_path):
    rates, sched = load(rates_path, float), load(sched_path, sched_value)
    if "untraced" not in rates:
        raise SystemExit(f"lockstep_sched: {rates_path}: no untraced process")
    n = min(len(v) for v in list(rates.values()) + list(sched.values()))
    keep = range(1, n - 1)
    print(f"{rates_path} ({len(keep)} windows)\n")
    print("| process | median ratio to untraced | switches a window (mean, max) | rate / its median, by CPU (windows) |")
    print("| --- | --- | --- | --- |")
    by_cpu = collections.defaultdict(list)
    for mode in rates:
        if mode not in sched:
            continue
        ratio = statistics.median(rates[mode][k] / rates["untraced"][k] for k in keep)
        own = statistics.median(rates[mode][k] for k in keep)
        switches = [sched[mode][k][0] for k in keep]
        cpus = collections.defaultdict(list)
        for k in keep:
            cpus[sched[mode][k][1]].append(rates[mode][k] / own)
            by_cpu[sched[mode][k][1]].append(rates[mode][k] / own)
        print(f"| {mode} | {ratio:.3f} | {statistics.mean(switches):.2f}, {max(switches)} | "
              + " ".join(f"{c}: {statistics.median(v):.3f} ({len(v)})" for c, v in sorted(cpus.items())) + " |")
    print("| all processes | | | " + " ".join(
        f"{c}: {statistics.median(v):.3f} ({len(v)})" for c, v in sorted(by_cpu.items())) + " |")


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        raise SystemExit("usage: bench/lockstep_sched.py RATES_FILE SCHED_FILE [RATES_FILE SCHED_FILE ...]")
    for i in range(0, len(argv), 2):
        report(argv[i], argv[i + 1])


if __name__ == "__main__":
    main(sys.argv[1:])
