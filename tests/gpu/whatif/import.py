# SPDX-License-Identifier: MIT
"""Brings a what-if run from the H200 into the fixtures: from run.sh's
traces.tar.xz and whatif.json (its $OUT), each program's slow and fixed
traces become tests/fixtures/h200/whatif/NAME-slow.tar.gz and
NAME-fixed.tar.gz, and realized.json takes each program's untraced step
times and realized saving. Programs the run did not reach keep their old
fixtures. Then `python3 tests/gpu/whatif/score.py` scores them.
Usage: import.py OUTDIR"""
import io
import json
import os
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIX = os.path.join(ROOT, "tests", "fixtures", "h200", "whatif")


def traces(src, prog, variant):
    """The .gspy members of prog/variant/ in the run's tarball, renamed
    under prog-variant/ as the fixtures hold them."""
    out = []
    with tarfile.open(os.path.join(src, "traces.tar.xz")) as t:
        for m in t.getmembers():
            parts = m.name.split("/")
            if m.isfile() and parts[:2] == [prog, variant] and m.name.endswith(".gspy"):
                out.append((f"{prog}-{variant}/{parts[-1]}", t.extractfile(m).read()))
    return out


def write(name, files):
    with tarfile.open(os.path.join(FIX, name + ".tar.gz"), "w:gz") as t:
        d = tarfile.TarInfo(name)
        d.type, d.mode = tarfile.DIRTYPE, 0o755
        t.addfile(d)
        for path, data in files:
            i = tarfile.TarInfo(path)
            i.size, i.mode = len(data), 0o644
            t.addfile(i, io.BytesIO(data))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: import.py OUTDIR (run.sh's $OUT: traces.tar.xz, whatif.json)")
    src = sys.argv[1]
    rows = json.load(open(os.path.join(src, "whatif.json")))
    path = os.path.join(FIX, "realized.json")
    realized = json.load(open(path))
    for r in rows:
        p = r["program"]
        if "realized_ms" not in r:
            print(f"{p}: no untraced times, left as it was")
            continue
        got = {v: traces(src, p, v) for v in ("slow", "fixed")}
        if not all(got.values()):
            print(f"{p}: a trace is missing, left as it was")
            continue
        for v, files in got.items():
            write(f"{p}-{v}", files)
        realized["programs"][p] = {"slow_ms": r["slow_ms"], "fixed_ms": r["fixed_ms"],
                                   "realized_ms": round(r["realized_ms"], 4)}
        print(f"{p}: {len(got['slow'])} + {len(got['fixed'])} traces, realized {r['realized_ms']:.3f} ms a step")
    with open(path, "w") as f:
        json.dump(realized, f, indent=1)


main()
