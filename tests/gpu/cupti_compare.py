# SPDX-License-Identifier: MIT
"""Tables for tests/gpu/cupti_check.sh. Usage: cupti_compare.py WORK"""
import glob
import json
import os
import sys

work = sys.argv[1]
bad = 0


def events(d):
    procs, ev = [], []
    for f in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
        for line in open(f):
            e = json.loads(line)
            if e["type"] in ("process", "event"):  # not the stack lines
                (procs if e["type"] == "process" else ev).append(e)
    return procs, ev


def count(ev):
    c = dict(kernels=0, graph_kernels=0, h2d=0, h2d_bytes=0, memsets=0, launch_calls=0, matched=0, gpu=0)
    host_corr = {e["corr"] for e in ev if e.get("corr") and not e["kind"].startswith("gpu_")}
    for e in ev:
        k = e["kind"]
        if k.startswith("gpu_"):
            c["gpu"] += 1
            c["matched"] += e.get("corr", 0) in host_corr
        if k == "gpu_kernel":
            c["kernels"] += 1
            c["graph_kernels"] += bool(e.get("graph_id"))
        elif k == "gpu_copy" and e["dir"] == "h2d":
            c["h2d"] += 1
            c["h2d_bytes"] += e["bytes"]
        elif k == "gpu_memset":
            c["memsets"] += 1
        elif k == "launch":
            c["launch_calls"] += 1
    return c


print("| case | kernels gpuspy / counter | H2D copies | H2D bytes | memsets | graph kernels "
      "| GPU records matched to their call | match |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for case in ("mlp", "conv", "compiled", "graph", "static", "callbacks", "ctx_migrate"):
    d = os.path.join(work, case)
    try:
        ref = json.load(open(os.path.join(d, "cupti.json")))
    except (OSError, ValueError) as e:
        print(f"| {case} | counter missing: {e} | | | | | | NO |")
        bad += 1
        continue
    procs, ev = events(d)
    g = count(ev)
    ok = g["kernels"] == ref["kernels"] and g["h2d_bytes"] == ref["h2d_bytes"] and g["memsets"] == ref["memsets"]
    ok = ok and all(p.get("gpu_timing") == "cupti" for p in procs) and procs
    bad += not ok
    pct = 100.0 * g["matched"] / g["gpu"] if g["gpu"] else 0
    print(f"| {case} | {g['kernels']} / {ref['kernels']} | {g['h2d']} / {ref['h2d']} | "
          f"{g['h2d_bytes']} / {ref['h2d_bytes']} | {g['memsets']} / {ref['memsets']} | "
          f"{g['graph_kernels']} | {pct:.1f}% | {'yes' if ok else 'NO'} |")

procs, ev = events(os.path.join(work, "injection"))
g = count(ev)
ok = len(procs) == 1 and procs[0].get("gpu_timing") == "cupti" and g["kernels"] == 100 and g["launch_calls"] == 0
bad += not ok
print(f"\ninjection mode (CUDA_INJECTION64_PATH, no LD_PRELOAD), static program: "
      f"{g['kernels']} GPU kernels, {g['launch_calls']} host launch records, "
      f"gpu_timing {procs[0].get('gpu_timing') if procs else None}: {'ok' if ok else 'FAIL'}")
procs, ev = events(os.path.join(work, "kill"))
g = count(ev)
ok = (len(procs) == 1 and procs[0].get("state") != "exited" and g["launch_calls"] > 0
      and g["kernels"] == g["launch_calls"] and g["matched"] == g["gpu"])
bad += not ok
print(f"\nkilled (SIGKILL) 3 s after its GPU work: {g['kernels']} GPU kernels for {g['launch_calls']} "
      f"launch calls, {g['matched']} of {g['gpu']} GPU records matched, state "
      f"{procs[0].get('state') if procs else None}: {'ok' if ok else 'FAIL'}")
for order in ("first", "later"):
    d = os.path.join(work, f"coexist_{order}")
    out = open(os.path.join(d, "out.txt")).read()
    procs, ev = events(d)
    g = count(ev)
    prof = [l for l in out.splitlines() if l.startswith("profiler_cuda_events")]
    warn = [l for l in out.splitlines() if "CUPTI" in l or "gpuspy:" in l][:3]
    print(f"\ntorch.profiler {order}: profiler {prof[0] if prof else 'crashed?'}; gpuspy gpu_timing "
          f"{procs[0].get('gpu_timing') if procs else None}, {g['kernels']} GPU kernels; messages: {warn}")
sys.exit(1 if bad else 0)
