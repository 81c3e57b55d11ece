# SPDX-License-Identifier: MIT
"""Recording on demand: GPUSPY_START=paused, gpuspy start/stop/record PID
through the trace file's header, the windows' exact bounds, the phases open
before a window, and the report that leaves the paused time out."""
import os
import re
import signal
import subprocess
import time

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from test_cupti import CUPTI_ENV


class Driven:
    """prog_window, fed one line at a time: each answers "ok" once done."""

    def __init__(self, tmp, env=None, preload=True):
        e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_QUIET="1")
        e.pop("LD_PRELOAD", None)
        if preload:
            e["LD_PRELOAD"] = PRELOAD_PREFIX + LIB
        e.update(env or {})
        self.p = subprocess.Popen([os.path.join(BIN, "prog_window")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
        self.out = []

    def do(self, *lines):
        for line in lines:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            got = self.p.stdout.readline()
            self.out.append(got)
            check(got == "ok\n", f"prog_window answered {got!r} to {line!r}")

    def finish(self):
        self.p.stdin.write("x\n")
        self.p.stdin.close()
        rc = self.p.wait(timeout=TIMEOUT)
        self.p.stdout.close()
        self.p.stderr.close()
        return rc


def gpuspy(*args):
    return subprocess.run([GPUSPY, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT)


def summary(ev):
    """(kind, name or bytes, window) for each event but frees."""
    return [(e["kind"], e.get("name", e.get("bytes")), e.get("window", False)) for e in ev if e["kind"] != "free"]


@test
def windows_have_exact_bounds_and_their_phases(tmp):
    """Started paused, switched on and off between known calls: exactly the
    calls made while recording are in the trace, the phases open before
    each window are written after its "(resumed)" mark (window: true), the
    program prints and exits as untraced, and the report cuts the pause:
    its durations are the recorded time, to the nanosecond."""
    script = [["a 1", "p train", "n step", "a 2"], "start", ["a 3", "a 4", "m"], "stop",
              ["a 5", "n eval", "q"], "start", ["a 6", "m"]]
    plain = Driven(tmp, preload=False)
    for part in script:
        if isinstance(part, list):
            plain.do(*part)
    check(plain.finish() == 0, "prog_window untraced failed")
    d = Driven(tmp, env={"GPUSPY_START": "paused"})
    path = None
    for part in script:
        if isinstance(part, list):
            d.do(*part)
            continue
        p = gpuspy(part, d.p.pid)
        path = os.path.join(tmp, traces(tmp)[0])
        want = (f"gpuspy: process {d.p.pid} is recording into {path}\n" if part == "start" else
                f"gpuspy: process {d.p.pid} stopped recording; see gpuspy report {path}\n")
        check(p.returncode == 0 and p.stdout == want and not p.stderr, f"gpuspy {part}: {p.returncode} {p.stdout!r} {p.stderr!r}")
    check(d.finish() == 0 and d.out == plain.out, f"output with gpuspy {d.out} / {plain.out}")
    proc, ev = only_trace(tmp)
    check((proc["start"], proc["windows"], proc["recording"]) == ("paused", 2, True), f"process line {proc}")
    got = summary(ev)
    want = [("mark", "(resumed)", False), ("phase_begin", "train", True), ("phase_begin", "step", True),
            ("alloc", 3, False), ("alloc", 4, False), ("phase_end", "step", False), ("mark", "(paused)", False),
            ("mark", "(resumed)", False), ("phase_end", "train", True), ("phase_begin", "eval", True),
            ("alloc", 6, False), ("phase_end", "eval", False)]
    check(got == want, f"events {got}")
    check([e["api"] for e in ev if e["kind"] == "mark"] == ["gpuspy_resume", "gpuspy_pause", "gpuspy_resume"],
          "marks' entry points")
    t = {}
    for e in ev:
        t.setdefault((e["kind"], e.get("name")), []).append(e)
    p1 = t[("mark", "(paused)")][0]["start_ns"]
    r2 = t[("mark", "(resumed)")][1]["start_ns"]
    cut = r2 - p1
    o = report_json(path)
    first, last = ev[0]["start_ns"], max(e["end_ns"] for e in ev)
    check((o["windows"], o["paused_ns"], o["duration_ns"]) == (2, cut, last - first - cut),
          f"report: windows {o['windows']}, paused {o['paused_ns']} (want {cut}), "
          f"duration {o['duration_ns']} (want {last - first - cut})")
    ph = {x["name"]: x for x in o["phases"]}
    train = t[("phase_end", "train")][0]["start_ns"] - cut - t[("phase_begin", "train")][0]["start_ns"]
    check({k: ph[k]["count"] for k in ("train", "step", "eval")} == {"train": 1, "step": 1, "eval": 1} and
          ph["train"]["wall_ns"] == train, f"phases {[(k, v['count'], v['wall_ns']) for k, v in ph.items()]}, train {train}")
    text = report_text(path)
    check(re.search(r"recorded in 2 windows, started paused \(GPUSPY_START=paused\); the [0-9.]+ m?s between "
                    r"them is left out of every figure", text), f"report: {text[:600]}")


@test
def record_for_ends_the_window_in_the_process(tmp):
    """gpuspy record PID --for 1s: the process ends the window at its
    deadline itself (it does when the command is killed); Ctrl-C ends a
    window without --for. Calls before, during and after, exactly."""
    d = Driven(tmp, env={"GPUSPY_START": "paused"})
    d.do("a 1")
    path = os.path.join(tmp, traces(tmp)[0])
    rec = subprocess.Popen([GPUSPY, "record", str(d.p.pid), "--for", "1s"], stdout=subprocess.PIPE, text=True)
    line = rec.stdout.readline()
    check(line == f"gpuspy: recording process {d.p.pid} into {path} for 1.00 s\n", f"record said {line!r}")
    d.do("a 2")
    rest = rec.stdout.read()
    check(rec.wait(timeout=TIMEOUT) == 0 and
          re.fullmatch(rf"gpuspy: process {d.p.pid} recorded for 1\.[0-9]+ s; see gpuspy report {re.escape(path)}\n",
                       rest), f"record ended {rec.returncode} {rest!r}")
    d.do("a 3")
    # Killed at once: the window still ends, at the process's own deadline.
    # (2 s: "a 4" lands inside it on a loaded machine too)
    rec = subprocess.Popen([GPUSPY, "record", str(d.p.pid), "--for", "2s"], stdout=subprocess.PIPE, text=True)
    rec.stdout.readline()
    d.do("a 4")
    rec.kill()
    rec.wait()
    rec.stdout.close()
    until = time.monotonic() + 10
    while dump(path)[0]["recording"] and time.monotonic() < until:
        time.sleep(0.05)
    d.do("a 5")
    rec = subprocess.Popen([GPUSPY, "record", str(d.p.pid)], stdout=subprocess.PIPE, text=True)
    line = rec.stdout.readline()
    check(line == f"gpuspy: recording process {d.p.pid} into {path} until Ctrl-C\n", f"record said {line!r}")
    d.do("a 6")
    rec.send_signal(signal.SIGINT)
    rest = rec.stdout.read()
    check(rec.wait(timeout=TIMEOUT) == 0 and "recorded for" in rest, f"record after Ctrl-C {rec.returncode} {rest!r}")
    d.do("a 7")
    check(d.finish() == 0, "prog_window failed")
    proc, ev = only_trace(tmp)
    got = summary(ev)
    want = [("mark", "(resumed)", False), ("alloc", 2, False), ("mark", "(paused)", False)] + \
           [("mark", "(resumed)", False), ("alloc", 4, False), ("mark", "(paused)", False)] + \
           [("mark", "(resumed)", False), ("alloc", 6, False), ("mark", "(paused)", False)]
    check(got == want, f"events {got}")
    marks = [e["start_ns"] for e in ev if e["kind"] == "mark"]
    check(marks[1] - marks[0] >= 1000000000 and marks[3] - marks[2] >= 2000000000,
          f"windows shorter than asked: {marks}")
    check((proc["windows"], proc["recording"]) == (3, False), f"process line {proc}")


@test
def started_paused_costs_nothing_until_started(tmp):
    """GPUSPY_START=paused: the program runs as untraced, no event is
    recorded and CUPTI is not even loaded (no GPU timing) until
    gpuspy start; the report says it was never started."""
    env = dict(CUPTI_ENV, GPUSPY_START="paused")
    a = run("prog_train", ["3", "10"], tmp=tmp, env=env, preload=False)
    b = run("prog_train", ["3", "10"], tmp=tmp, env=env)
    check(a.stdout == b.stdout and a.returncode == b.returncode, "output with gpuspy paused")
    check("fakecupti:" not in b.stderr, f"CUPTI was loaded while paused: {b.stderr!r}")
    proc, ev = only_trace(tmp)
    check((ev, proc["start"], proc["windows"], proc["recording"], proc["gpu_timing"]) ==
          ([], "paused", 0, False, "none"), f"paused: {len(ev)} events, {proc}")
    text = report_text(os.path.join(tmp, traces(tmp)[0]))
    check("nothing recorded: it started paused (GPUSPY_START=paused) and was never started (gpuspy start PID)"
          in text, f"report {text[:500]}")
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    # Started: CUPTI begins with the first window; `gpuspy stop` hands the
    # window's GPU records over before it returns (the flusher would wait
    # GPUSPY_CUPTI_FLUSH, an hour here).
    d = Driven(tmp, env=dict(env, GPUSPY_CUPTI_FLUSH="3600"))
    d.do("a 1")
    check(gpuspy("start", d.p.pid).returncode == 0, "start")
    d.do("a 2", "k 7")
    check(gpuspy("stop", d.p.pid).returncode == 0, "stop")
    _, ev = only_trace(tmp)
    gpu = [(e["kind"], e["end_ns"] - e["start_ns"]) for e in ev if e["kind"].startswith("gpu_")]
    check(gpu == [("gpu_kernel", 7000)], f"GPU records when stop returned: {gpu}")
    check(d.finish() == 0, "prog_window failed")
    proc, ev = only_trace(tmp)
    got = summary(ev)
    check(proc["gpu_timing"] == "cupti" and got[:3] == [("mark", "(resumed)", False), ("alloc", 2, False),
                                                         ("launch", "window_kernel", False)] and
          sorted(got[3:]) == [("gpu_kernel", "window_kernel", False), ("mark", "(paused)", False)],
          f"after start: {proc['gpu_timing']} {got}")
    path = os.path.join(tmp, traces(tmp)[0])
    o = report_json(path)
    check((o["windows"], o["paused_ns"]) == (1, 0) and
          "recorded in 1 window, started paused (GPUSPY_START=paused)\n" in report_text(path),
          f"report of one window: {o['windows']} {o['paused_ns']}")


@test
def control_refuses_what_it_cannot_reach(tmp):
    """Bad arguments: one line, status 2; a process that does not exist,
    is not traced or does not answer (stopped): one line, status 1."""
    for args, want in ((["start", "abc"], "start: 'abc' is not a process id"),
                       (["start"], "start: no process id given, see gpuspy --help"),
                       (["stop", "1", "2"], "stop: one process id, not '2' too"),
                       (["stop", "--for", "1s", "1"], "stop: unknown option --for"),
                       (["record", "1", "--for", "30"], "record: --for 30 is not a duration (e.g. 30s, 500ms)"),
                       # Past 2^64: it was taken as the largest number, quietly.
                       (["record", "1", "--for", "99999999999999999999999ns"],
                        "record: --for 99999999999999999999999ns is not a duration (e.g. 30s, 500ms)"),
                       (["record", "1", "--for"], "record: --for needs a value")):
        p = gpuspy(*args)
        check(p.returncode == 2 and p.stderr.startswith("gpuspy: error: " + want) and p.stderr.count("\n") == 1 and
              not p.stdout, f"gpuspy {args}: {p.returncode} {p.stderr!r}")
    for pid, want in ((2147483647, "no process 2147483647\n"),
                      (os.getpid(), f"process {os.getpid()} is not traced by gpuspy (no trace file mapped")):
        p = gpuspy("start", pid)
        check(p.returncode == 1 and want in p.stderr and p.stderr.count("\n") == 1, f"start {pid}: {p.stderr!r}")
    d = Driven(tmp, env={"GPUSPY_START": "paused"})
    d.do("a 1")
    os.kill(d.p.pid, signal.SIGSTOP)
    p = gpuspy("start", d.p.pid)
    os.kill(d.p.pid, signal.SIGCONT)
    check(p.returncode == 1 and p.stderr == f"gpuspy: error: start: process {d.p.pid} did not answer within 3 s "
          "(stopped, or stuck?)\n", f"stopped process: {p.returncode} {p.stderr!r}")
    # The request stands: once continued, the process takes it.
    path = os.path.join(tmp, traces(tmp)[0])
    until = time.monotonic() + 10
    while not dump(path)[0]["recording"] and time.monotonic() < until:
        time.sleep(0.05)
    d.do("a 2")
    check(d.finish() == 0, "prog_window failed")
    _, ev = only_trace(tmp)
    check(summary(ev) == [("mark", "(resumed)", False), ("alloc", 2, False)], f"after SIGCONT {summary(ev)}")


@test
def control_escapes_the_trace_path(tmp):
    """A trace directory named with ESC, an OSC title sequence (ESC ] ...
    BEL), C1 CSI as UTF-8 and a raw 0x9b byte: start, stop and record say
    the path read from the process's /proc/PID/maps escaped for the
    terminal (\\x1b, \\x07, \\u009b, \\x9b as text), none of those bytes
    raw."""
    d_name = "d\x1b]0;x\x07\u009by\udc9bz"  # \udc9b: the raw byte 0x9b
    trace_dir = os.path.join(tmp, d_name)
    os.mkdir(trace_dir, 0o700)
    d = Driven(trace_dir, env={"GPUSPY_START": "paused"})
    d.do("a 1")
    name = traces(trace_dir)[0]
    shown = os.fsencode(tmp) + b"/d\\x1b]0;x\\x07\\u009by\\x9bz/" + name.encode()
    pid = str(d.p.pid).encode()
    for args, want in ((["start"], b"gpuspy: process %s is recording into %s\n" % (pid, shown)),
                       (["stop"], b"gpuspy: process %s stopped recording; see gpuspy report %s\n" % (pid, shown)),
                       (["record", "--for", "100ms"], b"gpuspy: recording process %s into %s for 100.0 ms\n"
                        b"gpuspy: process %s recorded for " % (pid, shown, pid))):
        p = subprocess.run([GPUSPY, args[0], str(d.p.pid), *args[1:]], capture_output=True, timeout=TIMEOUT)
        for bad in (b"\x1b", b"\x07", b"\x9b"):
            check(bad not in p.stdout, f"gpuspy {args[0]}: {bad!r} reached the terminal: {p.stdout!r}")
        check(p.returncode == 0 and p.stdout.startswith(want) and not p.stderr,
              f"gpuspy {args[0]}: {p.returncode} {p.stdout!r} {p.stderr!r}")
    check(p.stdout.endswith(b"; see gpuspy report %s\n" % shown), f"record ended {p.stdout!r}")
    check(d.finish() == 0, "prog_window failed")


@test
def record_says_when_the_trace_is_cut(tmp):
    """The trace emptied (`: > trace.gspy`, logrotate's copytruncate, or
    its process's owner) while `gpuspy record PID --for 30s` waits on its
    mapped header: one line saying the trace was cut, naming it and the
    process, and status 1, where record died of SIGBUS (status 135, "Bus
    error"). The process goes on and exits 0."""
    d = Driven(tmp, env={"GPUSPY_START": "paused"})
    d.do("a 1")
    path = os.path.join(tmp, traces(tmp)[0])
    rec = subprocess.Popen([GPUSPY, "record", str(d.p.pid), "--for", "30s"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    line = rec.stdout.readline()
    check(line == f"gpuspy: recording process {d.p.pid} into {path} for 30.00 s\n", f"record said {line!r}")
    os.truncate(path, 0)
    try:
        out, err = rec.communicate(timeout=TIMEOUT)
    finally:
        if rec.poll() is None:
            rec.kill()
    check((rec.returncode, out, err) == (1, "", f"gpuspy: error: record: the trace was cut (emptied or truncated) "
                                              f"while in use: {path} (process {d.p.pid})\n"),
          f"record: exit {rec.returncode}, {out!r}, {err!r}")
    d.do("a 2")
    check(d.finish() == 0, "prog_window failed")
