#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Main-thread CPU time per step by library and by function, from
bench/gpu/pcsample.c's files, for each mode, as medians over rounds.
Usage: pcsample_report.py DIR STEPS
DIR holds MODE.ROUND.txt files (MODE without dots); STEPS is the number of
steps each sampled window ran. A library's time per step is its share of
the samples times the main thread's CPU time per step. Functions are named
from each library's symbol table (nm, the dynamic one when it has no
other); a library over 300 MB is not read (it is named, not its
functions)."""
import bisect
import collections
import os
import re
import statistics
import subprocess
import sys

_syms = {}


def load_symbols(path):
    """(sorted vaddrs, names, vaddr - file offset per LOAD segment)."""
    if path in _syms:
        return _syms[path]
    addrs, names, segs = [], [], []
    try:
        if os.path.getsize(path) <= 300 << 20:
            for flag in ([], ["-D"]):
                out = subprocess.run(["nm", "-n", "--defined-only", *flag, path],
                                     capture_output=True, text=True).stdout
                for line in out.splitlines():
                    f = line.split()
                    if len(f) >= 3 and f[1] in "tTwWiI":
                        addrs.append(int(f[0], 16))
                        names.append(f[2])
                if addrs:
                    break
            hdr = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
            for line in hdr.splitlines():
                f = line.split()
                if f and f[0] == "LOAD":
                    segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # off, vaddr, filesz
    except OSError:
        pass
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    _syms[path] = ([addrs[i] for i in order], [names[i] for i in order], segs)
    return _syms[path]


def symbol(path, fileoff):
    addrs, names, segs = load_symbols(path)
    vaddr = fileoff
    for off, va, size in segs:
        if off <= fileoff < off + size:
            vaddr = fileoff - off + va
            break
    i = bisect.bisect_right(addrs, vaddr) - 1
    return names[i] if i >= 0 else "?"


def read(path):
    head, maps, pcs = None, [], []
    for line in open(path):
        if line.startswith("samples "):
            f = line.split()
            head = {f[i]: float(f[i + 1]) for i in range(0, len(f) - 1, 2)}
        elif line.startswith("map "):
            m = re.match(r"map ([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) \S+ \d+\s*(.*)", line)
            if m:
                maps.append((int(m[1], 16), int(m[2], 16), int(m[3], 16), m[4].strip() or "[anon]"))
        elif line.startswith("pc "):
            _, pc, n = line.split()
            pcs.append((int(pc, 16), int(n)))
    maps.sort()
    return head, maps, pcs


def profile(path, steps):
    """{library: us/step}, {(library, function): us/step}, samples."""
    head, maps, pcs = read(path)
    starts = [m[0] for m in maps]
    libs, funcs = collections.Counter(), collections.Counter()
    total = sum(n for _, n in pcs)
    for pc, n in pcs:
        i = bisect.bisect_right(starts, pc) - 1
        if i >= 0 and pc < maps[i][1]:
            lo, _, off, p = maps[i]
            lib = os.path.basename(p)
            fn = symbol(p, pc - lo + off) if p.startswith("/") else "?"
        else:
            lib, fn = "[jit/anon]", "?"
        libs[lib] += n
        funcs[(lib, fn)] += n
    us = head["main_cpu_s"] * 1e6 / steps / max(total, 1)
    return ({k: v * us for k, v in libs.items()}, {k: v * us for k, v in funcs.items()}, total,
            head["main_cpu_s"] * 1e6 / steps)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: pcsample_report.py DIR STEPS")
    d, steps = sys.argv[1], sys.argv[2]
    if not os.path.isdir(d) or not steps.isdigit() or int(steps) < 1:
        sys.exit(f"pcsample_report.py: {d} is not a directory or {steps} not a step count")
    steps = int(steps)
    runs = collections.defaultdict(list)
    for f in sorted(os.listdir(d)):
        if f.endswith(".txt") and f.count(".") == 2:
            runs[f.split(".")[0]].append(profile(os.path.join(d, f), steps))
    if not runs:
        sys.exit(f"pcsample_report.py: no MODE.ROUND.txt files in {d}")
    modes = sorted(runs, key=lambda m: (m != "untraced", m))

    def med(mode, get):
        return statistics.median(get(r) for r in runs[mode])

    print(f"Main-thread CPU us per step, median over rounds ({steps} steps sampled per run).\n")
    print("| mode | runs | samples per run | main thread CPU us/step |")
    print("| --- | --- | --- | --- |")
    for m in modes:
        print(f"| {m} | {len(runs[m])} | {med(m, lambda r: r[2]):.0f} | {med(m, lambda r: r[3]):.1f} |")
    libs = collections.Counter()
    for m in modes:
        for r in runs[m]:
            libs.update(r[0])
    top = [lib for lib, _ in libs.most_common(20)]
    print("\nBy library: median (min..max over rounds).\n")
    print("| library | " + " | ".join(modes) + " |")
    print("| --- |" + " --- |" * len(modes))

    def cell(m, get):
        v = [get(r) for r in runs[m]]
        return f"{statistics.median(v):.1f} ({min(v):.0f}..{max(v):.0f})"
    for lib in top:
        print(f"| {lib} | " + " | ".join(cell(m, lambda r: r[0].get(lib, 0.0)) for m in modes) + " |")
    print("| main thread, all | " + " | ".join(cell(m, lambda r: r[3]) for m in modes) + " |")
    print("\nlibgpuspy us/step in each run (main thread us/step):\n")
    for m in modes:
        own = [(sum(v for lib, v in r[0].items() if lib.startswith("libgpuspy")), r[3]) for r in runs[m]]
        print(f"  {m:14s} " + ", ".join(f"{a:.2f} ({b:.1f})" for a, b in own))
    for m in modes:
        if m == "untraced":
            continue
        own = collections.Counter()
        for r in runs[m]:
            for (lib, fn), v in r[1].items():
                if lib.startswith("libgpuspy"):
                    own[fn] += v / len(runs[m])
        if own:
            print(f"\n{m}: libgpuspy functions, mean us/step over runs")
            for fn, v in own.most_common(15):
                print(f"  {v:7.2f}  {fn}")
    funcs = collections.Counter()
    for m in modes:
        for r in runs[m]:
            funcs.update(r[1])
    print("\nFunctions with the most time (all modes), us/step median per mode:")
    print("\n| library:function | " + " | ".join(modes) + " |")
    print("| --- |" + " --- |" * len(modes))
    for k, _ in funcs.most_common(40):
        print(f"| {k[0]}:{k[1][:60]} | " +
              " | ".join(f"{med(m, lambda r: r[1].get(k, 0.0)):.2f}" for m in modes) + " |")


if __name__ == "__main__":
    main()
