#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What tests/gpu/ranks.sh found: per run, whether every rank finished
untraced and traced alike, which rank the report names as the straggler
and by how much, against the rank made slow and its sleep.
Usage: ranks_check.py OUT SLOW_MS"""
import json
import os
import re
import sys

out, slow_ms = sys.argv[1], float(sys.argv[2])
runs = open(os.path.join(out, "ranks-runs.txt")).read()
print("| ranks | untraced / traced exit | straggler named | its lead a step | others waited a step | "
      "collectives a step (per rank) | clock offsets |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for f in sorted(os.listdir(out)):
    m = re.match(r"ranks-ddp(\d+)\.json$", f)
    if not m:
        continue
    n = m.group(1)
    exits = re.findall(rf"ddp{n} (\w+): exit (\d+)", runs)
    try:
        j = json.load(open(os.path.join(out, f)))["ranks"]
    except (ValueError, KeyError, TypeError) as e:
        print(f"| {n} | {exits} | report unreadable: {e} | | | | |")
        continue
    s = j.get("straggler") if j else None
    ranks = j.get("ranks", []) if j else []
    coll = ", ".join(f"{x['rank']}: {x['collective_ns'] / x['steps'] / 1e6:.1f} ms"
                     if x.get("collective_ns") is not None and x["steps"] else f"{x['rank']}: n/a" for x in ranks)
    offs = ", ".join(f"{x['rank']}: {x['clock_offset_ns'] / 1e3:+.1f} us" for x in ranks if "clock_offset_ns" in x)
    if s:
        print(f"| {n} | {' / '.join(e for _, e in exits)} | rank {s['rank']} in {s['steps']} of {j['steps']} steps "
              f"(made slow: rank 1, {slow_ms:.0f} ms) | {s['lead_ns'] / s['steps'] / 1e6:.1f} ms | "
              f"{s['others_waited_ns'] / s['steps'] / 1e6:.1f} ms | {coll} | {offs} |")
    else:
        print(f"| {n} | {' / '.join(e for _, e in exits)} | none | | | {coll} | {offs} |")
