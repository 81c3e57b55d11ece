# SPDX-License-Identifier: MIT
"""Checks of issue 6 on the H200, from tests/gpu/stacks.sh's outputs.
Usage: check_stacks.py WORKDIR. One line per check or measurement; exit 1
if a check fails."""
import glob
import json
import os
import sys
from checks import check, done

work = sys.argv[1]




def fn(frame):
    return frame.split(" (")[0].split("+0x")[0]


def dump(name):
    """Events (each with its process's stack_min_ns as "_min") and stacks."""
    files = [f for f in glob.glob(os.path.join(work, name, "*.jsonl"))]
    events, stacks = [], {}
    for f in files:
        lines = [json.loads(l) for l in open(f)]
        events += [dict(l, _min=lines[0].get("stack_min_ns", 0)) for l in lines[1:] if l["type"] == "event"]
        stacks.update({(f, l["id"]): l["frames"] for l in lines[1:] if l["type"] == "stack"})
    return events, {k[1]: v for k, v in stacks.items()}


def report(name):
    return json.load(open(os.path.join(work, name + ".report.json")))


# (a) CUDA C: the pageable copy site and the malloc of its buffer.
src = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "pinned_vs_pageable.cu")
malloc_line = [i + 1 for i, l in enumerate(open(src)) if "malloc(n)" in l][0]
copy_line = [i + 1 for i, l in enumerate(open(src)) if "cudaMemcpy(dev, pageable" in l][0]
o = report("pinned")
cp = o["copy_sites"]
check("pinned_vs_pageable: one pageable copy site, 10 copies of 64 MiB",
      len(cp) == 1 and cp[0]["count"] == 10 and cp[0]["bytes"] == 10 << 26, json.dumps(cp)[:300])
check("pinned_vs_pageable: the copy site is main at the cudaMemcpy line",
      cp and cp[0]["stack"][0] == f"main (pinned_vs_pageable.cu:{copy_line})", cp and cp[0]["stack"][0])
check("pinned_vs_pageable: its buffer was malloc'ed at the malloc line",
      cp and cp[0].get("host_alloc_stack", [""])[0] == f"main (pinned_vs_pageable.cu:{malloc_line})",
      cp and str(cp[0].get("host_alloc_stack"))[:200])
al = {(a["mem"], a["count"], a["bytes"]) for a in o["alloc_sites"]}
check("pinned_vs_pageable: device and pinned allocation sites", al == {("device", 1, 1 << 26), ("pinned", 1, 1 << 26)},
      str(al))

def owes_stack(e, every):
    """Allocations, frees, pageable copies and waits have a stack; memsets
    and other copies too with GPUSPY_STACKS=all (every); GPUSPY_STACK_MIN
    lets short waits, memsets and copies that are not pageable go without."""
    other = e["kind"] == "memset" or (e["kind"] == "copy" and e.get("host_mem") != "pageable")
    if other and not every:
        return False
    short = e["end_ns"] - e["start_ns"] < e["_min"]
    return not (short and (e["kind"] == "sync" or other))


def stack_kinds(name, every):
    """Per kind: events, with a stack, with Python frames; the events that
    owe a stack and have none; those that have one they do not owe."""
    ev, stacks = dump(name)
    kinds, missing, extra = {}, [], []
    for e in ev:
        if e["kind"] in ("alloc", "free", "copy", "memset", "sync"):
            k = kinds.setdefault(e["kind"], [0, 0, 0])
            k[0] += 1
            if ("stack" in e) != owes_stack(e, every):
                (extra if "stack" in e else missing).append(e)
            if "stack" in e:
                k[1] += 1
                if any(".py:" in f for f in stacks.get(e["stack"], [])):
                    k[2] += 1
    for k, (n, s, p) in sorted(kinds.items()):
        print(f"     {name}: {k}: {n} events, {s} with a stack, {p} with Python frames")
    return kinds, stacks, missing, extra


# (b) PyTorch MLP through a DataLoader, default stacks.
kinds, stacks, missing, extra = stack_kinds("mlp", False)
check("mlp: every alloc/free, pageable copy and sync has a stack (but short waits under GPUSPY_STACK_MIN)",
      not missing, str(missing[:2])[:300])
check("mlp: memsets and copies that are not pageable have none (GPUSPY_STACKS=all gives them one)",
      not extra, str(extra[:2])[:300])
syms = sum(1 for fr in stacks.values() for f in fr if "libtorch" in f or "c10::" in f or "at::" in f)
check("mlp: stacks symbolized into PyTorch's libraries", syms > 0, f"{syms} frames")
o = report("mlp")
for key in ("alloc_sites", "peak_sites", "copy_sites", "sync_sites"):
    top = o[key][0] if o[key] else None
    print(f"     mlp: {key}: {len(o[key])} sites; top: " +
          (f"count {top['count']} bytes {top['bytes']} stack {[fn(f) for f in top['stack'][:4]]}" if top else "-"))
check("mlp: allocation and peak sites", o["alloc_sites"] and o["peak_sites"])
check("mlp: pageable copy sites", o["copy_sites"])
withhost = [c for c in o["copy_sites"] if c.get("host_alloc_stack")]
print(f"     mlp: {len(withhost)} of {len(o['copy_sites'])} copy sites tied to a host allocation")

# (c) examples/train.py, GPUSPY_STACKS=all
kinds, _, missing, extra = stack_kinds("train", True)
check("train (GPUSPY_STACKS=all): every alloc/free/copy/memset/sync has a stack",
      not missing and not extra, str((missing + extra)[:2])[:300])
o = report("train")
print(f"     train: {len(o['copy_sites'])} copy sites, "
      f"{sum(1 for c in o['copy_sites'] if c.get('host_alloc_stack'))} tied to a host allocation")
for c in o["copy_sites"][:2]:
    print(f"     train: copy {c['count']} x {c['bytes']} B at {c['stack'][:3]}; buffer from "
          f"{c.get('host_alloc_stack', [])[:6]}")
done()
