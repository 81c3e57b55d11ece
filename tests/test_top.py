# SPDX-License-Identifier: MIT
"""gpuspy top: the live view of running traced processes, read from their
growing trace files: its numbers against what the program did (--once
--json), and the ncurses screen in tmux (send-keys, capture-pane)."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from test_control import Driven, gpuspy
from test_cupti import CUPTI_ENV

NVML = os.path.join(BIN, "nvml")


def top_json(*args):
    p = gpuspy("top", "--once", "--json", *args)
    check(p.returncode == 0 and not p.stderr, f"top --once --json: {p.returncode} {p.stderr!r}")
    return json.loads(p.stdout)


def wait_for(what, fn, seconds=30, show=None):
    """fn()'s first true answer, polled for `seconds`; show() says what
    was there instead when none came."""
    until = time.monotonic() + seconds
    while True:
        got = fn()
        if got or time.monotonic() > until:
            check(got, f"gave up waiting for {what}" + (":\n" + show() if show and not got else ""))
            return got
        time.sleep(0.1)


@test
def top_counts_what_the_process_did(tmp):
    """Over a window that holds the whole run: the steps (the top-level
    phase begun most often), each phase's time to the nanosecond of the
    trace, copy bytes and their pageable share, device memory held, GPU
    busy as the union of the CUPTI double's kernels and copies (10 B/ns), the NVML double's
    latest sample; found by /proc and by directory alike; paused shows."""
    env = dict(CUPTI_ENV, GPUSPY_CUPTI_FLUSH="1", GPUSPY_NVML_MS="20", FAKENVML="util=95,power_mw=312500",
               LD_LIBRARY_PATH=NVML + ":" + BIN, TMPDIR=tmp)  # TMPDIR: the sampler's device lock, its own
    d = Driven(tmp, env=env)
    d.do("p step", "h 1000", "k 100", "q", "p step", "H 3000", "n cub::DeviceReduce::Sum", "k 200", "m", "q",
         "p step", "A 5000", "q", "p eval", "q")
    path = os.path.join(tmp, traces(tmp)[0])
    # CUPTI's records come a second after the launches stop (all of them:
    # the flusher's tick may fall between two kernels' records).
    v = wait_for("the GPU records and a sample", lambda: [x for x in top_json("--window", "60s", tmp)
                                                          if x["gpu_busy_ns"] == 300400 and x.get("telemetry")])[0]
    _, ev = dump(path)
    spans = {}
    open_at = {}
    for e in ev:
        if e["kind"] == "phase_begin" and not e["name"].startswith("cub::"):
            open_at[e["name"]] = e["start_ns"]
        elif e["kind"] == "phase_end" and e["name"] in open_at:
            spans[e["name"]] = spans.get(e["name"], 0) + e["start_ns"] - open_at.pop(e["name"])
    got = {k: v[k] for k in ("pid", "paused", "step_phase", "steps", "copy_bytes", "pageable_bytes",
                             "reserved_bytes", "dropped", "gpu_busy_ns")}
    want = {"pid": d.p.pid, "paused": False, "step_phase": "step", "steps": 3, "copy_bytes": 4000,
            "pageable_bytes": 1000, "reserved_bytes": (1 << 20) + 5000, "dropped": 0, "gpu_busy_ns": 300000 + 4000 // 10}
    check(got == want, f"top: {got}\n want {want}")
    check(v["phase_ns"]["step"] == spans["step"] and v["phase_ns"]["eval"] == spans["eval"] and
          not any(k.startswith("cub::") for k in v["phase_ns"]), f"phase times {v['phase_ns']} / trace {spans}")
    check((v["telemetry"]["util_gpu"], v["telemetry"]["power_dw"]) == (95, 3125), f"telemetry {v['telemetry']}")
    by_proc = [x for x in top_json("--window", "60s") if x["pid"] == d.p.pid]
    check(len(by_proc) == 1 and by_proc[0]["steps"] == 3, f"found through /proc: {by_proc}")
    check(gpuspy("stop", d.p.pid).returncode == 0, "stop")
    # Paused, nothing more is recorded (NVML neither): every event counted.
    v = top_json("--window", "60s", tmp)[0]
    n = len(dump(path)[1])
    check(v["paused"] is True and v["events"] == n, f"paused {v['paused']}, {v['events']} events, {n} in the trace")
    text = gpuspy("top", "--once", tmp).stdout.splitlines()
    check(re.fullmatch(rf" *{d.p.pid} +paused +[0-9]+% +\S+ \S+/s +[0-9]+% +1\.0 MiB +0  .*prog_window", text[2]) and
          "phases: " in text[3] and "telemetry: GPU 0, util 95%" in text[4], f"top --once:\n" + "\n".join(text))
    check(d.finish() == 0, "prog_window failed")
    check(top_json(tmp) == [], "an exited process still shown")


@test
def top_counts_pytorch_and_jax_steps(tmp):
    """A step of the PyTorch helper's phases is a new step number, however
    many phases it has (optimizer twice a step, as on the H200); XLA's
    module ranges are the jitted function's phase, and its compilation is
    never the step."""
    d = Driven(tmp)
    for s in (1, 2, 3):
        d.do(*[f"{c} {p} {s}" for p in ("data", "forward", "optimizer", "optimizer") for c in "tT"])
    v = top_json("--window", "60s", tmp)[0]
    check((v["step_phase"], v["steps"]) == ("data", 3), f"PyTorch steps {v['step_phase']} {v['steps']}")
    check(d.finish() == 0, "prog_window failed")
    for f in traces(tmp):
        os.unlink(os.path.join(tmp, f))
    d = Driven(tmp)
    d.do("n XlaCompile:#module=jit_step#", "m", "n XlaCompile:#module=jit_step#", "m")
    for _ in range(4):
        d.do("n XlaModule:#hlo_module=jit_step,program_id=7#", "n Thunk:#hlo_op=fusion#", "k 1", "m", "m")
    v = top_json("--window", "60s", tmp)[0]
    check((v["step_phase"], v["steps"]) == ("jit_step", 4) and "Thunk:#hlo_op=fusion#" not in v["phase_ns"] and
          "XLA compile" in v["phase_ns"], f"JAX steps {v['step_phase']} {v['steps']} {v['phase_ns']}")
    check(d.finish() == 0, "prog_window failed")


@test
def top_refuses_bad_arguments(tmp):
    """One line and status 2 for a misused command, 1 for a directory it
    cannot read; no terminal: it says to use --once."""
    for args, want in ((["--json"], "top: --json needs --once"),
                       (["--window", "5"], "top: --window 5 is not a duration from 100ms to 63s (e.g. 5s)"),
                       (["--interval", "10ms"], "top: --interval 10ms is not a duration from 100ms to 63s"),
                       (["--once", "a", "b"], "top: one directory, not 'b' too"),
                       (["--window"], "top: --window needs a value"),
                       (["--bogus"], "top: unknown option --bogus"),
                       ([], "top: the output is not a terminal; use --once")):
        p = gpuspy("top", *args)
        check(p.returncode == 2 and p.stderr.startswith("gpuspy: error: " + want) and p.stderr.count("\n") == 1,
              f"top {args}: {p.returncode} {p.stderr!r}")
    p = gpuspy("top", "--once", os.path.join(tmp, "none"))
    check(p.returncode == 1 and p.stderr == f"gpuspy: error: top: {tmp}/none: No such file or directory\n",
          f"missing directory: {p.returncode} {p.stderr!r}")


@test
def top_draws_in_tmux(tmp):
    """The ncurses view in a real terminal (tmux): a traced process's row
    and phases appear, `gpuspy stop` shows as paused, an exited process
    leaves the screen, q quits with status 0."""
    if not shutil.which("tmux"):
        raise Skip("tmux is not installed (make deps installs it)")
    sock = "gpuspy-test-%d-draws" % os.getpid()  # a server of its own: tests run on threads of one process
    tmux = lambda *a: subprocess.run(["tmux", "-L", sock, *a], capture_output=True, text=True, timeout=TIMEOUT)
    d = Driven(tmp)
    d.do("p step", "h 1000", "q", "p step")  # the second step stays open: its share grows
    rc = os.path.join(tmp, "rc")
    cmd = f"{GPUSPY} top --interval 200ms {tmp}; echo rc=$? > {rc}"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "132", "-y", "30", cmd],
                   env=env, check=True, timeout=TIMEOUT)
    try:
        screen = lambda: tmux("capture-pane", "-p").stdout
        row = rf"^ *{d.p.pid} +[0-9.]+ +n/a +\S+ \S+/s +100% +1\.0 MiB +0  .*prog_window$"
        s = wait_for("the process's row", lambda: re.search(row, screen(), re.M) and screen())
        check(s.startswith("gpuspy top: 1 traced process, the last 5.00 s; q quits\n") and
              re.search(r"^ +phases: .*step [0-9]+%", s, re.M), f"screen:\n{s}")
        check(gpuspy("stop", d.p.pid).returncode == 0, "stop")
        wait_for("paused", lambda: re.search(rf"^ *{d.p.pid} +paused ", screen(), re.M))
        check(d.finish() == 0, "prog_window failed")
        wait_for("the exit", lambda: "no traced process is running in " in screen())
        tmux("send-keys", "q")
        wait_for("gpuspy top to quit", lambda: os.path.exists(rc) and open(rc).read() == "rc=0\n")
    finally:
        tmux("kill-server")


def many_traced(tmp, n=70):
    """n live traced processes on the doubles (prog_window after one launch,
    waiting on stdin), each with a 1 MiB buffer: cheap to hold at once."""
    procs = []
    try:
        for _ in range(n):
            d = Driven(tmp, env={"GPUSPY_BUFFER_MB": "1", "GPUSPY_STACKS": "0"})
            procs.append(d)
            d.do("k 1")
    except BaseException:
        for d in procs:
            d.finish()
        raise
    return procs


@test
def top_shows_every_process(tmp):
    """70 traced processes at once (more than the 64 top once followed):
    --once --json lists each of them, found by directory and through
    /proc alike, and the frame's title counts them all. The live screen,
    20 rows in tmux, over a window that holds each one's launch: the
    title's 2 rows, 8 processes of 2 rows each (the numbers, the phases)
    and a row that says how many it left out (62)."""
    procs = many_traced(tmp)
    try:
        want = {d.p.pid for d in procs}
        got = [x["pid"] for x in top_json(tmp)]
        check(sorted(got) == sorted(want), f"top DIR: {len(got)} of {len(want)} processes")
        got = {x["pid"] for x in top_json()}
        check(want <= got, f"top: {len(want - got)} of {len(want)} processes missing")
        text = gpuspy("top", "--once", tmp).stdout.splitlines()
        check(text[0] == f"gpuspy top: {len(want)} traced processes, the last 5.00 s" and
              sum(1 for l in text if re.match(r" *\d+ ", l)) == len(want), "\n".join(text[:3]))
        if not shutil.which("tmux"):
            raise Skip("tmux is not installed (make deps installs it): the live screen's last line not checked")
        sock = "gpuspy-test-%d-every" % os.getpid()  # a server of its own: tests run on threads of one process
        tmux = lambda *a: subprocess.run(["tmux", "-L", sock, *a], capture_output=True, text=True, timeout=TIMEOUT)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "132", "-y", "20",
                        f"{GPUSPY} top --window 60s {tmp}"], env=env, check=True, timeout=TIMEOUT)
        try:
            last = "  ... and 62 more, not shown: the terminal is too short"
            rows = lambda: tmux("capture-pane", "-p").stdout.rstrip("\n").split("\n")
            s = wait_for("the line of those left out", lambda: last in [l.rstrip() for l in rows()] and rows(),
                         show=lambda: "\n".join(rows()))
            s = [l.rstrip() for l in s]
            check(s[0].startswith("gpuspy top: 70 traced processes") and s[18] == last and not any(s[19:]) and
                  sum(1 for l in s if re.match(r" *\d+ ", l)) == 8, "screen:\n" + "\n".join(s))
        finally:
            tmux("kill-server")
    finally:
        for d in procs:
            d.finish()


# A process that maps a file of its own choosing as its "trace": it prints
# its pid, reads a command line from stdin (`cp SRC DST` first, then the
# path to map), maps the file, says "mapped" and waits for stdin to close.
MAPPER = """
import mmap, os, shutil, sys
print(os.getpid(), flush=True)
a = sys.stdin.readline().split()
if a[0] == "cp":
    shutil.copyfile(a[1], a[2])
    a = a[2:]
f = open(a[0], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print("mapped", flush=True)
sys.stdin.read()
"""


def fake_trace(path, pid, command):
    """A valid trace of a running process `pid` named `command`
    (tests/mktrace.c's, its header's pid, state and command set)."""
    subprocess.run([os.path.join(BIN, "mktrace"), path, "10", "1"], check=True, timeout=TIMEOUT)
    with open(path, "r+b") as f:
        f.seek(64)  # pid (format.h)
        f.write(pid.to_bytes(4, "little"))
        f.seek(140)  # state: running
        f.write((0).to_bytes(4, "little"))
        f.seek(336)  # command
        f.write(command.encode() + b"\0")
    os.chmod(path, 0o644)


class Mapper:
    def __init__(self, prefix=()):
        self.p = subprocess.Popen([*prefix, SYS_PY, "-c", MAPPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.pid = int(self.p.stdout.readline())

    def map(self, *words):
        self.p.stdin.write(" ".join(words) + "\n")
        self.p.stdin.flush()
        check(self.p.stdout.readline() == "mapped\n", "the mapper did not map its file")

    def finish(self):
        self.p.stdin.close()
        self.p.wait(timeout=TIMEOUT)
        self.p.stdout.close()


def top_pids(timeout=20):
    """top --once --json through /proc, as root's would run: {pid: command}."""
    try:
        p = subprocess.run([GPUSPY, "top", "--once", "--json"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail(f"top --once hung (over {timeout} s)")
    check(p.returncode == 0, f"top: {p.returncode} {p.stderr!r}")
    return {x["pid"]: x["command"] for x in json.loads(p.stdout)}


@test
def top_opens_only_the_mapped_trace(tmp):
    """top (no DIR) finds traces by the paths in /proc/PID/maps. A process
    in a mount namespace of its own (unshare -m: a tmpfs over a directory)
    maps its trace there; at the same path in top's namespace lie a
    symlink to another trace, a FIFO, a symlink to /dev/zero: top reads the
    file the process maps (and never hangs), not what the path names here."""
    if os.geteuid() != 0:
        raise Skip("unshare -m needs root (this test is about root's top)")
    if not shutil.which("unshare"):
        raise Skip("unshare (util-linux) is not installed")
    ns = os.path.join(tmp, "ns")
    os.makedirs(ns)
    planted = os.path.join(tmp, "planted.gspy")
    for what in ("symlink", "fifo", "device"):
        m = Mapper(["unshare", "-m", "--propagation", "private", "sh", "-c",
                    f"mount -t tmpfs none {ns} && exec \"$0\" \"$@\""])
        try:
            real = os.path.join(tmp, "real.gspy")
            fake_trace(real, m.pid, "the-mapped-trace")
            fake_trace(planted, m.pid, "planted")
            path = os.path.join(ns, f"{what}.gspy")
            m.map("cp", real, path)  # in its namespace: a copy on its tmpfs
            if what == "symlink":
                os.symlink(planted, path)
            elif what == "fifo":
                os.mkfifo(path)
            else:
                os.symlink("/dev/zero", path)
            got = top_pids().get(m.pid)
            check(got == "the-mapped-trace", f"{what}: top shows {got!r} for the process")
        finally:
            m.finish()


@test
def top_refuses_another_users_file(tmp):
    """A process of one user (nobody) that maps a trace file owned by
    another (root, readable by all, naming the process's pid) is not shown:
    root's top opens another user's file only when that user owns it."""
    if os.geteuid() != 0:
        raise Skip("needs root: a process of another user and root's top")
    if not shutil.which("setpriv"):
        raise Skip("setpriv (util-linux) is not installed")
    os.chmod(tmp, 0o755)
    m = Mapper(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"])
    try:
        path = os.path.join(tmp, "root.gspy")
        fake_trace(path, m.pid, "roots-file")
        m.map(path)
        got = top_pids()
        check(m.pid not in got, f"top shows {got.get(m.pid)!r} for nobody's process")
        os.chown(path, 65534, 65534)  # the process's own: shown
        got = top_pids()
        check(got.get(m.pid) == "roots-file", f"nobody's own file: top shows {got.get(m.pid)!r}")
    finally:
        m.finish()


@test
def top_once_writes_no_control_bytes(tmp):
    """A running process's trace whose command line and phase hold C1 CSI
    (UTF-8 and raw), ESC, a Latin-1 byte and a cut character: `top --once`
    writes none of those bytes, only valid UTF-8, the names escaped. Its
    201st record opens the phase again, so that the time from the trace's
    end to top's reading is the phase's: ended, the phase had 0.2 ms
    against "(no phase)"'s 1 ms and top's start, and a top slower than
    36 ms (under a sanitizer, beside other work) left it under the half
    percent a phase needs to be shown."""
    from test_tracegen import C1_NAMES, no_c1
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        hostile_trace(os.path.join(tmp, "x.gspy"), sleeper.pid, **C1_NAMES, uuid=b"GPU-\x9b\x1b[2J", events=201)
        p = subprocess.run([GPUSPY, "top", "--once", "--window", "60s", tmp], capture_output=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"top --once: {p.returncode} {p.stderr!r}")
        no_c1(p.stdout, "top --once")
        for want in (b"cmd\\u009b[2J+\\x9b[2J+\\x1b[2J+caf\\xe9+visible", b"ph\\u009bA\\x9bB\\x1bC\\xc3"):
            check(want in p.stdout, f"top --once lacks {want!r}:\n{p.stdout.decode(errors='replace')}")
    finally:
        sleeper.kill()
        sleeper.wait()


@test
def top_reads_names_while_the_process_exits(tmp):
    """A traced process's string table lies past its whole buffer while it
    runs (format 3: 256 MiB of chunks in) and moves down to its one chunk
    as it exits. top --once, run over and over across the exit, reads the
    phase names wherever the table is at that moment: each time it shows
    the process with exactly its phases, or, once it has exited, nothing;
    never an error, a wrong name or a stray event."""
    d = Driven(tmp)
    d.do("p step", "h 1000", "q", "p step", "k 3", "q", "p eval")
    path = os.path.join(tmp, traces(tmp)[0])
    h = header(path)
    check(h["strtab_offset"] == 4096 + 4096 * CHUNK and h["strtab_size"] == STRTAB, f"live header {h}")
    v = top_json("--window", "60s", tmp)
    check(len(v) == 1 and set(v[0]["phase_ns"]) == {"(no phase)", "step", "eval"} and v[0]["events"] == 8,
          f"top of the live process: {v}")
    import threading
    done = threading.Event()
    seen = []

    def watch():
        while not done.is_set():
            p = gpuspy("top", "--once", "--json", "--window", "60s", tmp)
            seen.append((p.returncode, p.stderr, p.stdout))
    t = threading.Thread(target=watch)
    t.start()
    try:
        time.sleep(0.3)
        check(d.finish() == 0, "prog_window failed")
        time.sleep(0.3)
    finally:
        done.set()
        t.join()
    bad = []
    for rc, err, out in seen:
        got = json.loads(out) if rc == 0 and not err else None
        if got is None or (got and (len(got) != 1 or set(got[0]["phase_ns"]) != {"(no phase)", "step", "eval"} or
                                    got[0]["events"] != 8)):
            bad.append((rc, err, out[:300]))
    check(seen and not bad and json.loads(seen[-1][2]) == [], f"{len(bad)} of {len(seen)} wrong: {bad[:3]}")
    h = header(path)
    check(h["strtab_offset"] == 4096 + CHUNK and os.path.getsize(path) == trimmed_size(h), f"trimmed header {h}")


@test
def a_trace_cut_while_top_opens_it_is_skipped(tmp):
    """A traced process that exits while top (or serve) opens its trace
    cuts the file under the reader's mapping (its trim). Made certain here
    by tests/hostile/cut_on_map.c, preloaded into gpuspy, which cuts each
    .gspy to its header right after the reader maps it: the load past the
    header faulted and top ended with "the file was cut while it was
    being read" (serve, a server, died the same way). Now top skips that
    trace this round: exit 0, no process, nothing on stderr. report, which
    reads one file through, still stops with that one line."""
    if SANITIZED:
        raise Skip("the sanitizer runtime must come first; this preloads a shim into gpuspy alone")
    sleeper = subprocess.Popen(["sleep", "300"])
    path = os.path.join(tmp, "t.gspy")
    shim = {"LD_PRELOAD": os.path.join(BIN, "libhostile_cut_on_map.so"), "CUT_ON_MAP": "1"}
    try:
        for args, want in ((["top", "--once", "--json", tmp], (0, "[]\n", "")),
                           (["report", path], (1, "", f"gpuspy: error: {path}: the file was cut while it was being "
                                                   "read; read it again\n"))):
            p = subprocess.run([os.path.join(BIN, "mktrace"), path, "20", "1", "65536", "65536", str(sleeper.pid),
                                "cmd", "k", "fwd", "GPU-0"], capture_output=True, timeout=TIMEOUT)
            check(p.returncode == 0 and os.path.getsize(path) > 4096, f"mktrace {p.returncode}")
            p = subprocess.run([GPUSPY, *args], env=dict(os.environ, **shim), capture_output=True, text=True,
                               timeout=TIMEOUT)
            check((p.returncode, p.stdout, p.stderr) == want and os.path.getsize(path) == 4096,
                  f"{args[0]}: {p.returncode} {p.stdout[-200:]!r} {p.stderr!r}")
            os.unlink(path)
    finally:
        sleeper.kill()
        sleeper.wait()


def gone_pid():
    """The pid of a process that has exited (and been reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def mktrace(path, pid, phase=b"fwd", events=200, reserve=0):
    """tests/mktrace's trace of process pid, running: `events` events on
    the monotonic clock, from 1 ms before now, 1 us apart; every tenth
    begins the phase and the ninth after ends it (9 us; the first, an
    NVML sample, begins none: events // 10 - 1 phases). reserve: chunks
    past those written, the first claimed (MKTRACE_RESERVE)."""
    p = subprocess.run([os.path.join(BIN, "mktrace"), path, str(events), "1", "65536", "65536", str(pid), b"cmd",
                        b"kern", phase, b"GPU-0"], env=dict(os.environ, MKTRACE_RESERVE=str(reserve)),
                       capture_output=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"mktrace failed: {p.stderr!r}")
    return path


def forge_clock(path):
    """The trace made TSC-clocked (format.h: clock 1) with its start pair
    {raw0, raw0} (raw0: its first event's time, so that 1 ns a tick gives
    the times it had) and no start rate (tsc_hz 0), and a later pair one
    tick on and 5e14 ns later: a tick of 5e14 ns, if believed."""
    raw0 = dump(path)[1][0]["start_ns"]
    with open(path, "r+b") as f:
        for off, v in ((20, (1).to_bytes(4, "little")), (88, raw0.to_bytes(8, "little") * 2),
                       (104, bytes(8)), (112, bytes(8)),
                       (120, (raw0 + 1).to_bytes(8, "little") + (raw0 + 5 * 10**14).to_bytes(8, "little"))):
            f.seek(off)
            f.write(v)


def put_phases(path, records):
    """Records written into the chunk a trace of mktrace(reserve=1) claimed
    and left empty: each (kind, start_ns, name) a phase_begin or phase_end
    of that name, interned at the string table's end; format.h's packing,
    each record giving its start and name."""
    h = header(path)
    chunk = 4096 + (h["chunk_count"] - 1) * CHUNK
    used, ids, body, prev = h["strtab_used"], {}, b"", 0
    with open(path, "r+b") as f:
        for kind, t, name in records:
            if name not in ids:
                entry = len(name).to_bytes(4, "little") + name + b"\0"
                entry += b"\0" * (-len(entry) % 4)
                f.seek(h["strtab_offset"] + used)
                f.write(entry)
                ids[name] = used + 1
                used += len(entry)
            d = (t - prev) % (1 << 64)
            d = d - (1 << 64) if d >> 63 else d
            body += (bytes([{"begin": 9, "end": 10}[kind]]) + varint(1 << 4 | 1 << 13) +
                     varint((d << 1) ^ (d >> 63) & ((1 << 64) - 1)) + varint(ids[name]))
            prev = t
        f.seek(HEADER_FIELDS["strtab_used"][0])
        f.write(used.to_bytes(8, "little"))
        f.seek(chunk + 64)
        f.write(body)
        f.seek(chunk)  # tid, seq, committed, dropped, claim
        f.write((100).to_bytes(4, "little") + (1).to_bytes(4, "little") +
                (len(records) << 32 | len(body)).to_bytes(8, "little") + bytes(8) +
                (h["chunk_count"] - 1).to_bytes(8, "little"))


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7f | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def top_within(tmp, seconds=20):
    """top --once --json --window 60s over tmp, which must answer within
    `seconds` (else it hung): its list."""
    try:
        p = subprocess.run([GPUSPY, "top", "--once", "--json", "--window", "60s", tmp], capture_output=True,
                           text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        raise Fail(f"top --once hung (over {seconds} s)")
    check(p.returncode == 0 and not p.stderr, f"top --once: {p.returncode} {p.stderr!r}")
    return json.loads(p.stdout)


def figures(v):
    """What top counted of a process, but what grows with the time it is
    read at (the time of the phase open now)."""
    got = {k: v[k] for k in ("events", "step_phase", "steps", "copy_bytes", "gpu_busy_ns")}
    got["phase_ns"] = {k: ns for k, ns in v["phase_ns"].items() if k != "(no phase)"}
    return got


@test
def top_is_not_held_by_a_forged_clock(tmp):
    """A running process's trace (tests/mktrace: 200 events, 19 phases
    "fwd" of 9 us) made TSC-clocked with a later calibration pair that
    makes a tick 5e14 ns: top --once never answered (it spread each phase
    over every second of its 4.5e9 s) and report said 18446744072.71 s
    traced. That pair is no clock's (its rate is not within 10% of the
    start's, nor from 1 MHz to 100 GHz) and is ignored by both: top gives
    the figures of the same trace on the monotonic clock (steps 19, fwd
    171 us), report the same 199 us traced and fwd's 171 us. The same file
    of a process that is not running: listed by none, within 20 s. A trace
    on the monotonic clock with a phase of 9e18 ns (a forged record):
    within 20 s, the process listed; its one-second bins hold the phase's
    last seconds, 285 years on, so none of the last 60 s (0 events)."""
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        path = mktrace(os.path.join(tmp, "a.gspy"), sleeper.pid)
        want = figures(top_within(tmp)[0])
        check(want["steps"] == 19 and want["phase_ns"]["fwd"] == 171000, f"the monotonic trace: {want}")
        forge_clock(path)
        got = [figures(x) for x in top_within(tmp)]
        check(got == [want], f"forged clock: top gives {got}\n want {[want]}")
        r = report_json(path)
        fwd = [p["wall_ns"] for p in r["phases"] if p["name"] == "fwd"]
        check((r["duration_ns"], fwd) == (199000, [171000]), f"report: {r['duration_ns']} ns traced, fwd {fwd}")
        os.unlink(path)
        mktrace(path, gone_pid())
        forge_clock(path)
        check(top_within(tmp) == [], "a process that is not running is listed")
        os.unlink(path)
        mktrace(path, sleeper.pid, reserve=1)
        t0 = time.monotonic_ns()  # after its events
        put_phases(path, [("begin", t0, b"fwd"), ("end", t0 + 9 * 10**18, b"fwd")])
        got = [figures(x) for x in top_within(tmp)]
        want = {"events": 0, "step_phase": "fwd", "steps": 0, "copy_bytes": 0, "gpu_busy_ns": 0, "phase_ns": {}}
        check(got == [want], f"a phase of 9e18 ns: top gives {got}")
    finally:
        sleeper.kill()
        sleeper.wait()


def forge_header(path, keep, size, **fields):
    """The header's fields set (HEADER_FIELDS), the file cut to its first
    `keep` bytes, then made `size` bytes long (sparse: holes past them)."""
    with open(path, "r+b") as f:
        for field, v in fields.items():
            off, n = HEADER_FIELDS[field]
            f.seek(off)
            f.write(v.to_bytes(n, "little"))
    os.truncate(path, keep)
    os.truncate(path, size)


@test
def top_memory_is_bounded_by_the_file(tmp):
    """Running processes' traces whose headers claim what their files do
    not hold, read by top --once --json under a 1 GiB limit of its data
    (RLIMIT_DATA: the heap and private mappings, not the traces'): each
    process listed within 20 s, with its figures. A header of 4 KiB that
    claims 2^26 chunks of 64 KiB: top (and serve) sized their chunk
    cursors by that count, 6.8 GB for 8-19 s each scan; now 0 events. The
    same made as long as it says (4 TiB, sparse: holes but the header):
    the same, the holes not read a chunk at a time, by report either
    (report --json: 0 events, within 20 s). A string table of 4 TiB, all
    used, sparse, after mktrace's 200 events: top ended, out of memory;
    now its events and names are read (steps 19, fwd 171 us) from the
    first 64 MiB of the table, all it copies; report took it all into
    memory (killed for it): now it reads those 64 MiB too (200 events;
    of a 2 GiB table, with no limit, its peak is under 256 MiB)."""
    if SANITIZED:
        raise Skip("a sanitizer's shadow memory does not fit a memory limit")
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, 1 << 30))
    sleeper = subprocess.Popen(["sleep", "300"])
    path, tib = os.path.join(tmp, "a.gspy"), 1 << 42
    empty = {"events": 0, "step_phase": None, "steps": 0, "phase_ns": {}, "copy_bytes": 0, "gpu_busy_ns": None}
    full = {"events": 200, "step_phase": "fwd", "steps": 19, "phase_ns": {"fwd": 171000}, "copy_bytes": 81920,
            "gpu_busy_ns": 8000}
    claims = dict(file_size=4096 + (1 << 26) * CHUNK + CHUNK, chunk_count=1 << 26, chunks_claimed=1 << 26,
                  strtab_offset=4096 + (1 << 26) * CHUNK, strtab_size=CHUNK, strtab_used=0)
    try:
        for what, keep, size, fields, want in (
                ("a header that claims 2^26 chunks", 4096, 4096, claims, empty),
                ("that header, 4 TiB sparse", 4096, claims["file_size"], claims, empty),
                ("a table of 4 TiB", 4096 + 2 * CHUNK, 4096 + 2 * CHUNK + tib,
                 dict(file_size=4096 + 2 * CHUNK + tib, strtab_size=tib, strtab_used=tib), full)):
            mktrace(path, sleeper.pid)
            forge_header(path, keep, size, **fields)
            for cmd in (["top", "--once", "--json", "--window", "60s", tmp], ["report", "--json", path]):
                try:
                    p = subprocess.run([GPUSPY, *cmd], capture_output=True, text=True, timeout=20, preexec_fn=limit)
                except subprocess.TimeoutExpired:
                    raise Fail(f"{what}: {cmd[0]} took over 20 s")
                check(p.returncode == 0 and not p.stderr, f"{what}: {cmd[0]}: {p.returncode} {p.stderr!r}")
                if cmd[0] == "top":
                    got = [figures(x) for x in json.loads(p.stdout)]
                    check(got == [want], f"{what}: top gives {got}\n want {[want]}")
                else:
                    got = json.loads(p.stdout)["events"]
                    check(got == want["events"], f"{what}: report gives {got} events")
            os.unlink(path)
        # Without a limit, report copied the whole table it was told of:
        # 2 GiB of a sparse file's zeros took 2 GiB of memory.
        mktrace(path, sleeper.pid)
        forge_header(path, 4096 + 2 * CHUNK, 4096 + 2 * CHUNK + (2 << 30), file_size=4096 + 2 * CHUNK + (2 << 30),
                     strtab_size=2 << 30, strtab_used=2 << 30)
        peak = subprocess.run([sys.executable, "-c", "import resource, subprocess, sys; "
                               "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, timeout=60); "
                               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
                               GPUSPY, "report", "--json", path], capture_output=True, text=True, timeout=90)
        check(peak.returncode == 0 and int(peak.stdout) < 256 << 10, f"report of a 2 GiB table: {peak.stdout} KiB "
              f"at its peak {peak.stderr[-300:]}")
    finally:
        sleeper.kill()
        sleeper.wait()


def phase_key(name):
    """The name top and serve give a phase (tools/read/watch.c): whole up
    to 255 bytes; else cut before a character at 238 bytes at most, then
    "~" and the FNV-1a hash of the whole name in 16 hex digits."""
    if len(name) < 256:
        return name.decode()
    h = 14695981039346656037
    for c in name:
        h = ((h ^ c) * 1099511628211) % (1 << 64)
    cut = 238
    while cut and name[cut] & 0xc0 == 0x80:
        cut -= 1
    return name[:cut].decode() + "~%016x" % h


# A phase name of 70 bytes (more than the 63 top kept), and two of 300
# alike in their first 290 bytes, and one of 255 (the most kept whole).
LONG = b"model.encoder.layers.11.self_attention.query_key_value.forward_pass_x"
ALIKE = (b"m" * 290 + b".forward.A", b"m" * 290 + b".forward.B")
WHOLE = b"w" * 255


def long_phases(path, pid):
    """mktrace's trace of pid, with 2 phases of ALIKE[0] (1 us, 2 us),
    one of ALIKE[1] (4 us) and one of WHOLE (5 us) after its events."""
    mktrace(path, pid, reserve=1)
    t0 = time.monotonic_ns()  # after its events
    a, b = ALIKE
    put_phases(path, [("begin", t0, a), ("end", t0 + 1000, a), ("begin", t0 + 2000, b), ("end", t0 + 6000, b),
                      ("begin", t0 + 7000, a), ("end", t0 + 9000, a), ("begin", t0 + 10000, WHOLE),
                      ("end", t0 + 15000, WHOLE)])
    return path


@test
def top_keeps_long_phase_names_apart(tmp):
    """Phases named by more than the 63 bytes top kept of a name: a trace
    of 199 phases of a 70-byte name (tests/mktrace, 9 us each) gave 0
    steps, a phase that never ended and its time to "(other phases)",
    since the name kept was compared with the whole one. Now 199 steps of
    that phase, 1791 us. Names of 300 bytes alike in their first 290
    are two phases, each under its first 238 bytes, "~" and a hash of the
    whole name (3 us and 4 us); one of 255 bytes is kept whole (5 us)."""
    sleepers = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
    try:
        mktrace(os.path.join(tmp, "a.gspy"), sleepers[0].pid, phase=LONG, events=2000)
        long_phases(os.path.join(tmp, "b.gspy"), sleepers[1].pid)
        got = {x["pid"]: figures(x) for x in top_within(tmp)}
        want = {sleepers[0].pid: {"events": 2000, "copy_bytes": 819200, "gpu_busy_ns": 80000,
                                  "step_phase": LONG.decode(), "steps": 199, "phase_ns": {LONG.decode(): 1791000}},
                sleepers[1].pid: {"events": 208, "copy_bytes": 81920, "gpu_busy_ns": 8000, "step_phase": "fwd",
                                  "steps": 19, "phase_ns": {"fwd": 171000, phase_key(ALIKE[0]): 3000,
                                                            phase_key(ALIKE[1]): 4000, WHOLE.decode(): 5000}}}
        check(got == want, f"top: {got}\n want {want}")
        check(len({phase_key(ALIKE[0]), phase_key(ALIKE[1])}) == 2 and len(phase_key(ALIKE[0])) == 255,
              "the keys of the names alike")
    finally:
        for x in sleepers:
            x.kill()
            x.wait()


@test
def top_ends_phases_past_the_fourteenth(tmp):
    """Fifteen phases of names of their own, one after another, 1 us
    each, written into a trace of tests/mktrace after its phases "fwd":
    top names 14 (fwd and 13 more), and the two past them are "(other
    phases)", which an end did not find by its name: the first stayed
    open and took all the time after it. Now each ends: "(other phases)"
    2 us, each named one 1 us."""
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        path = mktrace(os.path.join(tmp, "a.gspy"), sleeper.pid, reserve=1)
        t0 = time.monotonic_ns()  # after its events
        records = []
        for i in range(15):
            name = b"phase%d" % i
            records += [("begin", t0 + 2000 * i, name), ("end", t0 + 2000 * i + 1000, name)]
        put_phases(path, records)
        got = top_within(tmp)[0]["phase_ns"]
        want = dict({"fwd": 171000}, **{"phase%d" % i: 1000 for i in range(13)}, **{"(other phases)": 2000})
        check({k: v for k, v in got.items() if k != "(no phase)"} == want, f"top: {got}\n want {want}")
    finally:
        sleeper.kill()
        sleeper.wait()


@test
def zero_bytes_are_no_records(tmp):
    """A running process's trace whose only chunk says it holds 2^32 - 1
    records in all its bytes, where the process wrote 200 and zeros
    follow (a forged count, or a hole): zero bytes decoded as records of
    kind none, 2 bytes each (31,972 events here; 16 million, 3.7 GB in
    top, of a 32 MiB chunk). Kind none is never written, so the records
    end at the first zero: 200 events in top and in report alike."""
    import struct
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        path = mktrace(os.path.join(tmp, "a.gspy"), sleeper.pid)
        with open(path, "r+b") as f:
            h = f.read(4096)
            at, size = struct.unpack_from("<Q", h, HEADER_FIELDS["chunk_offset"][0])[0], \
                struct.unpack_from("<I", h, HEADER_FIELDS["chunk_size"][0])[0]
            f.seek(at + 8)  # struct gspy_chunk's committed: records << 32 | bytes
            f.write(struct.pack("<Q", (0xffffffff << 32) | (size - 64)))
        got = [x["events"] for x in top_json("--window", "60s", tmp)]
        rep = report_json(path)["events"]
        check(got == [200] and rep == 200, f"top {got}, report {rep}")
    finally:
        sleeper.kill()
        sleeper.wait()
