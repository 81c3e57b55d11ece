#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the real CUPTI gives for the copies the CUPTI double first modelled
on no evidence (tests/gpu/copies.cu): per kind of host call (direction, bytes a
call), how many GPU records joined each call and their bytes, in gpuspy's
trace (GPUSPY_CUPTI=on); and gpuspy's GPU copy totals against the
independent counter's (tests/gpu/cupti_count.c) in a second run.
Usage: copies_check.py STDOUT GPUSPY_JSONL COUNTER_JSON; exit 1 on a
mismatch. The 2D, 3D, same-device peer and batched copies must each get
one record of the call's bytes (a batch: the sum of its copies), in the
call's direction: what the double does. First run on the H200
(tests/gpu/results/copies-check.md) found that for all five."""
import collections
import json
import sys

did, gpu_by_corr, host = [], collections.defaultdict(list), []
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "did":  # did API DIR BYTES x CALLS
        did.append((f[1], f[2], int(f[3]), int(f[5])))
for line in open(sys.argv[2]):
    e = json.loads(line)
    if e.get("type") != "event":
        continue
    if e["kind"] == "gpu_copy":
        gpu_by_corr[e.get("corr")].append(e)
    elif e["kind"] == "copy":
        host.append(e)
counter = json.load(open(sys.argv[3]))

ok = True
print("| program's call | direction | bytes a call | calls | host records | GPU records per call | GPU bytes per call | check |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for api, d, n, calls in did:
    mine = [h for h in host if h["dir"] == d and h["bytes"] == n]
    per = [gpu_by_corr.get(h.get("corr"), []) if "corr" in h else [] for h in mine]
    counts = sorted({len(p) for p in per})
    nbytes = sorted({sum(g["bytes"] for g in p) for p in per})
    good = len(mine) == calls and counts == [1] and nbytes == [n] and all(
        p[0]["dir"] == d for p in per)
    ok &= good
    print(f"| {api} | {d} | {n} | {calls} | {len(mine)} | {counts} | {nbytes} | {'ok' if good else 'MISMATCH'} |")

gpu = [g for p in gpu_by_corr.values() for g in p]
print("\n| direction | GPU copies gpuspy / counter | bytes gpuspy / counter | check |")
print("| --- | --- | --- | --- |")
for d in ("h2d", "d2h", "d2d"):
    n = sum(1 for g in gpu if g["dir"] == d)
    b = sum(g["bytes"] for g in gpu if g["dir"] == d)
    good = (n, b) == (counter[d], counter[d + "_bytes"])
    ok &= good
    print(f"| {d} | {n} / {counter[d]} | {b} / {counter[d + '_bytes']} | {'ok' if good else 'MISMATCH'} |")
sys.exit(0 if ok else 1)
