# SPDX-License-Identifier: MIT
"""The what-if suite's table (run.sh): per program, the untraced step times
of the slow and fixed programs (medians over the rounds), the realized
saving a step, and what gpuspy's reports of the slow program (one traced
run a round) said first: the diagnosis, its predicted saving a step (the
median over the rounds), and the error against the realized one; then
whether the fixed program's report still makes the diagnosis it fixed.
Writes WORK/whatif.json too, and WORK/PROG/median_round: the round whose
prediction is the median (its traces become the fixtures).
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


def cpu(path):
    """What the machine's CPUs did during a run (run.sh's RUN.stat, /proc/stat's
    cpu line before and after): the share of their time the hypervisor
    gave other guests (steal) and how many were busy, this run's and any
    other process's work together; None without the file."""
    try:
        a, b = ([int(x) for x in line.split()[1:]] for line in open(path).read().splitlines()[:2])
    except (OSError, ValueError):
        return None
    d = [y - x for x, y in zip(a, b)]
    total = sum(d[:8]) or 1
    busy = total - d[3] - d[4] - d[7]  # less idle, iowait and steal
    return {"steal": d[7] / total, "busy_cpus": busy / total * (os.cpu_count() or 1)}


def round_table(d, p):
    """Each round's runs in the order they ran: step ms, steal and busy CPUs."""
    rows = []
    for r in sorted(int(m.group(1)) for m in (re.match(r"order-([0-9]+)\.txt$", f) for f in os.listdir(d)) if m):
        for v in open(os.path.join(d, f"order-{r}.txt")).read().split():
            name = "slow-traced" if v == "traced" else v
            got = re.search(r"^whatif step_ms=([0-9.]+)", open(os.path.join(d, f"{name}-{r}.out")).read()
                            if os.path.exists(os.path.join(d, f"{name}-{r}.out")) else "", re.M)
            c = cpu(os.path.join(d, f"{name}-{r}.stat"))
            if c:
                rows.append(f"| {p} | {r} | {v} | {got.group(1) if got else '-'} | {100 * c['steal']:.1f}% "
                            f"| {c['busy_cpus']:.1f} |")
    return rows


def diagnoses(d, v, r=None):
    """A traced run's diagnoses: round r's (run.sh), or the one traced run
    of an older run.sh (r None)."""
    name = f"{v}-report.json" if r is None else f"{v}-report-{r}.json"
    try:
        return json.load(open(os.path.join(d, name)))["diagnoses"]
    except (OSError, ValueError, KeyError):
        return None


def predicted(ds):
    first = ds[0] if ds else None
    if first and first.get("saving") and first["saving"]["steps"]:
        return first["saving"]["per_step_ns"] / 1e6
    return None


def slow_rounds(d):
    """The rounds whose slow program was traced, with their diagnoses:
    [(round, diagnoses)], or [(None, ...)] for an older run.sh's one run."""
    got = sorted((int(m.group(1)), diagnoses(d, "slow", int(m.group(1))))
                 for m in (re.match(r"slow-report-([0-9]+)\.json$", f) for f in os.listdir(d)) if m)
    return got or [(None, diagnoses(d, "slow"))]


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
        rounds = slow_rounds(d)
        preds = [(predicted(x), r) for r, x in rounds]
        # The rounds whose first diagnosis is the one most rounds gave
        # first; of them, the round whose prediction is the median (the
        # lower middle of an even count): its report and prediction are
        # the table's, its traces the fixtures'.
        firsts = [x[0]["id"] if x else None for _, x in rounds]
        common = max(firsts, key=firsts.count) if firsts else None
        known = sorted((p, r) for (p, r), fid in zip(preds, firsts) if p is not None and fid == common)
        mid = known[(len(known) - 1) // 2][1] if known else rounds[0][0]
        ds = next(x for r, x in rounds if r == mid)
        df = diagnoses(d, "fixed", 1) if mid is not None else diagnoses(d, "fixed")
        if mid is not None:
            open(os.path.join(d, "median_round"), "w").write(f"{mid}\n")
        row["slow_diagnoses"], row["fixed_diagnoses"] = ds, df
        row["predictions_ms"], row["median_round"] = [p for p, _ in preds], mid
        first = ds[0] if ds else None
        pred = known[(len(known) - 1) // 2][0] if known else None
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
    runs = [x for p in progs for x in round_table(os.path.join(work, p), p)]
    if runs:
        print("\nEach run in the order it ran: its step, the CPUs' time stolen by the hypervisor meanwhile, "
              "and how many CPUs were busy (os.cpu_count() of them):\n")
        print("| program | round | run | step ms | steal | busy CPUs |\n| --- | --- | --- | --- | --- | --- |")
        print("\n".join(runs))


main()
