# SPDX-License-Identifier: MIT
"""The timeline export (Chrome Trace Event Format)."""
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)


def check_chrome(path):
    """The Trace Event Format's rules, as Perfetto and chrome://tracing read them."""
    d = json.load(open(path))
    check(isinstance(d, dict) and isinstance(d.get("traceEvents"), list), "no traceEvents array")
    slices = {}
    for e in d["traceEvents"]:
        check(e.get("ph") in ("X", "M", "C", "i", "s", "f"), f"unknown phase type {e}")
        if e["ph"] in ("s", "f"):
            check(isinstance(e.get("id"), (int, float)), f"flow event without id: {e}")
        check(isinstance(e.get("name"), str) and isinstance(e.get("pid"), int)
              and isinstance(e.get("tid"), int), f"name/pid/tid missing: {e}")
        check(isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, f"bad ts: {e}")
        if e["ph"] == "X":
            check(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, f"bad dur: {e}")
            slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif e["ph"] == "C":
            check(e.get("args") and all(isinstance(v, (int, float)) for v in e["args"].values()),
                  f"counter without numeric args: {e}")
        elif e["ph"] == "M":
            check("name" in e["args"] or "sort_index" in e["args"], f"bad metadata: {e}")
        elif e["ph"] == "i":
            check(e.get("s") in ("g", "p", "t"), f"bad instant scope: {e}")
    for key, v in slices.items():
        stack = []
        for b, end, name in sorted(v, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1] <= b:
                stack.pop()
            check(not stack or end <= stack[-1] + 1e-3, f"slice {name} at {b} overlaps its parent on {key}")
            stack.append(end)
    return d["traceEvents"]


@test
def export_chrome_trace(tmp):
    run("prog_train", ["20", "100"], tmp=tmp)
    g = os.path.join(tmp, traces(tmp)[0])
    out = os.path.join(tmp, "out.json")
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", g, "-o", out], capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(p.returncode == 0, p.stderr)
    ev = check_chrome(out)
    phases = [e for e in ev if e.get("cat") == "phase"]
    check(len(phases) == 80 and {e["name"] for e in phases} == {"data", "forward", "backward", "optimizer"},
          f"{len(phases)} phase slices")
    check(len({e["tid"] for e in phases}) == 1, "phases are not on one track")
    api = [e for e in ev if e["ph"] == "X" and e.get("cat") != "phase"]
    _, dumped = dump(g)
    calls = [e for e in dumped if not e["kind"].startswith("phase") and e["kind"] != "mark"]
    check(len(api) == len(calls), f"{len(api)} API slices for {len(calls)} calls")
    check(sum(1 for e in api if e["name"] == "fwd_gemm") == 200, "launch slices not named by kernel")
    mem = [e["args"]["bytes"] for e in ev if e["ph"] == "C"]
    check(len(mem) == 44 and max(mem) == (2 << 20) + (512 << 10) + (4 << 20) and mem[-1] == 0,
          f"memory counter {len(mem)} points, max {max(mem) if mem else None}")
    # The JSON Lines dump exports the same timeline.
    j = os.path.join(tmp, "t.jsonl")
    subprocess.run([GPUSPY, "dump", g, "-o", j], check=True)
    out2 = os.path.join(tmp, "out2.json")
    subprocess.run([GPUSPY, "export", "--format", "chrome", j, "-o", out2], check=True)
    check(open(out).read() == open(out2).read(), "export differs between .gspy and JSON Lines")
    p = subprocess.run([GPUSPY, "export", "--format", "svg", g, "-o", out], capture_output=True, text=True)
    check(p.returncode == 2 and p.stderr.count("\n") == 1, "unknown format not refused in one line")


@test
def export_gpu_tracks_flows_and_demangled_names(tmp):
    src = os.path.join(ROOT, "tests", "golden", "gpu.jsonl")
    lines = open(src).read().replace('"gemm"', '"_Z4gemmPfS_i"').splitlines()
    path = os.path.join(tmp, "m.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = os.path.join(tmp, "t.json")
    subprocess.run([GPUSPY, "export", "--format", "chrome", path, "-o", out], check=True)
    ev = check_chrome(out)
    tracks = {e["args"]["name"]: e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    check("GPU 0 stream 7" in tracks, f"no GPU track: {list(tracks)}")
    gpu = [e for e in ev if e["ph"] == "X" and e["tid"] == tracks["GPU 0 stream 7"]]
    check(len(gpu) == 12, f"{len(gpu)} GPU slices")
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    ends = {e["id"] for e in ev if e["ph"] == "f"}
    check(ends <= starts and len(starts) == 8, f"flows: {len(starts)} starts, ends {ends - starts}")
    check(sum(1 for e in gpu if e["name"] == "gemm(float*, float*, int)") == 2, "kernel name not demangled")
    o = report_json(path)
    k = {x["name"]: x.get("mangled") for x in o["kernels"]}
    check(k.get("gemm(float*, float*, int)") == "_Z4gemmPfS_i", f"report kernels {k}")
    h = subprocess.run([GPUSPY, "report", "--color", "never", path], capture_output=True, text=True)
    table = "\n".join(l for l in h.stdout.splitlines() if not l.startswith("    ncu "))
    check("\n  gemm  " in table and "_Z4gemm" not in table, "human report shows the mangled name")
    # ... except in the Nsight Compute line, which selects by it: the middle of 2 runs.
    check("    ncu --kernel-name-base mangled -k 'regex:^_Z4gemmPfS_i$' -s 1 -c 1 CMD" in h.stdout, h.stdout)


@test
def export_keeps_hosts_apart(tmp):
    """The same pid on two hosts (ranks of one job on two nodes) is two
    processes in Perfetto, each with its own pid and its host in its name,
    each with its own events; on one host a pid keeps its number."""
    src = open(os.path.join(ROOT, "tests", "golden", "gpu.jsonl")).read().splitlines()
    paths = []
    for host in ("nodeA", "nodeB"):
        p = os.path.join(tmp, f"{host}.jsonl")
        head = json.loads(src[0])
        head["host"] = host
        with open(p, "w") as f:
            f.write("\n".join([json.dumps(head)] + src[1:]) + "\n")
        paths.append(p)
    out = os.path.join(tmp, "t.json")
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", *paths, "-o", out], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0, p.stderr)
    ev = check_chrome(out)
    names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    check(sorted(names.values()) == ["pid 7 on nodeA: gpu-golden", "pid 7 on nodeB: gpu-golden"] and
          names.get(7) == "pid 7 on nodeA: gpu-golden", f"processes {names}")
    counts = {pid: sum(1 for e in ev if e["pid"] == pid and e["ph"] != "M") for pid in names}
    check(len(set(counts.values())) == 1 and min(counts.values()) > 0, f"events per process {counts}")
    subprocess.run([GPUSPY, "export", "--format", "chrome", paths[0], "-o", out], check=True)
    names = {e["pid"]: e["args"]["name"] for e in check_chrome(out) if e["ph"] == "M" and e["name"] == "process_name"}
    check(names == {7: "pid 7: gpu-golden"}, f"one host: {names}")


@test
def outputs_are_where_people_expect_them(tmp):
    """`export -o -` writes to standard output (no file named '-'); a
    successful export and `--html` each say in one line what they wrote;
    an export that fails leaves no partial file; a file replaced keeps its
    mode; an output naming an input is refused; `--json` with `--html` is
    one error line, not one of them silently."""
    gold = os.path.join(ROOT, "tests", "golden", "gpu.jsonl")
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", gold, "-o", "-"], cwd=tmp, capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and json.loads(p.stdout)["traceEvents"] and not os.path.exists(os.path.join(tmp, "-")),
          f"export -o -: {p.returncode} {p.stderr}")
    out = os.path.join(tmp, "t.json")
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", gold, "-o", out], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0 and p.stderr == f"gpuspy: wrote {out} ({os.path.getsize(out)} bytes): open it in "
          "ui.perfetto.dev\n", p.stderr)
    bad = os.path.join(tmp, "bad.jsonl")
    with open(bad, "w") as f:
        f.write("not a trace\n")
    part = os.path.join(tmp, "part.json")
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", gold, bad, "-o", part], capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and not os.path.exists(part) and
          not [f for f in os.listdir(tmp) if f.startswith(".part.json")], f"failed export left {os.listdir(tmp)}")
    # A file replaced keeps its mode (it became 0666 less the umask); an
    # output that names an input is refused, the input left as it was.
    os.chmod(out, 0o600)
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", gold, "-o", out], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0 and os.stat(out).st_mode & 0o777 == 0o600, f"mode {oct(os.stat(out).st_mode)}")
    mine = os.path.join(tmp, "mine.jsonl")
    shutil.copy(gold, mine)
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", mine, "-o", mine], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 1 and p.stderr == f"gpuspy: error: {mine}: is a trace this export reads; give the output "
          "another name\n" and open(mine).read() == open(gold).read(), f"-o the input: {p.stderr!r}")
    page = os.path.join(tmp, "r.html")
    p = subprocess.run([GPUSPY, "report", "--html", page, gold], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stderr == f"gpuspy: wrote {page} ({os.path.getsize(page)} bytes): open it in a "
          "browser\n", p.stderr)
    p = subprocess.run([GPUSPY, "report", "--json", "--html", page, gold], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 2 and p.stderr.count("\n") == 1 and "--json and --html" in p.stderr, p.stderr)


@test
def flame_graphs_of_where_the_calls_come_from(tmp):
    """`export --format collapsed` writes one line a call stack, "pid N"
    and its frames outermost first joined by ';', then the host time of
    the calls made from it; `--format speedscope` the same stacks as
    speedscope's two profiles, host time and device and pinned bytes
    allocated. Both are checked against the trace's own events
    (tests/golden/stacks.jsonl), stack by stack."""
    gold = os.path.join(ROOT, "tests", "golden", "stacks.jsonl")
    stacks, ns, nbytes, pid = {}, {}, {}, None
    for line in open(gold):
        e = json.loads(line)
        if e["type"] == "process":
            pid = e["pid"]
        elif e["type"] == "stack":
            stacks[e["id"]] = e["frames"]
        elif e["type"] == "event" and e.get("stack") and e.get("result", 0) == 0 and e["kind"] in (
                "alloc", "free", "copy", "memset", "launch", "sync", "map", "unmap"):
            ns[e["stack"]] = ns.get(e["stack"], 0) + e["end_ns"] - e["start_ns"]
            if e["kind"] == "alloc" and e.get("mem") != "host":
                nbytes[e["stack"]] = nbytes.get(e["stack"], 0) + e["bytes"]
    want = {";".join([f"pid {pid}"] + stacks[s][::-1]): v for s, v in ns.items()}
    p = subprocess.run([GPUSPY, "export", "--format", "collapsed", gold, "-o", "-"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    got = {l.rsplit(" ", 1)[0]: int(l.rsplit(" ", 1)[1]) for l in p.stdout.splitlines()}
    check(p.returncode == 0 and got == want and len(want) >= 5, f"collapsed: {got} vs {want}")
    p = subprocess.run([GPUSPY, "export", "--format", "speedscope", gold, "-o", "-"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    d = json.loads(p.stdout)
    names = [f["name"] for f in d["shared"]["frames"]]
    prof = {x["name"]: {";".join(names[i] for i in s): w for s, w in zip(x["samples"], x["weights"])}
            for x in d["profiles"]}
    check(prof["host time in CUDA calls"] == want and d["profiles"][0]["unit"] == "nanoseconds" and
          d["profiles"][0]["endValue"] == sum(want.values()), f"speedscope time: {prof}")
    check(prof["device and pinned bytes allocated"] ==
          {";".join([f"pid {pid}"] + stacks[s][::-1]): v for s, v in nbytes.items()}, f"bytes: {prof}")
