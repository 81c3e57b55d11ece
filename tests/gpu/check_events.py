# SPDX-License-Identifier: MIT
"""GPUSPY_CUPTI=events against CUPTI on the H200, from two `gpuspy report
--json` outputs of the same 60-step loop: every training phase has a GPU
span for each step, and a phase's span (from its first GPU call on a stream
to the end of its work there) is at least the GPU time CUPTI measured for
the work it launched. Usage: check_events.py EVENTS.json CUPTI.json"""
import json
import sys
from checks import check, done

ev, cu = (json.load(open(p)) for p in sys.argv[1:3])




def gpu_ns(cats):
    """CUPTI GPU time of the kernels, copies and memsets a phase launched."""
    n = cats["launch"].get("gpu_ns") or 0
    n += cats["memset"].get("gpu_ns") or 0
    for d in cats["copy"].values():
        for side in d.values():
            n += side.get("gpu_ns") or 0
    return n


check("timing is events", ev["timing"] == "events", ev["timing"])
check("timing is gpu with CUPTI", cu["timing"] == "gpu", cu["timing"])
pe = {p["name"]: p for p in ev["phases"]}
pc = {p["name"]: p for p in cu["phases"]}
for name in ("data", "forward", "backward", "optimizer"):
    e, c = pe.get(name), pc.get(name)
    if not e or not c:
        check(f"{name}: in both reports", False, f"{list(pe)} / {list(pc)}")
        continue
    span, n, cupti = e["gpu_span_ns"], e["gpu_span_intervals"], gpu_ns(c)
    print(f"     {name}: events span {span / 1e6:.2f} ms over {n} intervals; CUPTI GPU time "
          f"{cupti / 1e6:.2f} ms; host wall {e['wall_ns'] / 1e6:.2f} ms")
    check(f"{name}: a span in each of the 60 steps", n >= 60, f"{n} spans, {e['count']} occurrences")
    check(f"{name}: span >= 0.9 x CUPTI GPU time", span >= 0.9 * cupti, f"{span} vs {cupti}")
done()
