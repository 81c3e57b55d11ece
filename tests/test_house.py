# SPDX-License-Identifier: MIT
"""What a new user meets first: `make demo` (issue 36.5)."""
import os
import re
import shlex
import subprocess

from harness import ROOT, check, test


@test
def demo_prints_a_report_and_commands_that_work(tmp):
    """scripts/demo.sh (what `make demo` runs) prints the report of the
    traced example, no build output and no raw JSON, and every command it
    prints works as printed from the repository root."""
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
