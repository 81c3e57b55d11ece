# SPDX-License-Identifier: MIT
"""What a new user meets first: `make demo` (issue 36.5)."""
import os
import re
import shlex
import subprocess

from harness import ROOT, SANITIZED, Skip, check, test


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
