# SPDX-License-Identifier: MIT
"""The recording: threads, drops, kills, forks, signals, trace directories, the flight recorder, process life cycles, the file format read back."""
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from test_cupti import CUPTI_ENV


@test
def threads_8_recorded_plus_dropped_equals_issued(tmp):
    run("prog_threads", ["8", "40000"], tmp=tmp, env={"GPUSPY_BUFFER_MB": "1"})
    proc, ev = only_trace(tmp)
    check(proc["dropped"] > 0, "a 1 MiB buffer should have dropped events")
    check(len(ev) + proc["dropped"] == 320000,
          f"recorded {len(ev)} + dropped {proc['dropped']} != issued 320000")
    check(proc["events"] == len(ev), "process line's event count is wrong")


@test
def threads_8_nothing_dropped_with_room(tmp):
    run("prog_threads", ["8", "10000"], tmp=tmp)
    proc, ev = only_trace(tmp)
    check(proc["dropped"] == 0 and len(ev) == 80000, f"{len(ev)} events, {proc['dropped']} dropped")
    check(proc["threads"] == 8, f"{proc['threads']} threads recorded")
    per = {}
    for e in ev:
        per[e["tid"]] = per.get(e["tid"], 0) + 1
    check(sorted(per.values()) == [10000] * 8, f"per-thread counts {sorted(per.values())}")
    starts = [e["start_ns"] for e in ev]
    check(starts == sorted(starts), "events are not in start-time order")


@test
def sigkill_keeps_every_committed_event(tmp):
    run("prog_kill", ["5000"], tmp=tmp, expect_rc=-9)
    proc, ev = only_trace(tmp)
    check(proc["clean_exit"] is False and proc["state"] == "running or killed",
          f"state {proc['state']}")
    check(len(ev) == 5000, f"{len(ev)} of 5000 events survived SIGKILL")
    check([e["grid"][0] for e in ev] == [(i % 1000) + 1 for i in range(5000)],
          "events out of order or altered")


@test
def fork_child_writes_its_own_file(tmp):
    p = run("prog_fork", tmp=tmp)
    parent, child = [int(x) for x in p.stdout.split()[1::2]]
    files = traces(tmp)
    check(len(files) == 2, f"expected two trace files, found {files}")
    by_pid = {}
    for f in files:
        proc, ev = dump(os.path.join(tmp, f))
        by_pid[proc["pid"]] = (proc, ev)
    check(set(by_pid) == {parent, child}, f"pids {set(by_pid)} != {parent, child}")
    pe = [e["kind"] for e in by_pid[parent][1]]
    check(pe == ["alloc"] * 3 + ["memset"] * 2, f"parent events {pe}")
    ce = by_pid[child][1]
    check([e["name"] for e in ce] == ["child_kernel"] * 5, f"child events {ce}")
    check(by_pid[child][0]["ppid"] == parent, "child's ppid is wrong")


@test
def disabled_records_nothing(tmp):
    same_output("prog_rt_dyn", tmp, env={"GPUSPY_DISABLE": "1"})
    check(traces(tmp) == [], "GPUSPY_DISABLE=1 still wrote a trace")


@test
def no_cuda_use_no_file(tmp):
    e = dict(os.environ, LD_PRELOAD=PRELOAD_PREFIX + LIB, GPUSPY_DIR=tmp)
    p = subprocess.run(["/bin/sh", "-c", "echo hello"], env=e, capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.stdout == "hello\n" and p.returncode == 0, "a non-CUDA program changed")
    check(traces(tmp) == [], "a process without CUDA calls wrote a trace")


@test
def rank_in_file_name(tmp):
    run("prog_dlsym", tmp=tmp, env={"RANK": "3", "LOCAL_RANK": "1"})
    t = traces(tmp)
    check(len(t) == 1 and t[0].endswith("-r3.gspy"), f"file name {t}")
    proc, _ = dump(os.path.join(tmp, t[0]))
    check(proc["rank"] == 3 and proc["local_rank"] == 1, "rank not in the header")


@test
def dump_format_types(tmp):
    run("prog_drv", tmp=tmp)
    t = traces(tmp)[0]
    p = subprocess.run([GPUSPY, "dump", os.path.join(tmp, t)], capture_output=True, text=True)
    first = json.loads(p.stdout.splitlines()[0])
    for k in ("format_version", "pid", "host", "rank", "command", "dropped", "clean_exit"):
        check(k in first, f"process line lacks {k}")
    check(first["format_version"] == 3 and "prog_drv" in first["command"], "process line values")
    for line in p.stdout.splitlines()[1:]:
        e = json.loads(line)
        if e["type"] == "stack":  # {"type": "stack", "id": N, "frames": [strings]}
            check(isinstance(e["id"], int) and e["frames"] and all(isinstance(f, str) for f in e["frames"]),
                  f"stack line: {e}")
            continue
        for k in ("kind", "api", "tid", "start_ns", "end_ns", "result"):
            check(k in e, f"event lacks {k}: {e}")
        for k in ("start_ns", "end_ns", "result", "tid"):
            check(isinstance(e[k], int), f"{k} is not an integer: {e}")
        check(e["end_ns"] >= e["start_ns"], "end before start")


@test
def reader_rejects_bad_files(tmp):
    run("prog_dlsym", tmp=tmp)
    good_path = os.path.join(tmp, traces(tmp)[0])
    good = open(good_path, "rb").read()
    cases = {
        "empty": (b"", "empty file"),
        "short": (good[:100], "truncated header"),
        "magic": (b"NOTGSPY!" + good[8:8192], "bad magic"),
        "unfinished": (bytes(8192), "before gpuspy finished creating the file"),
        "newer": (good[:8] + (99).to_bytes(4, "little") + good[12:8192], "newer"),
        "sizes": (good[:16] + (12345).to_bytes(4, "little") + good[20:8192], "corrupt header"),
    }
    for name, (data, what) in cases.items():
        path = os.path.join(tmp, f"bad-{name}.gspy")
        write(path, data)
        p = subprocess.run([GPUSPY, "dump", path], capture_output=True, text=True, timeout=10)
        err = p.stderr.strip()
        check(p.returncode != 0, f"{name}: exit 0")
        check(len(err.splitlines()) == 1 and err.startswith("gpuspy: error: ") and path in err
              and what in err, f"{name}: message {err!r}")
    # A file cut inside its records yields the complete ones and says so.
    # The string table, last in the file (format 3), is cut off with the
    # rest: the events come without their names and their stacks' frames.
    def events(path):
        p = subprocess.run([GPUSPY, "dump", path], capture_output=True, text=True, timeout=10)
        lines = [json.loads(l) for l in p.stdout.splitlines()]
        return p, [l for l in lines if l["type"] == "event"], [l for l in lines if l["type"] == "stack"]
    h = header(good_path)
    check(h["chunk_offset"] == 4096 and h["strtab_offset"] == 4096 + h["chunk_count"] * CHUNK, f"layout {h}")
    _, whole, stacks = events(good_path)
    check(stacks and any("name" in e for e in whole), "the whole file's stacks and names")
    cut = os.path.join(tmp, "cut.gspy")
    write(cut, good[:4096 + 64 + 64])  # inside the first chunk's packed records (201 bytes)
    p, got, got_stacks = events(cut)
    bare = lambda evs: [{k: v for k, v in e.items() if k != "name"} for e in evs]  # noqa: E731
    check(p.returncode == 0 and 1 <= len(got) < len(whole) and bare(got) == bare(whole[:len(got)]) and
          not got_stacks, f"cut file: {len(got)} of {len(whole)} events, not a prefix: {p.stdout!r}")
    check("truncated" in p.stderr, "cut file not reported as truncated")
    # Cut inside the string table: every event, each kernel "(unknown)".
    write(cut, good[:h["strtab_offset"] + 8])
    p, got, got_stacks = events(cut)
    check(p.returncode == 0 and bare(got) == bare(whole) and not got_stacks and "truncated" in p.stderr and
          {e.get("name") for e in got} == {None, "(unknown)"},
          f"cut in the strings: {len(got)} of {len(whole)} events: {p.stdout[:300]!r} {p.stderr!r}")


@test
def gpuspy_threads_take_no_signal(tmp):
    """gpuspy's threads (prefault; with CUPTI the flusher) are created with
    every signal blocked: a signal sent to the process while its only
    thread blocks it stays pending, and its handler then runs on that
    thread, as without gpuspy."""
    want = "trained 3 steps\nstill pending 1\nhandled by the main thread 1\n"
    for env in ({}, CUPTI_ENV):
        p = run("prog_train", ["3", "100", "signal"], env=env, tmp=tmp)
        check(p.stdout == want, f"{env}: {p.stdout!r}")
    check(run("prog_train", ["3", "100", "signal"], preload=False, tmp=tmp).stdout == want, "untraced run")


@test
def crashes_are_reported_and_unchanged(tmp):
    """Each way of dying: same exit status and output as without gpuspy, every
    committed event kept, and the trace says how the process ended."""
    cases = {"segv": -11, "abort": -6, "fpe": -8, "term": -15, "chain-after": -11,
             "recover-before": 0, "recover-after": 0,
             # The program's own SIGBUS: gpuspy's handler takes only faults on its trace file.
             "bus": -7, "bus-recover-before": 0, "bus-recover-after": 0}
    for mode, status in cases.items():
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        a = run("prog_crash", [mode], tmp=tmp, preload=False, expect_rc=status)
        b = run("prog_crash", [mode], tmp=tmp, preload=True, expect_rc=status)
        check(a.stdout == b.stdout, f"{mode}: output differs: {a.stdout!r} vs {b.stdout!r}")
        proc, ev = only_trace(tmp)
        launches = sum(1 for e in ev if e["kind"] == "launch")
        if status:
            check(proc["state"] == "signaled" and proc["exit_signal"] == -status,
                  f"{mode}: state {proc['state']} signal {proc.get('exit_signal')}")
            check(launches == 100, f"{mode}: {launches} of 100 launches kept")
        else:
            check(proc["state"] == "exited" and launches == 101 and "recovered" in b.stdout,
                  f"{mode}: recovered process recorded as {proc['state']} with {launches} launches")
    h = subprocess.run([GPUSPY, "report", tmp], capture_output=True, text=True)
    check("exited cleanly" in h.stdout, "report of the last case")
    run("prog_crash", ["abort"], tmp=tmp, expect_rc=-6)
    p = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True)
    check("died of a signal" in p.stdout and "signal 6" in p.stdout, "report does not say how it died")


@test
def unsafe_trace_directories_are_refused(tmp):
    real = os.path.join(tmp, "real")
    os.makedirs(real)
    link = os.path.join(tmp, "link")
    os.symlink(real, link)
    open_dir = os.path.join(tmp, "open")
    os.makedirs(open_dir)
    os.chmod(open_dir, 0o777)
    for d, what in ((link, "symbolic link"), (open_dir, "writable by anyone")):
        a = run("prog_rt_dyn", tmp=d, preload=False)
        b = run("prog_rt_dyn", tmp=d, env={"GPUSPY_QUIET": ""})
        check((a.stdout, a.stderr, a.returncode) == (b.stdout, b.stderr, b.returncode), f"{what}: the program changed")
        b = run("prog_rt_dyn", tmp=d, env=LOG_STDERR)
        err = b.stderr.strip().splitlines()
        check(len(err) == 1 and what in err[0] and err[0].startswith("gpuspy: "), f"{what}: {err}")
        check(traces(real) == [] and traces(open_dir) == [], f"{what}: a trace was written")
    os.chmod(open_dir, 0o1777)  # sticky, like /tmp: accepted
    run("prog_rt_dyn", tmp=open_dir)
    check(len(traces(open_dir)) == 1, "a sticky world-writable directory was refused")
    t = os.path.join(open_dir, traces(open_dir)[0])
    check(os.stat(t).st_mode & 0o777 == 0o600, f"trace mode {oct(os.stat(t).st_mode)}")


@test
def flight_recorder_keeps_the_newest(tmp):
    """GPUSPY_MODE=ring: a 1 MiB buffer (16 chunks of 64 KiB) keeps the
    newest events, contiguous up to the SIGKILL, and counts the rest."""
    n = 300000
    run("prog_kill", [str(n)], tmp=tmp, expect_rc=-9, env={"GPUSPY_MODE": "ring", "GPUSPY_BUFFER_MB": "1"})
    proc, ev = only_trace(tmp)
    k = len(ev)
    check(proc["mode"] == "ring" and 15 * 1023 <= k < n, f"{k} events kept")
    check(proc["overwritten"] + k == n and proc["dropped"] == 0,
          f"overwritten {proc['overwritten']} + kept {k} != {n}")
    check([e["grid"][0] for e in ev] == [(i % 1000) + 1 for i in range(n - k, n)],
          "the kept events are not the newest, in order")
    h = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True)
    check(f"the {n - k} oldest events were overwritten" in h.stdout, "report does not say what was overwritten")


def all_traces(tmp):
    out = {}
    for f in traces(tmp):
        proc, ev = dump(os.path.join(tmp, f))
        out.setdefault(proc["pid"], []).append((proc, ev))
    return out


@test
def process_life_cycles(tmp):
    def fresh():
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
    # _exit: no exit handler runs; every committed event is there, and
    # gpuspy's _exit says the process exited, with its status.
    fresh()
    run("prog_life", ["_exit"], tmp=tmp, expect_rc=3)
    proc, ev = only_trace(tmp)
    # (The sanitizers' own _exit goes straight to libc's: never marked.)
    want = ("running or killed", None) if SANITIZED else ("exited", 3)
    check(len(ev) == 10 and (proc["state"], proc.get("exit_code")) == want,
          f"_exit: {len(ev)} {proc['state']} {proc.get('exit_code')}")
    # exit() from another thread while main launches.
    fresh()
    run("prog_life", ["thread-exit"], tmp=tmp, expect_rc=5)
    proc, ev = only_trace(tmp)
    check(proc["state"] == "exited" and len(ev) == proc["events"] > 0, "thread-exit")
    # exec: the old image keeps its 5 events, the new one writes its own file.
    fresh()
    run("prog_life", ["exec"], tmp=tmp)
    t = all_traces(tmp)
    check(len(t) == 1, f"exec: pids {list(t)}")
    files = sorted(t.values())[0]
    counts = sorted((len(ev), proc["state"]) for proc, ev in files)
    check(counts == [(4, "exited"), (5, "running or killed")], f"exec: {counts}")
    # posix_spawn and vfork + exec: the child has its own file.
    for mode in ("spawn", "vfork"):
        fresh()
        p = run("prog_life", [mode], tmp=tmp)
        child = int(p.stdout.split()[1])
        t = all_traces(tmp)
        check(len(t) == 2 and child in t, f"{mode}: pids {list(t)}")
        check(len(t[child][0][1]) == 4, f"{mode}: child events {len(t[child][0][1])}")
        parent = [pid for pid in t if pid != child][0]
        check(len(t[parent][0][1]) == 2, f"{mode}: parent events {len(t[parent][0][1])}")


@test
@slow
def load_64_threads_with_dlopen(tmp):
    """64 threads x 1 M launches into a 64 MiB buffer, while another thread
    dlopens, looks up and dlcloses the runtime: no deadlock, exact counts.
    On 2 cores the 64 threads take 47-51 s traced: a hang is taken at 240
    s, not the usual 60 (a CI run with other work on the cores passed 60)."""
    per = 100000 if SANITIZED else 1000000  # sanitizers: the same shape, smaller
    mb = 4 if SANITIZED else 64
    p = run("prog_load", ["64", str(per)], tmp=tmp, env={"GPUSPY_BUFFER_MB": str(mb)}, timeout=240)
    check(p.stdout.strip() == f"issued {64 * per} lookups yes", p.stdout)
    proc = report_json(tmp)
    check(proc["events"] + proc["dropped"] == 64 * per,
          f"recorded {proc['events']} + dropped {proc['dropped']} != {64 * per}")
    cap = (mb << 20) // (64 << 10) * 1023  # as many 64-byte records: packed ones are smaller
    check(proc["dropped"] > 0 and proc["events"] >= cap - 64 * 1023, f"{proc['events']} recorded")


@test
def bad_trace_directory_leaves_the_program_alone(tmp):
    for d in ("/nonexistent/gpuspy-dir", "/proc"):
        a = run("prog_rt_dyn", tmp=d, preload=False)
        b = run("prog_rt_dyn", tmp=d, env={"GPUSPY_QUIET": ""})
        check((a.stdout, a.stderr, a.returncode) == (b.stdout, b.stderr, b.returncode), f"{d}: the program changed")
        b = run("prog_rt_dyn", tmp=d, env=LOG_STDERR)
        err = [l for l in b.stderr.splitlines() if l.startswith("gpuspy: ")]
        check(len(err) == 1 and "tracing off" in err[0], f"{d}: {b.stderr!r}")


@test
def full_disk_leaves_the_program_alone(tmp):
    """ENOSPC when the trace file is sized: one warning, no trace, no change."""
    mnt = os.path.join(tmp, "small")
    os.makedirs(mnt)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", mnt],
                       capture_output=True, text=True)
    if m.returncode:
        raise Skip(f"cannot mount a small tmpfs here: {m.stderr.strip()}")
    try:
        a = run("prog_rt_dyn", tmp=mnt, preload=False)
        b = run("prog_rt_dyn", tmp=mnt, env={"GPUSPY_QUIET": "", "GPUSPY_BUFFER_MB": "8"})
        check((a.stdout, a.stderr, a.returncode) == (b.stdout, b.stderr, b.returncode),
              "the program changed on a full disk")
        b = run("prog_rt_dyn", tmp=mnt, env=dict(LOG_STDERR, GPUSPY_BUFFER_MB="8"))
        err = [l for l in b.stderr.splitlines() if l.startswith("gpuspy: ")]
        check(len(err) == 1 and "No space left" in err[0], f"warning: {b.stderr!r}")
        check(traces(mnt) == [], "a partial trace was left on the full disk")
    finally:
        subprocess.run(["umount", mnt])


@test
def secure_execution_is_left_alone(tmp):
    """A setuid program run by another user: the loader ignores a preload
    path in secure mode and gpuspy checks AT_SECURE itself; nothing is written."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        raise Skip("needs root and setpriv to make a setuid run")
    if SANITIZED:
        raise Skip("the setuid run is about the loader, not gpuspy's code")
    exe = os.path.join(tmp, "echo_setuid")
    shutil.copy("/bin/echo", exe)
    os.chmod(tmp, 0o1777)
    os.chmod(exe, 0o4755)
    e = dict(os.environ, LD_PRELOAD=LIB, GPUSPY_DIR=tmp)
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe, "hello"]
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=TIMEOUT)
    q = subprocess.run(cmd, env=dict(e, LD_PRELOAD=""), capture_output=True, text=True, timeout=TIMEOUT)
    check(p.stdout == q.stdout == "hello\n" and p.returncode == q.returncode == 0,
          f"the setuid program changed: {p.stdout!r} {p.stderr!r}")
    check(traces(tmp) == [], "gpuspy wrote a trace in a secure-execution process")


@test
def python_faulthandler_keeps_working(tmp):
    """Python's faulthandler, enabled before gpuspy installs its handlers (at
    the first event) and after: its report and the death by SIGSEGV are as
    without gpuspy, and the trace keeps the signal."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    code = ("import ctypes, faulthandler, sys\n"
            "if sys.argv[1] == 'after': faulthandler.enable()\n"
            "ctypes.CDLL(None).gpuspy_mark(b'x') if hasattr(ctypes.CDLL(None), 'gpuspy_mark') else None\n"
            "if sys.argv[1] == 'late': faulthandler.enable()\n"
            "ctypes.string_at(0)\n")
    for when, flags in (("before", ["-X", "faulthandler"]), ("late", [])):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        args = [*flags, "-c", code, when]
        a = run_py(args, tmp, preload=False)
        b = run_py(args, tmp, env={"GPUSPY_TORCH": "0"})
        check(a.returncode == b.returncode == -11, f"{when}: exit {a.returncode} / {b.returncode}")
        check("Fatal Python error: Segmentation fault" in b.stderr, f"{when}: faulthandler silent: {b.stderr[-300:]}")
        proc, ev = only_trace(tmp)
        sig = proc.get("exit_signal") or proc.get("signal_seen")
        check(sig == 11 and [e["name"] for e in ev] == ["x"], f"{when}: trace {proc['state']} {sig}")


@test
def pause_and_resume(tmp):
    """gpuspy_pause()/gpuspy_resume(): the calls in between are not recorded,
    each leaves its mark, the program's output is the same with and without
    libgpuspy (the weak symbols are null without it)."""
    a = run("prog_stacks", ["1", "pause"], tmp=tmp, preload=False)
    b = run("prog_stacks", ["1", "pause"], tmp=tmp)
    check(a.stdout == b.stdout == "paused run done\n", f"output {a.stdout!r} / {b.stdout!r}")
    _, ev = only_trace(tmp)
    seq = [e["kind"] if e["kind"] != "mark" else e["name"] for e in ev]
    check(seq == ["alloc", "free"] * 3 + ["(paused)", "(resumed)"] + ["alloc", "free"] * 2,
          f"events {seq}")


@test
def header_says_the_cpus_the_process_could_use(tmp):
    """The trace's header holds the CPUs the process could run on when it
    made its file (its affinity; the report's replay of loader workers
    divides the data phase by them): all of them, and 1 under taskset."""
    run("prog_rt_dyn", tmp=tmp)
    proc, _ = only_trace(tmp)
    check(proc.get("cpus") == len(os.sched_getaffinity(0)), f"cpus {proc.get('cpus')}")
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_QUIET="1",
             LD_PRELOAD=PRELOAD_PREFIX + LIB)
    subprocess.run(["taskset", "-c", "0", os.path.join(BIN, "prog_rt_dyn")], env=e, capture_output=True,
                   timeout=TIMEOUT)
    proc, _ = only_trace(tmp)
    check(proc.get("cpus") == 1, f"cpus under taskset {proc.get('cpus')}")


def names_and_frames(path):
    """What a trace's names say: (kind, name) counts of its named events,
    and the first frame of each stack its events refer to."""
    events, stacks = dump_stacks(path)
    named = {}
    for e in events:
        if "name" in e:
            named[(e["kind"], e["name"])] = named.get((e["kind"], e["name"]), 0) + 1
    return named, {stacks[e["stack"]][0].split(" (")[0] if e["stack"] in stacks else None
                   for e in events if "stack" in e}


@test
def clean_exit_cuts_the_file_to_chunks_and_strings(tmp):
    """A clean exit cuts the trace to what it holds (format 3): the header,
    the chunks claimed, then the string table's used bytes, moved down to
    right after them, and 64 KiB for strings interned later, in pages.
    prog_train's 20 steps (one 64 KiB chunk of the 4,096 reserved, its
    names and call stacks) come to exactly that, under 2 MiB (16,846,848
    bytes before: the 16 MiB table stayed whole), and read back whole:
    every kernel, phase and mark name, every stack's frames. A buffer
    filled to its last chunk leaves no room below the table: it stays
    where it was, cut to its used bytes and the slack, its names whole."""
    run("prog_train", tmp=tmp)
    path = os.path.join(tmp, traces(tmp)[0])
    h, size = header(path), os.path.getsize(path)
    check(h["version"] == 3 and h["chunk_offset"] == 4096 and h["chunk_count"] == 1 and
          h["chunks_claimed"] == 1 + 4096 and h["strtab_offset"] == 4096 + CHUNK and
          h["strtab_size"] == (h["strtab_used"] + SLACK + 4095) & ~4095 and 0 < h["strtab_used"] < 16 << 10 and
          size == h["file_size"] == h["strtab_offset"] + h["strtab_size"] == trimmed_size(h) and size < 2 << 20,
          f"{size} bytes, header {h}")
    named, first = names_and_frames(path)
    check(named == {("launch", "fwd_gemm"): 200, ("launch", "bwd_gemm"): 240, ("launch", "sgd_update"): 20,
                    ("phase_begin", "data"): 20, ("phase_end", "data"): 20, ("phase_begin", "forward"): 20,
                    ("phase_end", "forward"): 20, ("phase_begin", "backward"): 20, ("phase_end", "backward"): 20,
                    ("phase_begin", "optimizer"): 20, ("phase_end", "optimizer"): 20, ("mark", "step"): 20},
          f"names {named}")
    check(first == {"main"}, f"first frames of the stacks: {first}")
    # Full: 16 chunks of 16, none free below the table.
    os.unlink(path)
    run("prog_threads", ["8", "40000"], tmp=tmp, env={"GPUSPY_BUFFER_MB": "1"})
    path = os.path.join(tmp, traces(tmp)[0])
    h, size = header(path), os.path.getsize(path)
    check(h["chunk_count"] == h["chunks_claimed"] == 16 and h["strtab_offset"] == 4096 + 16 * CHUNK and
          h["strtab_size"] == (h["strtab_used"] + SLACK + 4095) & ~4095 and
          size == h["file_size"] == trimmed_size(h), f"full buffer: {size} bytes, header {h}")
    proc, ev = dump(path)
    names = {e["name"] for e in ev if "name" in e}
    check(proc["dropped"] > 0 and len(ev) + proc["dropped"] == 320000 and names == {"thread_kernel"},
          f"full buffer: {len(ev)} events, {proc['dropped']} dropped, names {names}")


def sparse_copy(src, dst):
    """A copy of a live trace's bytes that matter (the header, the chunks
    claimed, the string table's used bytes), the rest zeros: its whole
    reserved buffer is not copied."""
    h = header(src)
    claimed = min(h["chunks_claimed"], h["chunk_count"])
    with open(src, "rb") as f, open(dst, "wb") as g:
        g.truncate(os.path.getsize(src))
        for off, n in ((0, 4096), (h["chunk_offset"], claimed * h["chunk_size"]),
                       (h["strtab_offset"], h["strtab_used"])):
            f.seek(off)
            g.seek(off)
            g.write(f.read(n))


@test
def trim_at_exit_changes_no_byte_read_back(tmp):
    """The dump of a trace copied while its process ran (its string table
    after the whole buffer, 16 MiB from the chunks) and the dump of the
    same trace cut at its clean exit (the table moved down) are the same
    lines but the process line: every event, name, call stack and frame.
    (The monotonic clock: a TSC trace's times are converted by the clock
    pairs, and exit adds one, which moves them by nanoseconds.)"""
    from test_control import Driven
    d = Driven(tmp, env={"GPUSPY_BUFFER_MB": "1", "GPUSPY_CLOCK": "mono"})
    d.do("p step", "a 4096", "k 3", "n range", "h 1000", "H 2000", "m", "q", "p eval", "A 8192", "q")
    path = os.path.join(tmp, traces(tmp)[0])
    live = os.path.join(tmp, "live.copy")
    sparse_copy(path, live)
    h = header(live)
    check(h["state"] == 0 and h["chunk_count"] == 16 and h["strtab_offset"] == 4096 + 16 * CHUNK and
          h["strtab_size"] == STRTAB, f"live header {h}")
    check(d.finish() == 0, "prog_window failed")
    h = header(path)
    check(h["state"] == 1 and h["strtab_offset"] == 4096 + h["chunk_count"] * CHUNK and
          os.path.getsize(path) == trimmed_size(h), f"trimmed header {h}")
    lines = lambda p: subprocess.run([GPUSPY, "dump", p], capture_output=True, text=True,  # noqa: E731
                                     timeout=TIMEOUT).stdout.splitlines()[1:]
    before, after = lines(live), lines(path)
    check(len(before) > 10 and after == before and '"name":"window_kernel"' in "".join(before) and
          '"type":"stack"' in "".join(before), f"dump before the trim:\n{before}\nafter:\n{after}")


@test
def both_layouts_read_the_same(tmp):
    """The same trace in format 2 (string table before the chunks, as the
    committed fixtures are) and format 3 (after them; tests/mktrace): the
    dump is the same but for format_version, and the report the same."""
    out = {}
    for v in ("2", "3"):
        os.mkdir(os.path.join(tmp, v))
        f = os.path.join(tmp, v, "t.gspy")
        subprocess.run([os.path.join(BIN, "mktrace"), f, "20000", "3", "65536", "4096"], check=True,
                       timeout=TIMEOUT, env=dict(os.environ, MKTRACE_FORMAT=v))
        h = header(f)
        check(h["version"] == int(v) and (h["strtab_offset"] < h["chunk_offset"]) == (v == "2"), f"v{v}: {h}")
        d = subprocess.run([GPUSPY, "dump", f], capture_output=True, text=True, timeout=TIMEOUT)
        r = subprocess.run([GPUSPY, "report", "--json", "t.gspy"], capture_output=True, text=True, timeout=TIMEOUT,
                           cwd=os.path.join(tmp, v))
        check(d.returncode == r.returncode == 0 and not d.stderr and not r.stderr, f"v{v}: {d.stderr} {r.stderr}")
        out[v] = (d.stdout.replace(f'"format_version":{v},', ""), r.stdout)
    check(out["2"][0] == out["3"][0], "the dumps differ")
    check(out["3"][0].count('"type":"event"') == 20001, "not 3 threads of 6,667 events")  # mktrace rounds up
    check(out["2"][1] == out["3"][1], "the reports differ")


@test
def trim_killed_between_its_stores_reads_whole(tmp):
    """The trim at exit writes the table's new size, then its offset, then
    the file's size, and then cuts the file. A process killed between two
    of those stores leaves a table that ends before the file does: each
    such header reads as the trace it is (the dump the same lines as the
    live copy's, no warning), where it was refused as corrupt."""
    from test_control import Driven
    d = Driven(tmp, env={"GPUSPY_BUFFER_MB": "1"})
    d.do("p step", "a 4096", "k 3", "n range", "h 1000", "H 2000", "m", "q", "p eval", "A 8192", "q")
    path = os.path.join(tmp, traces(tmp)[0])
    live = os.path.join(tmp, "live.copy")
    sparse_copy(path, live)
    check(d.finish() == 0, "prog_window failed")
    before, t = header(live), header(path)
    check(t["strtab_offset"] < before["strtab_offset"] and t["strtab_size"] < before["strtab_size"],
          f"the trim moved nothing: {before} -> {t}")
    data, cut = open(live, "rb").read(), open(path, "rb").read()

    def patched(b, **fields):
        b = bytearray(b)
        for k, v in fields.items():
            off, n = HEADER_FIELDS[k]
            b[off:off + n] = v.to_bytes(n, "little")
        return b
    size_stored = patched(data, chunk_count=t["chunk_count"], strtab_size=t["strtab_size"])
    moved = bytearray(size_stored)
    moved[t["strtab_offset"]:t["strtab_offset"] + t["strtab_used"]] = \
        cut[t["strtab_offset"]:t["strtab_offset"] + t["strtab_used"]]
    offset_stored = patched(moved, strtab_offset=t["strtab_offset"])
    file_size_stored = patched(offset_stored, file_size=t["file_size"])
    lines = lambda p: subprocess.run([GPUSPY, "dump", p], capture_output=True, text=True,  # noqa: E731
                                     timeout=TIMEOUT)
    want = lines(live).stdout.splitlines()[1:]
    check(len(want) > 10 and '"name":"window_kernel"' in "".join(want), f"live dump {want}")
    for name, b in (("size", size_stored), ("offset", offset_stored), ("file_size", file_size_stored)):
        f = os.path.join(tmp, f"{name}.gspy")
        with open(f, "wb") as out:
            out.write(b)
        p = lines(f)
        check(p.returncode == 0 and not p.stderr and p.stdout.splitlines()[1:] == want,
              f"killed after the {name} store: exit {p.returncode}, {p.stderr!r}, "
              f"{len(p.stdout.splitlines())} lines")


@test
def raw_fork_children_leave_their_parents_trace_alone(tmp):
    """Two children forked without fork handlers (syscall(SYS_fork)) that
    make no call still map their parent's file: one dies of SIGTERM, the
    other calls _exit(3). The parent's trace, the parent then killed
    (SIGKILL), says only what the parent did: 6 events, running or killed,
    no signal and no status of its children's (it said "exited", status 3)."""
    if "tsan" in PRELOAD_PREFIX:
        raise Skip("ThreadSanitizer's runtime does not survive a fork without its handlers")
    p = run("prog_rawfork", ["bare"], tmp=tmp, expect_rc=-9, env={"GPUSPY_STACKS": "off"})
    check(p.stdout == "children: signal 15, exit 3\n", f"output {p.stdout!r}")
    head, ev = only_trace(tmp)
    check(len(ev) == 6 and head["state"] == "running or killed" and
          not {"exit_code", "exit_signal", "signal_seen"} & set(head), f"{len(ev)} events, {head}")


@test
def thread_cancelled_as_the_allocation_table_fills(tmp):
    """A thread with a cancel pending makes the allocation that finds
    gpuspy's table of live allocations full (65,536), which gpuspy says in
    its log (GPUSPY_LOG=stderr: a write, a cancellation point): the program
    exits 0 within the timeout with its untraced output (it hung: the
    thread died in the write holding the table's lock with its sequence
    odd, and main's copy spun on it for ever), the line is said once, and
    every allocation and main's copy are recorded."""
    want = "thread: cancelled\nmain: 0 0\n"
    a = run("prog_cancel", ["full"], tmp=tmp, preload=False)
    check(a.stdout == want, f"untraced: {a.stdout!r}")
    env = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, LD_PRELOAD=PRELOAD_PREFIX + LIB, **LOG_STDERR)
    if "tsan" in PRELOAD_PREFIX:  # libunwind's thread-exit destructor breaks TSan's runtime
        env["GPUSPY_STACKS"] = "on,glibc"
    try:
        b = subprocess.run([os.path.join(BIN, "prog_cancel"), "full"], env=env, capture_output=True, text=True,
                           timeout=20)
    except subprocess.TimeoutExpired:
        raise Fail("the program hung")
    check((b.returncode, b.stdout) == (0, want), f"traced: exit {b.returncode}, {b.stdout!r} {b.stderr[-300:]!r}")
    line = "gpuspy: more than 65536 live allocations; later ones are not tracked\n"
    check(b.stderr.count(line) == 1, f"stderr: {b.stderr[-300:]!r}")
    _, ev = only_trace(tmp)
    got = [e["api"] for e in ev]
    check(got.count("cuMemAlloc_v2") == 65536 + 2 and got[-2:] == ["cuMemcpyHtoD_v2", "cuMemAlloc_v2"],
          f"{got.count('cuMemAlloc_v2')} allocations; last calls {got[-3:]}")


@test
def gpu_records_cupti_dropped_are_said(tmp):
    """CUPTI drops the records it has no buffer space for and counts them
    (cuptiActivityGetNumDroppedRecords): asked as each buffer comes back,
    after each flush, and after the last, so that drops after the last
    buffer count too. prog_train 3 100's 78 GPU records with the 10th to
    the 14th dropped (FAKECUPTI_DROP) leave 73 in the trace, and its notes
    say so, the first drop at once (a process killed later keeps it) and
    the total at the end: by exit, by _exit (the flusher thread's flush)
    and by SIGABRT (the same). With 1.5 s steps, flushed every second,
    the last buffer comes back before the last 26 records are dropped:
    52 kept, both notes. The report shows them. None dropped: no note."""
    first = "CUPTI dropped GPU records for want of buffer space: some kernels, copies and memsets have no times"
    total = "CUPTI dropped {} GPU records in all: their kernels, copies and memsets have no times"
    cases = (("10:5", ["3", "100"], 0, 73), ("0:0", ["3", "100"], 0, 78), ("10:5", ["3", "100", "_exit"], 7, 73),
             ("10:5", ["3", "100", "abort"], -6, 73), ("53:26", ["3", "1500000"], 0, 52))
    if SANITIZED:  # the sanitizer's own _exit goes straight to libc's, and it reports abort() itself
        cases = [c for c in cases if c[1][-1] not in ("_exit", "abort")]
    for k, (drop, args, rc, kept) in enumerate(cases):
        d = os.path.join(tmp, str(k))
        os.makedirs(d)
        run("prog_train", args, env=dict(CUPTI_ENV, FAKECUPTI_DROP=drop, GPUSPY_CUPTI_FLUSH="1"), tmp=d,
            expect_rc=rc)
        head, ev = only_trace(d)
        gpu = [e for e in ev if e["kind"] in ("gpu_kernel", "gpu_copy", "gpu_memset")]
        notes = [n for n in head.get("notes", []) if "CUPTI dropped" in n]
        want = [first, total.format(78 - kept)] if kept < 78 else []
        check(len(gpu) == kept and notes == want, f"{drop} {args}: {len(gpu)} GPU records, notes {head.get('notes')}")
        text = report_text(d)
        check(all(f"     {n}\n" in text for n in want), f"{drop}: the report does not show the notes:\n{text}")
