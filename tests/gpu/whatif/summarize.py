# SPDX-License-Identifier: MIT
"""The what-if suite's table (run.sh): per program, the untraced step times
of the slow and fixed programs (medians over the rounds), the realized
saving a step, and what gpuspy's report of the slow program said first:
the diagnosis, its predicted saving a step, and the error against the
realized one; then whether the fixed program's report still makes the
diagnosis it fixed. Writes WORK/whatif.json too.
Usage: summarize.py WORK PROG..."""
import glob
import json
import os
import re
import statistics
import sys


def times(d, v):
    out = []
    for f in sorted(glob.glob(os.path.join(d, f"{v}-[0-9]*.out"))):
        m = re.search(r"^whatif step_ms=([0-9.]+)", open(f).read(), re.M)
        if m:
            out.append(float(m.group(1)))
    return out


def diagnoses(d, v):
    try:
        return json.load(open(os.path.join(d, f"{v}-report.json")))["diagnoses"]
    except (OSError, ValueError, KeyError):
        return None


def main():
    work, progs = sys.argv[1], sys.argv[2:]
    rows = []
    print("| program | slow ms/step | fixed ms/step | realized ms/step | first diagnosis | predicted ms/step "
          "| error | fixed run still says |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for p in progs:
        d = os.path.join(work, p)
        s, f = times(d, "slow"), times(d, "fixed")
        row = {"program": p, "slow_ms": s, "fixed_ms": f}
        if s and f:
            row["realized_ms"] = statistics.median(s) - statistics.median(f)
        ds, df = diagnoses(d, "slow"), diagnoses(d, "fixed")
        row["slow_diagnoses"], row["fixed_diagnoses"] = ds, df
        first = ds[0] if ds else None
        pred = None
        if first and first.get("saving") and first["saving"]["steps"]:
            pred = first["saving"]["per_step_ns"] / 1e6
        row["predicted_ms"] = pred
        err = ""
        if pred is not None and row.get("realized_ms"):
            row["error"] = (pred - row["realized_ms"]) / row["realized_ms"]
            err = f"{100 * row['error']:+.0f}%"
        still = [x["id"] for x in (df or []) if first and x["id"] == first["id"]]
        rows.append(row)
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        print(f"| {p} | {fmt(statistics.median(s) if s else None)} | {fmt(statistics.median(f) if f else None)} "
              f"| {fmt(row.get('realized_ms'))} | {first['id'] if first else 'none'} | {fmt(pred)} | {err} "
              f"| {', '.join(still) or '-'} |")
    json.dump(rows, open(os.path.join(work, "whatif.json"), "w"), indent=1)


main()
