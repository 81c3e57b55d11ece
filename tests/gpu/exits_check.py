# SPDX-License-Identifier: MIT
"""Checks tests/gpu/exits.sh's traces; prints a Markdown table and exits 1
when a check fails. Endings exits.sh did not run (its EXITS) have no row.
Usage: exits_check.py WORK"""
import glob
import json
import os
import re
import sys

work = sys.argv[1]
bad = 0


def read(d):
    procs, ev = [], []
    for f in sorted(glob.glob(os.path.join(d, "traces", "*.jsonl"))):
        for line in open(f):
            e = json.loads(line)
            if e["type"] == "process":
                procs.append(e)
            elif e["type"] == "event":
                ev.append(e)
    return procs, ev


def text(d, f):
    try:
        return open(os.path.join(d, f)).read()
    except OSError:
        return ""


def launches_and_kernels(ev):
    """Host kernel launches (with a correlation id) and the GPU kernel
    records that carry one of their ids."""
    host = {e["corr"]: e for e in ev if e["kind"] == "launch" and e.get("corr")}
    gpu = {e["corr"]: e for e in ev if e["kind"] == "gpu_kernel" and e.get("corr") in host}
    return host, gpu


rows_written = 0


def row(name, ok, what):
    global bad, rows_written
    bad += not ok
    rows_written += 1
    print(f"| {name} | {what} | {'yes' if ok else 'NO'} |")


print("| ending | what the trace kept | as required |")
print("| --- | --- | --- |")
ENDS = {"exit": ("exited", "exit_code", 0), "abort": ("signaled", "exit_signal", 6),
        "term": ("signaled", "exit_signal", 15)}
def ran(name):
    return os.path.isdir(os.path.join(work, name))


for name, (state, field, value) in ENDS.items():
    d = os.path.join(work, name)
    if not ran(name):
        continue
    procs, ev = read(d)
    host, gpu = launches_and_kernels(ev)
    same = (text(d, "untraced.rc"), text(d, "untraced.out")) == (text(d, "traced.rc"), text(d, "traced.out"))
    ok = (same and len(procs) == 1 and len(host) > 500 and len(gpu) == len(host) and
          procs[0].get("state") == state and procs[0].get(field) == value)
    row(name, ok, f"{len(gpu)} of {len(host)} launches' GPU records; exit {text(d, 'traced.rc').strip()} "
        f"(untraced {text(d, 'untraced.rc').strip()}), output {'the same' if same else 'CHANGED'}, "
        f"state {procs[0].get('state') if procs else None} {field} {procs[0].get(field) if procs else None}")

for name, kernel, where in (("index", "index", "loop.py"), ("fault", "check_index", "fault.cu")):
    d = os.path.join(work, name)
    if not ran(name):
        continue
    same = (text(d, "untraced.rc"), text(d, "untraced.out")) == (text(d, "traced.rc"), text(d, "traced.out"))
    try:
        f = json.loads(text(d, "report.json"))["processes"][0].get("fault", {})
    except (ValueError, IndexError, KeyError):
        f = {}
    rep = text(d, "report.txt")
    first = rep.split("\n== ", 1)[1].splitlines()[2] if "\n== " in rep and len(rep.split("\n== ", 1)[1].splitlines()) > 2 else ""
    # The launch's own line when it kept a stack, else the line where the
    # error surfaced: either is the program's file and a line.
    line = f.get("launched_at") or f.get("surfaced_at") or ""
    ok = (same and kernel in f.get("kernel", "") and f.get("what") == "fault" and f.get("failed_after", 0) >= 1
          and re.search(re.escape(where) + r":\d+\)", line) and kernel in first and " faulted (" in first)
    row(name, ok, f"fault {f.get('kernel', 'none')[:50]!r}, {f.get('what')}, found by {f.get('found')} "
        f"({f.get('candidates')} candidates), at {line[-60:]!r}, {f.get('failed_after')} calls failed, the first "
        f"{f.get('first_failed_api')} ({f.get('first_failed_code')}); report's first line {first.strip()[:70]!r}; "
        f"exit {text(d, 'traced.rc').strip()} (untraced {text(d, 'untraced.rc').strip()})")

for period in (5, 1):
    d = os.path.join(work, f"kill{period}")
    if not ran(f"kill{period}"):
        continue
    procs, ev = read(d)
    host, gpu = launches_and_kernels(ev)
    last_host = max((e["start_ns"] for e in host.values()), default=0)
    last_gpu = max((e["end_ns"] for e in gpu.values()), default=0)
    lost = [c for c in host if c not in gpu]
    early = [c for c in lost if host[c]["start_ns"] < last_gpu]
    gap = (last_host - last_gpu) / 1e9 if gpu else float("inf")
    # The promise (docs/limitations.md): what is lost is the GPU records
    # of the last flush period, and the second before CUPTI hands them
    # over: no launch older than that is without its record.
    window = (last_host - min(host[c]["start_ns"] for c in lost)) / 1e9 if lost else 0.0
    ok = len(procs) == 1 and len(gpu) > 1000 and window <= period + 1.5
    row(f"SIGKILL, GPUSPY_CUPTI_FLUSH={period}", ok,
        f"{len(gpu)} of {len(host)} launches' GPU records; the last kept ended {gap:.2f} s before the last "
        f"launch; {len(early)} missing before it; the oldest launch without its record was {window:.2f} s "
        f"before the last")
if not rows_written:
    print("| (none) | no ending ran: EXITS named none of exit abort term index fault kill | NO |")
    bad += 1
sys.exit(1 if bad else 0)
