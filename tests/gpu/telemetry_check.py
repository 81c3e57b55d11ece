# SPDX-License-Identifier: MIT
"""gpuspy's NVML samples (a trace's JSON Lines dump) against nvidia-smi's
(--query-gpu ... --format=csv,noheader,nounits -lms 100), over the time
both cover: mean and range of each, as a Markdown table.
Usage: telemetry_check.py TRACE.jsonl SMI.csv
       telemetry_check.py --sampler < TRACE.jsonl   (who sampled, how many)"""
import csv
import datetime
import json
import statistics
import sys

if sys.argv[1] == "--sampler":
    lines = [json.loads(l) for l in sys.stdin]
    p = lines[0]
    n = sum(1 for l in lines[1:] if l.get("kind") == "nvml")
    print(f"pid {p['pid']}: nvml {p['nvml']}, device 0 sampled by pid {p['nvml_sampler'][0]}, {n} samples here")
    sys.exit(0)

lines = [json.loads(l) for l in open(sys.argv[1])]
proc = lines[0]
ev = [l for l in lines[1:] if l.get("kind") == "nvml"]
off = proc["start_realtime_ns"] - proc["start_ns"]
ours = [((e["start_ns"] + off) / 1e9, e) for e in ev]
smi = []
for row in csv.reader(open(sys.argv[2])):
    row = [c.strip() for c in row]
    try:
        t = datetime.datetime.strptime(row[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
    except (ValueError, IndexError):
        continue
    smi.append((t, row))
if not ours or not smi:
    sys.exit(f"telemetry_check: {len(ours)} gpuspy samples, {len(smi)} nvidia-smi samples")
lo = max(ours[0][0], smi[0][0])
hi = min(ours[-1][0], smi[-1][0])
ours = [e for t, e in ours if lo <= t <= hi]
smi = [r for t, r in smi if lo <= t <= hi]


def num(x):
    try:
        return float(x)
    except ValueError:
        return None


cols = [("GPU-Util %", "util_gpu", 1, 1), ("memory util %", "util_mem", 1, 2), ("memory used MiB", "used_mib", 1, 3),
        ("power W", "power_dw", 0.1, 4), ("power limit W", "limit_w", 1, 5), ("SM clock MHz", "sm_mhz", 1, 6),
        ("SM max MHz", "sm_max_mhz", 1, 7), ("memory clock MHz", "mem_mhz", 1, 8), ("temperature C", "temp_c", 1, 9),
        ("PCIe gen", "gen", 1, 11), ("PCIe width", "width", 1, 12)]
print(f"Window both cover: {hi - lo:.1f} s; gpuspy {len(ours)} samples, nvidia-smi {len(smi)}.\n")
print("| metric | gpuspy mean (min..max) | nvidia-smi mean (min..max) |")
print("| --- | --- | --- |")
for name, key, scale, i in cols:
    a = [e[key] * scale for e in ours if e.get(key) is not None]
    b = [v for v in (num(r[i]) for r in smi if len(r) > i) if v is not None]
    fa = f"{statistics.mean(a):.1f} ({min(a):.0f}..{max(a):.0f})" if a else "-"
    fb = f"{statistics.mean(b):.1f} ({min(b):.0f}..{max(b):.0f})" if b else "-"
    print(f"| {name} | {fa} | {fb} |")
ra = sum(1 for e in ours if e.get("reasons") and e["reasons"] & 0xEC)
rb = sum(1 for r in smi if len(r) > 10 and r[10].startswith("0x") and int(r[10], 16) & 0xEC)
print(f"| samples with a power or thermal clock reason | {ra} of {len(ours)} | {rb} of {len(smi)} |")
