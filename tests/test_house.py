# SPDX-License-Identifier: MIT
"""What a new user meets first: `make demo` (issue 36.5)."""
import os
import re
import shlex
import subprocess

from harness import GPUSPY, ROOT, SANITIZED, TIMEOUT, Skip, check, run, test


@test
def demo_prints_a_report_and_commands_that_work(tmp):
    """scripts/demo.sh (what `make demo` runs) prints the report of the
    traced example, no build output and no raw JSON, and every command it
    prints works as printed from the repository root."""
    if SANITIZED:
        raise Skip("the demo builds and preloads its own library, not the sanitized one")
    p = subprocess.run(["sh", "scripts/demo.sh"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"demo exited {p.returncode}: {p.stderr[-500:]}")
    out = p.stdout
    check("Diagnoses" in out and "Phases" in out, f"no report:\n{out[:2000]}")
    check(not re.search(r"^\s*(CC|LD|NVCC)\s", out, re.M) and "{\"type\"" not in out,
          f"build noise or JSON in the demo:\n{out[:2000]}")
    cmds = re.findall(r"^   (tools/gpuspy .*?)\s+#", out, re.M)
    check(len(cmds) == 3, f"commands printed: {cmds}")
    for c in cmds:
        r = subprocess.run(shlex.split(c), cwd=ROOT, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"`{c}` exited {r.returncode}: {r.stderr.strip()}")
    d = re.search(r"^== tools/gpuspy report (\S+)$", out, re.M).group(1)
    check(os.path.exists(os.path.join(d, "timeline.json")) and os.path.exists(os.path.join(d, "trace.jsonl")),
          "the exported files are missing")


@test
def committed_binary_trace_reads_as_its_dump(tmp):
    """tests/golden/format-v2.gspy.gz, a trace written by libgpuspy in
    format version 2 (prog_graph on the doubles, CUPTI on, stacks off),
    dumps byte for byte to the committed format-v2.jsonl, whose reports
    golden_reports checks: a change that reads old files differently fails
    here. A new format version commits a file of its own."""
    import gzip
    gold = os.path.join(ROOT, "tests", "golden")
    path = os.path.join(tmp, "format-v2.gspy")
    with gzip.open(os.path.join(gold, "format-v2.gspy.gz")) as f, open(path, "wb") as g:
        g.write(f.read())
    p = subprocess.run([os.path.join(ROOT, "tools", "gpuspy"), "dump", path], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, f"dump failed: {p.stderr.strip()}")
    want = open(os.path.join(gold, "format-v2.jsonl")).read()
    check(p.stdout == want, "the committed trace no longer dumps as format-v2.jsonl")
    check('"format_version":2' in want.splitlines()[0], "not a version 2 trace")


@test
def env_shows_the_values_as_the_library_reads_them(tmp):
    """`gpuspy env` runs the library's own parser (lib/options.c) on this
    environment: the values the library warns about are exactly the ones it
    marks, with the same default; a good value is shown plain; the
    environment's bytes are escaped."""
    bad = {"GPUSPY_CUPTI": "maybe", "GPUSPY_STACKS": "off,all", "GPUSPY_STACK_DEPTH": "65",
           "GPUSPY_STACK_MIN": "20 us", "GPUSPY_HOST_ALLOC_MIN": "1T", "GPUSPY_NVTX": "sometimes"}
    good = {"GPUSPY_BUFFER_MB": "512", "GPUSPY_STACK_LAUNCHES": "7", "GPUSPY_NVTX_RANGES": "step\x1b[2J"}
    e = dict(os.environ, **bad, **good)
    for k in list(e):
        if k.startswith("GPUSPY_") and k not in bad and k not in good:
            del e[k]
    out = subprocess.run([GPUSPY, "env"], env=e, capture_output=True, text=True, timeout=TIMEOUT)
    check(out.returncode == 0, f"gpuspy env: {out.stderr}")
    rows = {l.split()[0]: l for l in out.stdout.splitlines()[1:] if l.startswith("GPUSPY_")}
    check(len(rows) >= 20 and "GPUSPY_QUIET" in rows, f"rows: {sorted(rows)}")
    marked = {k for k, l in rows.items() if "<- not " in l}
    check(marked == set(bad), f"marked {sorted(marked)}, expected {sorted(bad)}")
    check(rows["GPUSPY_BUFFER_MB"].split() == ["GPUSPY_BUFFER_MB", "256", "512"], rows["GPUSPY_BUFFER_MB"])
    check(rows["GPUSPY_NVTX_RANGES"].split() == ["GPUSPY_NVTX_RANGES", "all", "step\\x1b[2J"],
          rows["GPUSPY_NVTX_RANGES"])
    check(rows["GPUSPY_STACK_DEPTH"].endswith("65  <- not a number (1..64): the library uses 32"),
          rows["GPUSPY_STACK_DEPTH"])
    check("6 values the library would refuse" in out.stdout, out.stdout)
    # The library, given the same environment, warns about the same six,
    # in the table's order, each with the default env showed.
    p = run("prog_rt_dyn", tmp=tmp, env=dict(bad, GPUSPY_QUIET="0"))
    warned = [l.split("=")[0][len("gpuspy: "):] for l in p.stderr.splitlines() if " is not " in l]
    order = [k for k in rows if k in bad]
    check(warned == order, f"library warned about {warned}, env marked {order}")
    for k in bad:
        used = rows[k].rsplit("the library uses ", 1)[1]
        check(f"{k}={bad[k]} is not " in p.stderr and f"; using {used}" in p.stderr, f"{k}: {p.stderr!r}")


@test
def core_and_writer_reach_modules_through_their_table(tmp):
    """lib/ in layers: core.c and writer.c call no module's setup, fork or
    file hooks by name; each module registers them once with GS_MODULE, at
    the order module.h lists (the only calls left are the writer asking the
    host module for the allocations it holds for the file)."""
    src = lambda f: open(os.path.join(ROOT, "lib", f), encoding="utf-8").read()
    mods = "stacks|stack|cupti|signals|nvtx|python|host|events|memmap|names|phase"
    for f in ("core.c", "writer.c"):
        calls = set(re.findall(r"\bgs_(?:%s)_\w+(?=\()" % mods, src(f)))
        check(calls <= {"gs_host_pending", "gs_host_flush", "gs_host_unwritten"}, f"{f} calls {sorted(calls)}")
    listed = dict((m, int(n)) for m, n in re.findall(r"(\w+) (\d+)[,.) ]", src("module.h").split("Order:")[1].split("*/")[0]))
    found = {}
    for f in sorted(os.listdir(os.path.join(ROOT, "lib"))):
        if f.endswith(".c"):
            for m, n in re.findall(r"^GS_MODULE\((\w+), (\d+)", src(f), re.M):
                check(m not in found, f"module {m} registered twice")
                found[m] = int(n)
    check(found == listed, f"GS_MODULE entries {found}, module.h lists {listed}")
