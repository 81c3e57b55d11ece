# SPDX-License-Identifier: MIT
"""The exports: the timeline (Chrome Trace Event Format) and flame graphs."""
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
            while stack and stack[-1] <= b + 1e-3:  # ts + dur in floats: a slice's end may pass the next's start by 1e-5
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
    api = [e for e in ev if e["ph"] == "X" and e.get("cat") not in ("phase", "gpuspy")]
    _, dumped = dump(g)
    calls = [e for e in dumped if not e["kind"].startswith("phase") and e["kind"] != "mark"]
    check(len(api) == len(calls), f"{len(api)} API slices for {len(calls)} calls")
    # gpuspy's own stack walks: a slice after each call that timed one, on its thread.
    own = sorted((e["tid"], e["ts"], e["dur"]) for e in ev if e.get("cat") == "gpuspy")
    want = sorted((e["tid"], e["end_ns"] / 1e3, e["own_ns"] / 1e3) for e in dumped if "own_ns" in e)
    check(want and len(own) == len(want) and all(a[0] == b[0] and abs(a[1] - b[1]) < 1e-3 and abs(a[2] - b[2]) < 1e-3
                                                 for a, b in zip(own, want)), f"own slices {own[:3]}, walks {want[:3]}")
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
    check(prof["host time in CUDA calls with a stack"] == want and d["profiles"][0]["unit"] == "nanoseconds" and
          d["profiles"][0]["endValue"] == sum(want.values()), f"speedscope time: {prof}")
    check(prof["device and pinned bytes allocated"] ==
          {";".join([f"pid {pid}"] + stacks[s][::-1]): v for s, v in nbytes.items()}, f"bytes: {prof}")


def stack_trace(path, stacks, calls):
    """A JSON Lines trace of pid 7 with these stacks ({id: [frame bytes,
    innermost first]}, raw: JSON's strings carry any byte but quotes,
    backslashes and C0 as they are) and calls ((kind, api, host ns, stack
    id or None), one after another)."""
    def s(b):
        b = b.replace(b"\\", b"\\\\").replace(b'"', b'\\"')
        for c in range(0x20):
            b = b.replace(bytes([c]), b"\\u%04x" % c)
        return b'"' + b + b'"'
    lines = [b'{"type":"stack","id":%d,"frames":[%s]}' % (k, b",".join(s(f) for f in v)) for k, v in stacks.items()]
    t = 2000
    for kind, api, ns, st in calls:
        lines.append(b'{"type":"event","kind":"%s","api":"%s","tid":7,"start_ns":%d,"end_ns":%d,"result":0,'
                     b'"device":0%s}' % (kind.encode(), api.encode(), t, t + ns,
                                         b',"stack":%d' % st if st else b""))
        t += ns + 100
    header = (b'{"type":"process","format_version":2,"pid":7,"ppid":1,"host":"h","rank":-1,"local_rank":-1,'
              b'"command":"flame","events":%d,"dropped":0,"clean_exit":true,"state":"exited","truncated":false,'
              b'"threads":1,"start_realtime_ns":1,"start_ns":1000,"device_mem":[1073741824],"clock":"monotonic"}'
              % len(calls))
    with open(path, "wb") as f:
        f.write(b"\n".join([header] + lines) + b"\n")
    return path


NO_STACKS = ("no CUDA call in {} carries a call stack (by default only allocations, frees, pageable copies and "
             "waits of 10 us or more do); record {} with GPUSPY_STACKS=all GPUSPY_STACK_LAUNCHES=1 "
             "GPUSPY_STACK_MIN=0 for a stack on every call")


@test
def flame_graph_of_a_trace_without_stacks_is_an_error(tmp):
    """A trace in which no call carries a stack (launches and short waits
    keep none by default) makes no empty flame graph that looks like a
    result: one error line that says why and what to set, exit 1, and no
    file, for one trace or several."""
    gold = os.path.join(ROOT, "tests", "golden", "gpu.jsonl")
    for fmt in ("collapsed", "speedscope"):
        out = os.path.join(tmp, f"out.{fmt}")
        p = subprocess.run([GPUSPY, "export", "--format", fmt, gold, "-o", out], capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == 1 and p.stderr == f"gpuspy: error: {gold}: {NO_STACKS.format('it', 'it')}\n",
              f"{fmt}: exit {p.returncode}: {p.stderr!r}")
        check(not os.path.exists(out) and not [f for f in os.listdir(tmp) if f.startswith(".out")],
              f"{fmt}: left {os.listdir(tmp)}")
        p = subprocess.run([GPUSPY, "export", "--format", fmt, gold, gold, "-o", "-"], capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and p.stdout == "" and
              p.stderr == f"gpuspy: error: export: {NO_STACKS.format('the 2 traces', 'them')}\n",
              f"{fmt}, two traces: exit {p.returncode}: {p.stdout[:200]!r} {p.stderr!r}")


@test
def flame_graph_says_how_many_calls_it_holds(tmp):
    """When some calls carry no stack, the export says on stderr how many
    of the calls and how much of their host time the graph holds, and the
    speedscope profile is named for what it counts; when all do, it says
    nothing more."""
    t = stack_trace(os.path.join(tmp, "some.jsonl"), {5: [b"inner", b"main"]},
                    [("alloc", "cudaMalloc", 300, 5), ("launch", "cuLaunchKernel", 200, None),
                     ("sync", "cudaDeviceSynchronize", 100, 5), ("launch", "cuLaunchKernel", 250, None),
                     ("sync", "cudaDeviceSynchronize", 150, None)])
    line = ("gpuspy: calls with stacks: 2 of 5 (40.0% of their host time); only they are in the flame graph: "
            "GPUSPY_STACKS=all GPUSPY_STACK_LAUNCHES=1 GPUSPY_STACK_MIN=0 give every call one\n")
    p = subprocess.run([GPUSPY, "export", "--format", "collapsed", t, "-o", "-"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout == "pid 7;main;inner 400\n" and p.stderr == line,
          f"collapsed: {p.returncode} {p.stdout!r} {p.stderr!r}")
    out = os.path.join(tmp, "s.json")
    p = subprocess.run([GPUSPY, "export", "--format", "speedscope", t, "-o", out], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0 and p.stderr == line + f"gpuspy: wrote {out} ({os.path.getsize(out)} bytes): open it "
          "in speedscope.app\n", p.stderr)
    d = json.load(open(out))
    check(d["profiles"][0]["name"] == "host time in CUDA calls with a stack" and
          d["profiles"][0]["endValue"] == 400, f"{d['profiles'][0]}")
    gold = os.path.join(ROOT, "tests", "golden", "stacks.jsonl")
    p = subprocess.run([GPUSPY, "export", "--format", "collapsed", gold, "-o", "-"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0 and p.stderr == "", f"every call with a stack: {p.stderr!r}")


@test
def collapsed_stacks_survive_hostile_frame_names(tmp):
    """Frame names with C1 CSI as a raw byte (0x9b) and as UTF-8, ESC, DEL,
    a Latin-1 byte, ';' (the collapsed format's separator) and a 600-byte
    name of three-byte characters: the collapsed lines are valid UTF-8
    with no control byte, one frame a name, each ending in ' <count>', the
    long name cut between characters; speedscope names the frames alike."""
    euro = "\u20ac".encode()
    frames = [b"raw\x9b[2J", b"esc\x1b[31mred", b"c1\xc2\x9bX\x7f", b"latin\xe9;semi", b"ab" + euro * 200,
              b"main (m.c:1)"]
    t = stack_trace(os.path.join(tmp, "h.jsonl"), {9: frames}, [("alloc", "cudaMalloc", 1234, 9)])
    p = subprocess.run([GPUSPY, "export", "--format", "collapsed", t, "-o", "-"], capture_output=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0 and p.stderr == b"", f"exit {p.returncode}: {p.stderr!r}")
    try:
        text = p.stdout.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise Fail(f"collapsed output is not UTF-8: {e}: {p.stdout!r}")
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0]
    check(not bad, f"control characters {bad!r} in {text!r}")
    lines = text.splitlines()
    check(len(lines) == 1 and re.fullmatch(r"pid 7;.* 1234", lines[0]), f"lines {lines!r}")
    got = lines[0].rsplit(" ", 1)[0].split(";")
    want = ["pid 7", "main (m.c:1)", "ab" + "\u20ac" * 169, "latin\ufffd,semi", "c1?X?", "esc?[31mred",
            "raw\ufffd[2J"]
    check(got == want, f"frames {got!r}, want {want!r}")
    p = subprocess.run([GPUSPY, "export", "--format", "speedscope", t, "-o", "-"], capture_output=True,
                       timeout=TIMEOUT)
    d = json.loads(p.stdout.decode("utf-8", errors="strict"))
    names = [f["name"] for f in d["shared"]["frames"]]
    check(p.returncode == 0 and [names[i] for i in d["profiles"][0]["samples"][0]] == want, f"speedscope {names!r}")
