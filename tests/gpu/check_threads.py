# SPDX-License-Identifier: MIT
"""Issue 7 on the H200: events recorded from threads the CUDA driver and CUPTI
create. Reads the stdout of tests/gpu/threads.cu and gpuspy's JSON Lines dump
of its trace (GPUSPY_CUPTI=on).
Usage: check_threads.py DIR   (DIR holds stdout.txt and one *.jsonl)
Prints one line per check; exit 1 if any fails."""
import glob
import json
import os
import sys
import checks
from checks import done

d = sys.argv[1]


def check(what, cond, detail=""):
    checks.check("threads: " + what, cond, detail)


out = {}
for line in open(os.path.join(d, "stdout.txt")):
    k, *v = line.split()
    out[k] = v
main_tid = int(out["main_tid"][0])
cb_tids = {int(t) for t in out["cb_tids"]}
files = glob.glob(os.path.join(d, "*.jsonl"))
check("one trace file", len(files) == 1, str(files))
recs = [json.loads(l) for l in open(files[0])]
proc = recs[0]
ev = [r for r in recs if r.get("type") == "event"]
check("clean exit, nothing dropped", proc["clean_exit"] and proc["dropped"] == 0,
      f"state {proc['state']} dropped {proc['dropped']}")
check("callbacks ran on driver threads", cb_tids and main_tid not in cb_tids, f"main {main_tid} cb {sorted(cb_tids)}")
for name, n in (("host_fn", 50), ("stream_cb", 10)):
    marks = [e for e in ev if e["kind"] == "mark" and e.get("name") == name]
    tids = {e["tid"] for e in marks}
    check(f"{n} {name} marks from driver threads", len(marks) == n and tids <= cb_tids,
          f"{len(marks)} marks, tids {sorted(tids)}")
launches = [e for e in ev if e["kind"] == "launch" and "grid" in e]  # not the host functions
hostfn = [e for e in ev if e["kind"] == "launch" and "grid" not in e]
check("50 host-function launches recorded", len(hostfn) == 50, f"{len(hostfn)}: {sorted({e['api'] for e in hostfn})}")
check("50 kernel launches on the main thread", len(launches) == 50 and {e["tid"] for e in launches} == {main_tid},
      f"{len(launches)}, tids {sorted({e['tid'] for e in launches})}")
kern = [e for e in ev if e["kind"] == "gpu_kernel"]
corr = {e.get("corr") for e in launches}
check("50 CUPTI kernel records, each matched to its launch",
      len(kern) == 50 and all(e.get("corr") in corr for e in kern), f"{len(kern)} records")
writers = sorted({e["tid"] for e in ev if e["kind"].startswith("gpu_")})
print(f"     GPU records written by threads {writers} (main {main_tid}); "
      f"process threads {proc['threads']}")
done()
