# SPDX-License-Identifier: MIT
"""Brings a what-if run from the H200 into the fixtures: from run.sh's
traces.tar.xz and whatif.json (its $OUT), each program's slow and fixed
traces become tests/fixtures/h200/whatif/NAME-slow.tar.gz and
NAME-fixed.tar.gz, and realized.json takes each program's untraced step
times and realized saving, and the card (run.sh's card.txt: a set is
one card's; a set of runs on an H100 says so there). Programs the run did not reach keep their old
fixtures. Each run on the H200 is a set of its own: the first is
whatif/ itself, a later one whatif/NAME (NAME: run2, run3...), so that
the model is scored on every run kept. Then `python3
tests/gpu/whatif/score.py` scores them.
Usage: import.py OUTDIR [NAME]"""
import io
import json
import os
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIX = os.path.join(ROOT, "tests", "fixtures", "h200", "whatif")


def traces(src, prog, variant, folder):
    """The .gspy members of prog/folder/ in the run's tarball (run.sh's
    slow-tR and fixed-t1, or an older run.sh's slow and fixed), renamed
    under prog-variant/ as the fixtures hold them."""
    out = []
    with tarfile.open(os.path.join(src, "traces.tar.xz")) as t:
        for m in t.getmembers():
            parts = m.name.split("/")
            if m.isfile() and parts[:2] == [prog, folder] and m.name.endswith(".gspy"):
                out.append((f"{prog}-{variant}/{parts[-1]}", t.extractfile(m).read()))
    return out


def write(fix, name, files):
    with tarfile.open(os.path.join(fix, name + ".tar.gz"), "w:gz") as t:
        d = tarfile.TarInfo(name)
        d.type, d.mode = tarfile.DIRTYPE, 0o755
        t.addfile(d)
        for path, data in files:
            i = tarfile.TarInfo(path)
            i.size, i.mode = len(data), 0o644
            t.addfile(i, io.BytesIO(data))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: import.py OUTDIR [NAME] (run.sh's $OUT: traces.tar.xz, whatif.json)")
    src = sys.argv[1]
    fix = os.path.join(FIX, sys.argv[2]) if len(sys.argv) == 3 else FIX
    os.makedirs(fix, exist_ok=True)
    rows = json.load(open(os.path.join(src, "whatif.json")))
    path = os.path.join(fix, "realized.json")
    realized = json.load(open(path)) if os.path.exists(path) else {
        "what": "tests/gpu/whatif/run.sh on the H200 (nvidia-h200): each program's steady-state step time, "
                "untraced, slow and fixed in interleaved rounds; realized_ms = median(slow) - median(fixed). "
                "The traces beside this file are the slow and fixed programs traced with libgpuspy's "
                "defaults in the same rounds.", "programs": {}}
    # The card the run had (run.sh's card.txt): a set holds one card's runs.
    # The sets made before card.txt hold H200 runs (their "what" says so).
    card = open(os.path.join(src, "card.txt")).read().strip() if os.path.exists(os.path.join(src, "card.txt")) else ""
    had = realized.get("card") or ("NVIDIA H200" if realized["programs"] else card)
    if card and had != card:
        sys.exit(f"import.py: this set's runs were on {had}, this one on {card}: use another NAME")
    if had:
        realized["card"] = had
        realized["what"] = realized["what"].replace("on the H200 (nvidia-h200)", f"on {had}")
    for r in rows:
        p = r["program"]
        if "realized_ms" not in r:
            print(f"{p}: no untraced times, left as it was")
            continue
        mr = r.get("median_round")
        folders = {"slow": f"slow-t{mr}", "fixed": "fixed-t1"} if mr else {"slow": "slow", "fixed": "fixed"}
        got = {v: traces(src, p, v, folders[v]) for v in ("slow", "fixed")}
        if not all(got.values()):
            print(f"{p}: a trace is missing, left as it was")
            continue
        for v, files in got.items():
            write(fix, f"{p}-{v}", files)
        # Each round's prediction as the report on the GPU made it (the
        # rounds' spread: score.py's standard error).
        realized["programs"][p] = {"slow_ms": r["slow_ms"], "fixed_ms": r["fixed_ms"],
                                   "realized_ms": round(r["realized_ms"], 4),
                                   "predictions_ms": r.get("predictions_ms")}
        # The median round's first diagnosis as the GPU machine's report said
        # it: there the program's binary is, so a C program's frames name
        # their lines (the report here names a stripped offset).
        first = (r.get("slow_diagnoses") or [None])[0]
        if first:
            realized["programs"][p]["gpu_first"] = {"id": first["id"], "text": first["text"].split("\n")[0]}
        print(f"{p}: {len(got['slow'])} + {len(got['fixed'])} traces, realized {r['realized_ms']:.3f} ms a step")
    with open(path, "w") as f:
        json.dump(realized, f, indent=1)


main()
