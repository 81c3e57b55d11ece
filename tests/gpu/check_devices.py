# SPDX-License-Identifier: MIT
"""Checks tests/gpu/devices.py's trace: DUMP.jsonl (gpuspy dump) and
REPORT.json (gpuspy report --json). Exit 1 on any failed check."""
import collections
import json
import sys

N0, N1 = 300, 500
failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what)
    failed += not ok


ev = [json.loads(l) for l in open(sys.argv[1])]
ev = [e for e in ev if e["type"] == "event"]
host = collections.Counter((e["name"], e["device"]) for e in ev if e["kind"] == "launch")
names = {n for n, _ in host}
adds = [n for n in names if host[(n, 0)] == N0 and host[(n, 1)] == N1]
check(len(adds) == 1, f"one kernel launched {N0} times on device 0 and {N1} on device 1: {adds[:1]}")
gpu = collections.Counter((e["name"], e["device"]) for e in ev if e["kind"] == "gpu_kernel")
if adds:
    check(gpu[(adds[0], 0)] == N0 and gpu[(adds[0], 1)] == N1,
          f"its GPU records: {gpu[(adds[0], 0)]} on device 0, {gpu[(adds[0], 1)]} on device 1")
by_corr = {e["corr"]: e for e in ev if "corr" in e and not e["kind"].startswith("gpu_")}
gk = [e for e in ev if e["kind"].startswith("gpu_") and e.get("corr") in by_corr]
same = sum(1 for e in gk if by_corr[e["corr"]]["device"] == e["device"])
check(gk and same == len(gk), f"every GPU record on its host call's device: {same} of {len(gk)}")
h2d = [e for e in ev if e["kind"] == "copy" and e.get("dir") == "h2d" and e["bytes"] == 4 << 20]
check(len(h2d) == 1 and h2d[0]["device"] == 1 and h2d[0].get("host_mem") == "pageable",
      f"the 4 MiB pageable copy on device 1: {[(e['api'], e['device'], e.get('host_mem')) for e in h2d]}")
g2d = [e for e in ev if e["kind"] == "gpu_copy" and e["bytes"] == 4 << 20]
check(len(g2d) == 1 and g2d[0]["device"] == 1, f"its GPU record on device 1: {[e['device'] for e in g2d]}")
rep = json.load(open(sys.argv[2]))
procs = rep["processes"] if isinstance(rep, dict) and "processes" in rep else rep
p = procs[0] if isinstance(procs, list) else procs
devs = {d["device"]: d["busy_ns"] for d in p["gpu"]["devices"]}
check(sorted(devs) == [0, 1] and all(v > 0 for v in devs.values()), f"the report's GPU busy per device: {devs}")
sys.exit(1 if failed else 0)
