# SPDX-License-Identifier: MIT
"""jax_modes.sh's tables from its work folder (WAY-ROUND/out, and for
the traced ways report.json: its prediction, and the step of the traced
window its replay started from): a row a process; each way's median and
range of the step, and its blocks' spread in a process; then each way's
blocks together, by percentile (a speed that moves within processes
shows in the blocks, one that is a process's own in the steps)."""
import json
import os
import re
import statistics
import sys

WAYS = ["none", "noaslr", "onecpu", "preload", "gpuspy", "gpuspy_noaslr"]


def process(d):
    """The step, the blocks' ms and CPUs, the last line's facts, and
    the report's prediction and replayed step, of one process."""
    try:
        text = open(os.path.join(d, "out")).read()
    except OSError:
        return None
    m = re.search(r"^whatif step_ms=([0-9.]+)", text, re.M)
    blocks = [(float(a), int(b)) for a, b in re.findall(r"^whatif block=\d+ ms=([0-9.]+) cpu=(\d+)", text, re.M)]
    facts = re.search(r"^whatif threads=(\d+) cpus=(\S*) thp_kb=(\S+)", text, re.M)
    pred = replayed = None
    try:
        rep = json.load(open(os.path.join(d, "report.json")))
        replayed = rep["processes"][0]["step"]["step_ns"] / 1e6  # the window's, as traced
        pred = rep["diagnoses"][0]["saving"]["per_step_ns"] / 1e6
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        pass
    return {"step": float(m.group(1)) if m else None, "blocks": blocks,
            "facts": facts.groups() if facts else ("-", "-", "-"), "pred": pred, "replayed": replayed}


def f(v, n=4):
    return "-" if v is None else f"{v:.{n}f}"


def main(work):
    rows = {}
    for name in sorted(os.listdir(work)):
        w, _, r = name.rpartition("-")
        if w in WAYS and r.isdigit():
            p = process(os.path.join(work, name))
            if p:
                rows.setdefault(w, []).append((int(r), p))
    print("| way | round | step ms | blocks: min, max | loop thread's CPUs | threads | their CPUs | huge pages kB "
          "| predicted | traced window's step |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for w in WAYS:
        for r, p in sorted(rows.get(w, []), key=lambda x: x[0]):
            b = [x for x, _ in p["blocks"]]
            cpus = ",".join(str(c) for c in sorted({c for _, c in p["blocks"]}))
            print(f"| {w} | {r} | {f(p['step'])} | {f(min(b)) if b else '-'}, {f(max(b)) if b else '-'} | {cpus} "
                  f"| {p['facts'][0]} | {p['facts'][1]} | {p['facts'][2]} | {f(p['pred'])} | {f(p['replayed'])} |")
    print("\n| way | processes | step: median | min | max | blocks' max/min in a process: median, worst |")
    print("| --- | --- | --- | --- | --- | --- |")
    for w in WAYS:
        s = [p["step"] for _, p in rows.get(w, []) if p["step"]]
        sp = [max(x for x, _ in p["blocks"]) / min(x for x, _ in p["blocks"]) for _, p in rows.get(w, []) if p["blocks"]]
        if s:
            print(f"| {w} | {len(s)} | {f(statistics.median(s))} | {f(min(s))} | {f(max(s))} "
                  f"| {f(statistics.median(sp), 2) if sp else '-'}, {f(max(sp), 2) if sp else '-'} |")

    print("\n| way | blocks | p10 | p25 | median | p75 | p90 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for w in WAYS:
        b = sorted(x for _, p in rows.get(w, []) for x, _ in p["blocks"])
        if b:
            print(f"| {w} | {len(b)} | " + " | ".join(f(b[int(len(b) * q)]) for q in (0.1, 0.25, 0.5, 0.75, 0.9)) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
