# SPDX-License-Identifier: MIT
"""The what-if suite scored from its committed traces, with no GPU: each
slow program's report (gpuspy report --json of tests/fixtures/h200/whatif/
NAME-slow) beside the saving its fix realized on the H200 (realized.json),
and the fixed program's report, which must not make the diagnosis it
fixed. Each run of the suite on the H200 is a set (whatif/ itself is
run1, whatif/run2 the next...; import.py): every set is scored. Prints
the tables docs/measurements.md shows, with what each untraced slow
process alone would have realized (the program's own spread) and, where
the set kept each round's prediction, one standard error of the error;
--json for
the rows; --parts for where each error comes from: the replayed slow step
against the untraced slow processes' median (the traced process's own
speed, and tracing's cost as the replay takes it off), and the step
replayed with the change against the untraced fixed ones' (the change's
model).
--bias for each program's signed errors over the sets, the median and
how many fell under and over: where the model leans, beyond chance.
Usage: score.py [--json | --parts | --bias] [GPUSPY]"""
import concurrent.futures
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIX = os.path.join(ROOT, "tests", "fixtures", "h200", "whatif")
# The diagnosis each program's fix answers (none: no per-step finding).
EXPECT = {"pageable": "pageable_copies", "dataloader": "data_starvation", "item": "step_waits",
          "launch_bound": "launch_bound", "decode": "launch_bound", "empty_cache": "allocation_churn",
          "jax_hostbound": "host_bound", "sync_copies": "pageable_copies", "upload_once": None, "healthy": None}


def sets():
    """[(name, folder)] of the committed runs, in order."""
    out = [("run1", FIX)]
    for n in sorted(os.listdir(FIX), key=lambda n: (len(n), n)):  # run2 before run10
        if os.path.exists(os.path.join(FIX, n, "realized.json")):
            out.append((n, os.path.join(FIX, n)))
    return out


def report(gpuspy, fix, name, tmp):
    with tarfile.open(os.path.join(fix, name + ".tar.gz")) as t:
        t.extractall(tmp)
    p = subprocess.run([gpuspy, "report", "--json", os.path.join(tmp, name)], capture_output=True, text=True,
                       timeout=120)
    return json.loads(p.stdout)


def own_line(first):
    """The program's own line that a diagnosis names ("item.py:29",
    "sync_copies.cu:40"), or None."""
    m = re.search(r"\(([^()]*\.(?:py|c|cc|cpp|cu):\d+(?:-\d+)?)\)", first["text"]) if first else None
    return os.path.basename(m.group(1)) if m else None


def score(gpuspy, name, fix):
    realized = json.load(open(os.path.join(fix, "realized.json")))["programs"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for prog, want in EXPECT.items():
            if prog not in realized:  # a set still being run: the programs it has
                continue
            slow, fixed = report(gpuspy, fix, prog + "-slow", tmp), report(gpuspy, fix, prog + "-fixed", tmp)
            d = slow["diagnoses"]
            first = d[0] if d else None
            per = None
            if first and first.get("saving") and first["saving"]["steps"]:
                per = first["saving"]["per_step_ns"] / 1e6
            real = realized[prog]["realized_ms"]
            err = (per - real) / real if per is not None and want else None
            # What one untraced slow process would have realized against
            # the fixed ones' median: the program's own spread.
            fixed_ms = statistics.median(realized[prog]["fixed_ms"])
            each = [x - fixed_ms for x in realized[prog]["slow_ms"]]
            slow_ms = statistics.median(realized[prog]["slow_ms"])
            # One standard error of the error, the difference of two
            # medians over the rounds (1.2533 sd / sqrt(n) each), where the
            # set kept each round's prediction (import.py, from run7 on).
            preds = [x for x in realized[prog].get("predictions_ms") or [] if x is not None]
            s_ms = realized[prog]["slow_ms"]
            se = 1.2533 * (statistics.variance(s_ms) / len(s_ms) + statistics.variance(preds) / len(preds)) ** 0.5 \
                / real if want and len(preds) > 1 and len(s_ms) > 1 and real else None
            rows.append({"set": name, "program": prog, "want": want, "first": first["id"] if first else None,
                         "predicted_ms": per, "realized_ms": real, "error": err, "error_se": se,
                         "realized_range_ms": [min(each), max(each)],
                         "untraced_ms": [slow_ms, fixed_ms],
                         "step": slow["processes"][0].get("step", {}),
                         "fixed_says": [x["id"] for x in fixed["diagnoses"] if want and x["id"] == want],
                         "slow_ids": [x["id"] for x in d], "at": own_line(first)})
    return rows


def main():
    args = [a for a in sys.argv[1:] if a not in ("--json", "--parts", "--bias")]
    gpuspy = args[0] if args else os.path.join(ROOT, "tools", "gpuspy")
    # The sets are scored apart (each its own reports, in a folder of its
    # own), one per core at a time; the rows keep the sets' order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        every = [r for rows in pool.map(lambda s: score(gpuspy, *s), sets()) for r in rows]
    if "--json" in sys.argv:
        json.dump(every, sys.stdout, indent=1)
        return
    if "--bias" in sys.argv:
        bias(every)
        return
    for name, _ in sets():
        (parts if "--parts" in sys.argv else table)(name, [r for r in every if r["set"] == name])
    errs = [abs(r["error"]) for r in every if r["error"] is not None]
    print(f"\nall runs: median |error| {100 * statistics.median(errs):.0f}%, worst {100 * max(errs):.0f}%")


def table(name, rows):
    print(f"\n{name}:\n")
    print("| program | right first diagnosis | at | predicted ms/step | realized ms/step | error | one SE "
          "| realized by one slow process | fixed run says it |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        ok = r["first"] == r["want"]
        lo, hi = r["realized_range_ms"]
        pred = "-" if r["predicted_ms"] is None else f"{r['predicted_ms']:.3f}"
        err = "" if r["error"] is None else f"{100 * r['error']:+.0f}%"
        se = "" if r["error_se"] is None else f"{100 * r['error_se']:.0f}%"
        print(f"| {r['program']} | {'yes' if ok else 'no'} ({r['first'] or 'none'}) | {r['at'] or '-'} | {pred} | "
              f"{r['realized_ms']:.3f} | {err} | {se} | {lo:.3f} to {hi:.3f} | {', '.join(r['fixed_says']) or '-'} |")
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    if errs:
        print(f"\nmedian |error| {100 * statistics.median(errs):.0f}%, worst {100 * max(errs):.0f}%")


def bias(rows):
    """Each program's signed errors over the sets: a model that leans one
    way errs to that side in most sets."""
    print("| program | errors, set by set | median | under, over |")
    print("| --- | --- | --- | --- |")
    for prog in EXPECT:
        e = [r["error"] for r in rows if r["program"] == prog and r["error"] is not None]
        if e:
            print(f"| {prog} | {', '.join(f'{100 * x:+.0f}%' for x in e)} | {100 * statistics.median(e):+.0f}% "
                  f"| {sum(x < 0 for x in e)}, {sum(x > 0 for x in e)} |")


def parts(name, rows):
    """Each error split in two: prediction - realized = (replayed slow -
    untraced slow) - (replayed with the change - untraced fixed)."""
    print(f"\n{name}:\n")
    print("| program | untraced slow | replayed slow | its error | untraced fixed | replayed changed "
          "| its error | saving's error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        if r["predicted_ms"] is None or not r["want"]:
            continue
        us, uf = r["untraced_ms"]
        rb = r["step"]["replayed_step_ns"] / 1e6
        rc = rb - r["predicted_ms"]
        print(f"| {r['program']} | {us:.3f} | {rb:.3f} | {rb - us:+.3f} | {uf:.3f} | {rc:.3f} | {rc - uf:+.3f} "
              f"| {r['predicted_ms'] - r['realized_ms']:+.3f} |")


if __name__ == "__main__":
    main()
