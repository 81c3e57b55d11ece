# SPDX-License-Identifier: MIT
"""Compares gpuspy's trace of each GPU case with the independent CUPTI
counter run in the same process. Usage: summarize.py WORKDIR CASE... ;
prints a Markdown table and writes WORKDIR/summary.json. Exit 1 on any
mismatch of kernel launches or H2D bytes."""
import collections
import json
import os
import sys

GRAPH_OR_HOST = ("(graph)", "(host function)")


def gpuspy_counts(case_dir):
    c = collections.Counter()
    apis = collections.Counter()
    procs = []
    for f in sorted(os.listdir(case_dir)):
        if not f.endswith(".jsonl"):
            continue
        with open(os.path.join(case_dir, f)) as fh:
            for line in fh:
                e = json.loads(line)
                if e["type"] == "process":
                    procs.append({k: e[k] for k in ("pid", "events", "dropped", "clean_exit")})
                    continue
                if e["type"] != "event":  # stack lines
                    continue
                apis[e["api"]] += 1
                k = e["kind"]
                if k == "launch":
                    if e.get("name") in GRAPH_OR_HOST:
                        c["graph_or_host_launches"] += 1
                    else:
                        c["kernels"] += 1
                elif k == "copy":
                    d = e["dir"]
                    c[d] += 1
                    c[d + "_bytes"] += e["bytes"]
                    if d == "h2d":
                        c["h2d_" + e.get("host_mem", "?")] += 1
                elif k == "memset":
                    c["memsets"] += 1
                elif k in ("alloc", "free", "sync"):
                    c[k] += 1
    return c, apis, procs


def main():
    work, cases = sys.argv[1], sys.argv[2:]
    out = {}
    bad = 0
    rows = ["| case | kernels gpuspy / CUPTI | H2D copies gpuspy / CUPTI | H2D bytes gpuspy / CUPTI "
            "| pageable H2D gpuspy / CUPTI | memsets gpuspy / CUPTI | match |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for case in cases:
        d = os.path.join(work, case)
        try:
            cupti = json.load(open(os.path.join(d, "cupti.json")))
        except (OSError, ValueError) as e:
            rows.append(f"| {case} | no CUPTI result ({e}) | | | | | no |")
            bad += 1
            continue
        g, apis, procs = gpuspy_counts(d)
        ok = g["kernels"] == cupti["kernels"] and g["h2d_bytes"] == cupti["h2d_bytes"]
        bad += not ok
        rows.append(f"| {case} | {g['kernels']} / {cupti['kernels']} | {g['h2d']} / {cupti['h2d']} "
                    f"| {g['h2d_bytes']} / {cupti['h2d_bytes']} | {g['h2d_pageable']} / "
                    f"{cupti['h2d_pageable']} | {g['memsets']} / {cupti['memsets']} "
                    f"| {'yes' if ok else 'NO'} |")
        out[case] = {"gpuspy": dict(g), "cupti": cupti, "apis": dict(apis.most_common()),
                     "processes": procs, "match": ok}
    with open(os.path.join(work, "summary.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("\n".join(rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
