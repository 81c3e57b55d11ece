# SPDX-License-Identifier: MIT
"""Programs written to break gpuspy: start-up, interposers, signals, fork.

Each test reproduces one way a real job could hang,
crash or change behaviour under gpuspy, and asserts what the program did."""
import json
import os
import re
import shutil
import subprocess
import sys

from harness import (BIN, CHUNK, GPUSPY, HEADER_FIELDS, LIB, PRELOAD_PREFIX, SANITIZED, SLACK, TIMEOUT, Fail, Skip, check,
                     compare, dump, dump_stacks, gpuspy_lines, header, notes, report_json, report_text, run, slow,
                     test, traces)
from test_routes import rt_expected
from test_tracegen import control_bytes


def apis(tmp):
    """The api of every event of the one trace in tmp, in order."""
    t = traces(tmp)
    check(len(t) == 1, f"expected one trace file, found {t}")
    _, ev = dump(os.path.join(tmp, t[0]))
    return [e["api"] for e in ev]


@test
def constructor_cuda_call_before_gpuspys_own(tmp):
    """A linked library's constructor calls cudaFree(0) before libgpuspy's
    constructor runs (C++ globals that make a stream do): the program
    finishes, prints what it prints untraced, and all three calls are in
    the trace, the constructor's first."""
    a = run("prog_ctor", tmp=tmp, preload=False)
    b = run("prog_ctor", tmp=tmp)
    check(a.stdout == b.stdout == "main: 0 0\n", f"output: {a.stdout!r} vs {b.stdout!r}")
    check("ctor: cudaFree(0) = 0" in b.stderr, f"constructor did not run: {b.stderr!r}")
    check(apis(tmp) == ["cudaFree", "cudaMalloc", "cudaFree"], f"events: {apis(tmp)}")


@test
def first_cuda_call_while_another_thread_holds_the_loader_lock(tmp):
    """One thread is inside dlopen, in a constructor that waits for the
    other thread's first CUDA calls (the shape of the cuBLAS + OpenMP hang):
    gpuspy's start-up in the calling thread takes no loader lock, so the
    constructor does not time out and the calls are recorded."""
    for cupti in ("off", "on"):  # on: loading libcupti needs that lock
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        p = run("prog_loader_lock", tmp=tmp, expect_rc=None, env={"GPUSPY_CUPTI": cupti})
        check(p.returncode == 0, f"CUPTI {cupti}: exit {p.returncode}: {p.stdout.strip()} {p.stderr.strip()}")
        check(p.stdout == "calls 0 0 0, constructor done\n", f"CUPTI {cupti}: output: {p.stdout!r}")
        check(apis(tmp) == ["cuMemAlloc_v2", "cuMemsetD8_v2", "cuMemFree_v2"], f"events: {apis(tmp)}")


def routes(tmp, preload, mirror=False):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(LD_LIBRARY_PATH=(os.path.join(BIN, "mirror") + ":" if mirror else "") + BIN,
               GPUSPY_DIR=tmp, GPUSPY_QUIET="1", LD_PRELOAD=PRELOAD_PREFIX + preload)
    return subprocess.run([os.path.join(BIN, "prog_routes")], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


ROUTES_OUT = "".join(f"{how}: 0 0\n" * 2 for how in ("symbol", "default", "handle", "proc"))
INTERPOSER = os.path.join(BIN, "libhostile_interposer.so")


@test
def second_interposer_after_gpuspy(tmp):
    """LD_PRELOAD=libgpuspy.so:other.so (what `gpuspy run` makes in front of
    HAMi-core's): the other interposer's dlsym(RTLD_NEXT) means the next
    definition after it, so neither calls the other forever. The program's
    output is unchanged; the interposer sees the calls it sees untraced
    (the symbol, RTLD_DEFAULT and the driver's table all bind to the first
    preload, gpuspy, which calls it next); gpuspy records each of those
    once. The two made through libcuda's own handle pass through
    unrecorded: a wrapper has one real function, the interposer here."""
    p = routes(tmp, f"{LIB}:{INTERPOSER}")
    check(p.returncode == 0, f"exit {p.returncode} (recursion?): {p.stderr[-300:]}")
    check(p.stdout == ROUTES_OUT, f"output: {p.stdout!r}")
    check("interposer: 6 allocs, 6 frees" in p.stderr, f"interposer saw: {p.stderr!r}")
    check(apis(tmp) == ["cuMemAlloc_v2", "cuMemFree_v2"] * 6, f"events: {apis(tmp)}")


@test
def second_interposer_before_gpuspy(tmp):
    """LD_PRELOAD=other.so:libgpuspy.so: the interposer's RTLD_NEXT finds
    gpuspy's wrapper, gpuspy's finds the driver, and RTLD_DEFAULT's answer
    (the interposer's own function) is never stored as gpuspy's real one.
    Every route is recorded once; the interposer sees what it sees
    untraced."""
    alone = routes(tmp, INTERPOSER)
    p = routes(tmp, f"{INTERPOSER}:{LIB}")
    check(p.returncode == 0, f"exit {p.returncode} (recursion?): {p.stderr[-300:]}")
    check(p.stdout == ROUTES_OUT == alone.stdout, f"output: {p.stdout!r}")
    seen = [l for l in p.stderr.splitlines() if l.startswith("interposer:")]
    check(seen == [l for l in alone.stderr.splitlines() if l.startswith("interposer:")] ==
          ["interposer: 6 allocs, 6 frees"], f"interposer saw: {seen}")
    check(apis(tmp) == ["cuMemAlloc_v2", "cuMemFree_v2"] * 8, f"events: {apis(tmp)}")


@test
def driver_table_answers_with_gpuspys_wrappers(tmp):
    """A driver whose entry-point table takes its answers from the global
    scope (a libcuda linked without -Bsymbolic: &cuMemAlloc_v2 is the
    preloaded wrapper), per-thread requests included: gpuspy never takes
    an address inside itself for the real function. Every call is
    recorded once and the program's output is unchanged."""
    p = routes(tmp, LIB, mirror=True)
    check(p.returncode == 0, f"exit {p.returncode} (recursion?): {p.stderr[-300:]}")
    check(p.stdout == ROUTES_OUT, f"output: {p.stdout!r}")
    check(apis(tmp) == ["cuMemAlloc_v2", "cuMemFree_v2"] * 8, f"events: {apis(tmp)}")


@test
@slow
def fork_while_another_thread_is_in_a_hook(tmp):
    """One thread allocates and frees non-stop, the main thread forks 300
    times and each child makes one copy: no child hangs on a lock (or the
    memory map's sequence) that the allocating thread held at the fork.
    Before the fork handlers took gpuspy's locks, about 1 in 300 hung."""
    if "tsan" in PRELOAD_PREFIX:
        raise Skip("ThreadSanitizer does not support fork in a threaded program")
    p = run("prog_fork_busy", tmp=tmp, expect_rc=None, env={"GPUSPY_BUFFER_MB": "1"})
    check(p.returncode == 0 and p.stdout == "0 of 300 children hung\n", f"{p.stdout.strip()}")
    check(len(traces(tmp)) == 301, f"{len(traces(tmp))} traces, expected the parent's and 300")


@test
def program_signal_handlers_keep_their_sigaction_semantics(tmp):
    """Handlers installed before gpuspy's: SA_RESETHAND (the returning
    handler runs once, then the fault kills the process as it does
    untraced, instead of looping), SA_NODEFER (longjmp out of two faults),
    sa_mask (a signal raised in the handler stays pending), a SIGTERM
    handler without SA_ONSTACK using 256 KiB of stack (ran on gpuspy's
    64 KiB alternate stack and crashed), and a handler reached twice; and
    SIGTERM ignored, which gpuspy's handler replaced: the program read a
    handler back, not SIG_IGN, and the shell it then ran was killed by the
    signal it sent itself (a handled signal's action is reset by exec, an
    ignored one's is kept), exit -15 instead of 0; and a SIGTERM handler
    installed after gpuspy's that chains to the action it replaced when
    that is a function (gpuspy's): gpuspy took the call for its own
    delivery of a signal left to its default action, put SIG_DFL back
    over the program's handler and sent the signal again, and the program,
    which handles SIGTERM and runs on untraced, was killed (exit -15).
    Same output and exit status as untraced, and the trace of a process
    that ends in its handler keeps the signal."""
    want = {"resethand": ("", -11), "nodefer": ("recovered 2 times\n", 0),
            "mask": ("in handler: SIGUSR1 pending\n", 0),
            "bigstack": ("handler used 256 KiB of stack\n", 0),
            "twice": ("handler ran 2 times\n", 0),
            "ignored": ("SIGTERM ignored 1\nand after exec\n", 0),
            "chain": ("handler ran 1 times, still running\n", 0)}
    for scenario, (out, rc) in want.items():
        d = os.path.join(tmp, scenario)
        os.mkdir(d)
        for preload in (False, True):
            p = run("prog_signals", [scenario], tmp=d, preload=preload, expect_rc=None,
                    env={"GPUSPY_STACKS": "off"})
            check((p.stdout, p.returncode) == (out, rc),
                  f"{scenario} {'traced' if preload else 'untraced'}: {p.stdout!r} exit {p.returncode}, "
                  f"expected {out!r} exit {rc}")
        proc, _ = dump(os.path.join(d, traces(d)[0]))
        if scenario in ("resethand", "mask", "bigstack"):
            check(proc.get("signal_seen") == (15 if scenario == "bigstack" else 11),
                  f"{scenario}: trace says {proc.get('signal_seen')}")


def preload_env(tmp, **extra):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, LD_PRELOAD=PRELOAD_PREFIX + LIB, **extra)
    return env


@test
def trim_at_exit_never_follows_the_name(tmp):
    """While the program runs, its trace's name in the directory is made a
    symbolic link to another file (a user with write access to a shared
    trace directory can): the trim at exit cuts gpuspy's own file through
    its fd, and the other file keeps every byte. The trace stays whole."""
    victim = os.path.join(tmp, "victim")
    with open(victim, "wb") as f:
        f.write(b"precious" * 100000)
    d = os.path.join(tmp, "traces")
    os.mkdir(d, 0o700)
    p = subprocess.Popen([os.path.join(BIN, "prog_files"), "wait"], env=preload_env(d, GPUSPY_QUIET="1"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline() == "alloc 0\n", "the program did not start")
    t = traces(d)
    check(len(t) == 1, f"traces: {t}")
    real = os.path.join(tmp, "moved.gspy")
    os.rename(os.path.join(d, t[0]), real)
    os.symlink(victim, os.path.join(d, t[0]))
    p.communicate("go\n", timeout=TIMEOUT)
    check(p.returncode == 0, f"exit {p.returncode}")
    check(open(victim, "rb").read() == b"precious" * 100000, "the other file was changed")
    check(os.path.getsize(real) < 64 << 20, f"gpuspy's own file was not trimmed: {os.path.getsize(real)} bytes")
    proc, ev = dump(real)
    check([e["api"] for e in ev] == ["cuMemAlloc_v2"] and proc["clean_exit"], f"trace: {proc}, {ev}")


@test
def group_writable_trace_directory_is_refused(tmp):
    """A trace directory its group (not this process's own) may write, not
    sticky: refused with one warning (on stderr with GPUSPY_LOG=stderr;
    by default nowhere the program sees), nothing written, the program as
    untraced. With the sticky bit, or the process's own group, it is used."""
    d = os.path.join(tmp, "shared")
    os.mkdir(d)
    other = 1 if os.getegid() != 1 else 2
    os.chown(d, -1, other)
    os.chmod(d, 0o770)
    for log, want in (("stderr", f"gpuspy: GPUSPY_DIR {d} is writable by its group and not sticky; refusing it, "
                                 "tracing off\n"), ("", "")):
        p = subprocess.run([os.path.join(BIN, "prog_files")], env=preload_env(d, GPUSPY_LOG=log),
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and p.stdout == "alloc 0\n", f"program changed: {p.returncode} {p.stdout!r}")
        check(p.stderr == want, f"GPUSPY_LOG={log}: stderr: {p.stderr!r}")
    check(not os.listdir(d), f"written: {os.listdir(d)}")
    for mode, group in ((0o1770, other), (0o770, os.getegid())):
        os.chown(d, -1, group)
        os.chmod(d, mode)
        p = subprocess.run([os.path.join(BIN, "prog_files")], env=preload_env(d), capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and not p.stderr and len(traces(d)) == 1,
              f"mode {oct(mode)} group {group}: {p.stderr!r} {os.listdir(d)}")
        for f in traces(d):
            os.unlink(os.path.join(d, f))


@test
def warnings_go_to_the_stderr_the_process_started_with(tmp):
    """With GPUSPY_LOG=stderr, the program closes fd 2 and opens its own
    file there before its first CUDA call, on which gpuspy warns
    (GPUSPY_DIR is not a directory): the warning goes to the original
    stderr, and the program's file holds only the program's line."""
    own = os.path.join(tmp, "own.log")
    notdir = os.path.join(tmp, "file")
    open(notdir, "w").close()
    p = subprocess.run([os.path.join(BIN, "prog_files"), "stderr", own], env=preload_env(notdir, GPUSPY_LOG="stderr"),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout == "alloc 0\n", f"program changed: {p.returncode} {p.stdout!r}")
    check(open(own).read() == "the program's own line\n", f"own file: {open(own).read()!r}")
    check(p.stderr == f"gpuspy: GPUSPY_DIR {notdir} is not a directory; tracing off\n", f"stderr: {p.stderr!r}")


@test
def run_dir_survives_a_change_of_directory(tmp):
    """`gpuspy run --dir rel` with a command that changes directory before
    its first CUDA call: the trace lands in rel (run exports the absolute
    path), and run reports it instead of saying no CUDA call was made."""
    if PRELOAD_PREFIX:
        raise Skip("gpuspy run puts libgpuspy before the sanitizer runtime")
    prog = os.path.join(BIN, "prog_files")
    env = dict(os.environ, LD_LIBRARY_PATH=BIN)
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([GPUSPY, "run", "--dir", "rel", "--", prog, "chdir", "/"],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-300:]}")
    t = traces(os.path.join(tmp, "rel"))
    check(len(t) == 1, f"traces in rel: {t}; stderr {p.stderr[-300:]}")
    check("made no CUDA call" not in p.stderr + p.stdout, f"run said: {p.stderr[-300:]}")


@test
def longjmp_out_of_a_hook_keeps_recording(tmp):
    """A SIGALRM handler siglongjmps out of a blocking cuStreamSynchronize:
    the 16 calls made first after it from deeper frames (five levels of
    recursion with 16 KiB buffers, then a helper one small frame deeper)
    are recorded, each once (the runtime's cudaMalloc and cudaFree without
    their driver calls; none were: a deeper call was taken for one nested in
    the abandoned wait), and so are the 40 from the wait's own frame (none
    were: the thread's depth stayed raised); the wait itself, which never
    returned, is not."""
    p = run("prog_longjmp", tmp=tmp)
    check(p.stdout == "timed out of the wait; 40 calls after it, 16 from deeper frames\n", f"output: {p.stdout!r}")
    t = traces(tmp)
    check(len(t) == 1, f"expected one trace file, found {t}")
    _, ev = dump(os.path.join(tmp, t[0]))
    want = ["cuMemAlloc_v2", "cuMemFree_v2"] * 5 + ["cuLaunchKernel", "cudaMalloc", "cudaFree"]
    want += ["cuMemAlloc_v2", "cuLaunchKernel", "cuMemFree_v2"] + ["cuMemAlloc_v2", "cuMemFree_v2"] * 20
    got = [e["api"] for e in ev]
    check(got == want, f"events: {got}")
    sizes = [e["bytes"] for e in ev if e["api"] == "cuMemAlloc_v2"][:6]
    check(sizes == [1024, 2048, 3072, 4096, 5120, 256], f"allocation sizes from deeper frames: {sizes}")
    grids = [e.get("grid") for e in ev if e["api"] == "cuLaunchKernel"]
    check(grids == [[2, 1, 1], [1, 1, 1]], f"launch grids: {grids}")


@test
def first_cuda_calls_in_a_destructor_after_gpuspys(tmp):
    """A linked library's destructor, which runs after libgpuspy's, makes
    the process's first CUDA calls: the file they open is marked exited
    and trimmed (it said 'did not exit cleanly' and kept its 256 MiB),
    and both calls are in it."""
    p = run("prog_dtor", tmp=tmp, env={"GPUSPY_STACKS": "off"})
    check(p.stdout == "main: no CUDA\n" and "dtor: 0 0" in p.stderr, f"program: {p.stdout!r} {p.stderr!r}")
    t = traces(tmp)
    check(len(t) == 1, f"traces: {t}")
    size = os.path.getsize(os.path.join(tmp, t[0]))
    check(size < 8 << 20, f"not trimmed: {size} bytes")
    proc, ev = dump(os.path.join(tmp, t[0]))
    check(proc["clean_exit"] is True and proc["state"] == "exited", f"process line: {proc}")
    check([e["api"] for e in ev] == ["cudaMalloc", "cudaFree"], f"events: {ev}")


@test
def short_lived_threads_hand_their_chunks_on(tmp):
    """2,000 threads one after another, 5 calls each, in a 16 MiB buffer
    (256 chunks): every event is recorded with its own thread's id, none
    dropped; each thread takes over the chunk the one before it left
    (9,525 of 30,000 were dropped with 0.18% of the buffer used, and the
    report blamed a full buffer)."""
    p = run("prog_threads_many", tmp=tmp, env={"GPUSPY_BUFFER_MB": "16", "GPUSPY_STACKS": "off"})
    check(p.stdout == "2000 threads done\n", f"output: {p.stdout!r}")
    proc, ev = dump(os.path.join(tmp, traces(tmp)[0]))
    check(proc["events"] == 10000 and proc["dropped"] == 0 and proc["threads"] == 2000, f"process line: {proc}")
    check(len(ev) == 10000, f"{len(ev)} events")
    by_tid = {}
    for e in ev:
        by_tid.setdefault(e["tid"], []).append(e["api"])
    check(len(by_tid) == 2000, f"{len(by_tid)} thread ids")
    want = ["cuMemAlloc_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemFree_v2", "cuCtxSynchronize"]
    check(all(v == want for v in by_tid.values()), "a thread's calls are not its own")
    check(proc.get("chunks_reused", 0) >= 1990, f"chunks reused: {proc.get('chunks_reused')}")


@test
def calls_on_thread_exit_paths_are_recorded_and_losses_named(tmp):
    """2,000 threads, 13 calls each, 8 of them from a key destructor that
    runs after gpuspy's in all 4 of glibc's rounds, in a 16 MiB buffer, and
    before them a thread that kept a 1 MiB host allocation and ended with
    no CUDA call: all 26,001 calls recorded (the main thread's wait too),
    each with its own thread's id, none dropped. Before, 25,337 were
    dropped with 664 recorded, and the report said to raise the buffer: the
    kept block stopped every later thread from taking over a chunk, and a
    call in the last destructor round left its thread's chunk to nobody
    (without the block: 22,685 dropped, every chunk claimed for 0.9 MB of
    records). The block is counted apart, and the report says what became
    of it, not to raise the buffer."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    p = run("prog_threads_many", ["exit"], tmp=tmp,
            env={"GPUSPY_BUFFER_MB": "16", "GPUSPY_STACKS": "off", "GPUSPY_HOST_ALLOC_MIN": "1M"})
    check(p.stdout == "2000 threads done\n", f"output: {p.stdout!r}")
    g = os.path.join(tmp, traces(tmp)[0])
    proc, ev = dump(g)
    check(proc["events"] == 26001 and proc["dropped"] == 0 and proc.get("host_unwritten") == 1,
          f"process line: {proc}")
    by_tid = {}
    for e in ev:
        by_tid.setdefault(e["tid"], []).append(e["api"])
    check(by_tid.pop(proc["pid"], None) == ["cuCtxSynchronize"], "the main thread's wait")
    want = ["cuMemAlloc_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemFree_v2", "cuCtxSynchronize"]
    want += ["cuMemAlloc_v2", "cuMemFree_v2"] * 4
    check(len(by_tid) == 2000 and all(v == want for v in by_tid.values()),
          f"{len(by_tid)} threads; not all with their own 13 calls")
    p = subprocess.run([GPUSPY, "report", "--color", "never", g], capture_output=True, text=True, timeout=TIMEOUT)
    check("GPUSPY_BUFFER_MB" not in p.stdout and "0 dropped" in p.stdout, f"report:\n{p.stdout}")
    line = ("1 host allocation made before the first CUDA call not recorded: its thread ended before making "
            "one, or more than 4096 were live at once (not for want of buffer)")
    check(line in p.stdout, f"report:\n{p.stdout}")


@test
def a_threads_first_stacks_come_from_glibc(tmp):
    """unw_backtrace's first call on a thread fills a 256 KiB cache (~750 us
    on the development VM): a thread's first 256 stacks come from glibc's
    backtrace() instead, the rest from libunwind. Counted by a preloaded
    backtrace(): 1 warm-up call, then 256 a thread (all 600 with
    GPUSPY_STACKS=glibc, 20 of a 20-stack thread); and a site keeps one
    stack id across the change of unwinder."""
    if SANITIZED:
        raise Skip("the sanitizer runtime, preloaded first, takes backtrace() over")
    cases = [("on", ["1", "300"], 257), ("on", ["3", "300"], 1 + 3 * 256),
             ("on", ["2", "10"], 1 + 2 * 20), ("glibc", ["1", "300"], 1 + 600)]
    for mode, args, calls in cases:
        d = os.path.join(tmp, mode + "-" + "x".join(args))
        os.mkdir(d)
        p = run("prog_thread_stacks", args, tmp=d, env={
            "GPUSPY_STACKS": mode, "LD_PRELOAD": os.path.join(BIN, "libcount_backtrace.so") + ":" + LIB})
        check(f"backtrace calls: {calls}\n" in p.stderr, f"{mode} {args}: {p.stderr!r}, expected {calls} calls")
        ev, stacks = dump_stacks(os.path.join(d, traces(d)[0]))
        n = int(args[0]) * int(args[1])
        ids = {api: {e.get("stack") for e in ev if e["api"] == api} for api in ("cuMemAlloc_v2", "cuMemFree_v2")}
        check(sum(e["api"] == "cuMemAlloc_v2" for e in ev) == n and len(ids["cuMemAlloc_v2"]) == 1 and
              len(ids["cuMemFree_v2"]) == 1 and ids["cuMemAlloc_v2"] != ids["cuMemFree_v2"] and
              None not in ids["cuMemAlloc_v2"] and len(stacks) == 2, f"{mode} {args}: stack ids {ids}, {len(stacks)} stacks")
        src = open(os.path.join(os.path.dirname(__file__), "hostile", "prog_thread_stacks.c")).read().splitlines()
        lines = [i + 1 for i, l in enumerate(src) if "cuMemAlloc_v2(&a" in l or "cuMemFree_v2(a)" in l]
        check(sorted(f[0] for f in stacks.values()) == [f"work (prog_thread_stacks.c:{n})" for n in lines],
              f"{mode} {args}: {stacks}")


@test
def calls_after_exit_are_not_blamed_on_the_buffer(tmp):
    """A linked library's destructor (after gpuspy's) starts a thread that
    makes 2 calls: they are counted as after the exit, and the report says
    so instead of 'the buffer was full'."""
    p = run("prog_dtor", tmp=tmp, env={"HOSTILE_DTOR_THREAD": "1", "GPUSPY_STACKS": "off"})
    check(p.stdout == "main: 0\n" and "dtor thread: 0 0" in p.stderr, f"program: {p.stdout!r} {p.stderr!r}")
    proc, ev = dump(os.path.join(tmp, traces(tmp)[0]))
    check((proc["events"], proc["dropped"], proc.get("dropped_after_exit")) == (1, 2, 2), f"process line: {proc}")
    r = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True, timeout=TIMEOUT)
    check("2 events were not recorded: they came after gpuspy's exit handler had closed the trace" in r.stdout
          and "buffer was full" not in r.stdout, f"report: {r.stdout[:600]}")


@test
def strings_interned_after_the_trim_resolve(tmp):
    """main makes a call (its thread has a chunk), then a linked library's
    destructor, after gpuspy's trimmed the trace (the table moved down,
    64 KiB of room kept past its used bytes), reads the trace and makes
    two calls in a phase: a name and a call stack new to the string
    table. Both land in the room past what the table held at the trim
    (the stack's id is past it), and read back: the phase by its name,
    the stack's frames; nothing dropped, and the file is as the trim left
    it."""
    p = run("prog_dtor", tmp=tmp, env={"HOSTILE_DTOR_LATE": "1"})
    m = re.search(r"^trimmed (\d+) (\d+)$", p.stderr, re.M)
    check(p.stdout == "main: 0\n" and "late: 0 0" in p.stderr and m, f"program: {p.stdout!r} {p.stderr!r}")
    size, used = int(m[1]), int(m[2])
    path = os.path.join(tmp, traces(tmp)[0])
    h = header(path)
    check(h["chunk_count"] == 1 and h["strtab_offset"] == 4096 + CHUNK and
          h["strtab_size"] == (used + SLACK + 4095) & ~4095 and h["strtab_used"] > used and
          os.path.getsize(path) == size == h["file_size"] == h["strtab_offset"] + h["strtab_size"],
          f"size {size} at the trim, {os.path.getsize(path)} now, {used} bytes of strings then; header {h}")
    events, stacks = dump_stacks(path)
    got = [(e["kind"], e.get("name"), e.get("bytes")) for e in events]
    check(got == [("alloc", None, 4096), ("phase_begin", "late_phase", None), ("alloc", None, 1 << 20),
                  ("free", None, 1 << 20), ("phase_end", "late_phase", None)], f"events {got}")
    late = events[2]
    frames = stacks.get(late.get("stack"), [])
    check(late.get("stack", 0) > used and frames and frames[0].startswith("two_calls") and
          any(f.startswith("dtor_makes_cuda_calls") for f in frames), f"late stack {late.get('stack')}: {frames}")
    proc, _ = dump(path)
    check(proc["dropped"] == 0 and proc["clean_exit"], f"process line {proc}")


@test
def report_of_many_traces_keeps_memory_bounded(tmp):
    """`gpuspy report DIR` over 60 traces with call stacks (one trace of
    tests/progs/prog_stacks.c, copied): one symbolizer handle per distinct file
    instead of per trace keeps the peak under 100 MiB (it was ~16 MiB a
    trace: 60 traces ~1 GB), and the frames are still symbolized."""
    import shutil
    run("prog_stacks", ["4"], tmp=tmp)
    src = os.path.join(tmp, traces(tmp)[0])
    for i in range(59):
        shutil.copy(src, os.path.join(tmp, f"copy-{i}.gspy"))
    # A Python of its own whose only child is the report: its children's
    # peak is the report's alone.
    meter = ("import resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
             "sys.stdout.buffer.write(p.stdout)\n"
             "sys.stderr.write(f'{p.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}')\n")
    p = subprocess.run([sys.executable, "-c", meter, GPUSPY, "report", "--color", "never", tmp],
                       capture_output=True, timeout=TIMEOUT)
    rc, peak_kib = (int(x) for x in p.stderr.split()[-2:])
    check(rc == 0, f"report: exit {rc}")
    check(b"60 processes" in p.stdout and b"(prog_stacks.c:" in p.stdout, f"report: {p.stdout[:400]!r}")
    check(peak_kib < 100 * 1024, f"peak resident memory {peak_kib // 1024} MiB")


@test
def raw_fork_child_writes_its_own_file(tmp):
    """syscall(SYS_fork), which runs no fork handlers: the child's 10
    calls go to a trace of its own (the wiped-on-fork page sends its first
    record to the slow path, which starts the child's file), and the
    parent's trace holds its own 12 calls, whole and in order."""
    if "tsan" in PRELOAD_PREFIX:
        raise Skip("ThreadSanitizer's runtime does not survive a fork without its handlers")
    p = run("prog_rawfork", tmp=tmp, env={"GPUSPY_STACKS": "off"})
    check(p.stdout == "child exited 0\n", f"output: {p.stdout!r}")
    t = traces(tmp)
    check(len(t) == 2, f"traces: {t}")
    got = {}
    for f in t:
        proc, ev = dump(os.path.join(tmp, f))
        got[proc["pid"]] = (proc["ppid"], [(e["api"], e.get("bytes")) for e in ev])
    def seq(n):
        return [x for i in range(n) for x in (("cuMemAlloc_v2", 4096 * (i + 1)), ("cuMemFree_v2", 4096 * (i + 1)))]
    lens = sorted(len(v[1]) for v in got.values())
    check(lens == [10, 12], f"events per trace: {lens}")
    for pid, (ppid, ev) in got.items():
        if len(ev) == 12:
            check(ev == seq(3) + seq(3), f"parent's events: {ev}")
        else:
            check(ev == seq(5) and ppid in got, f"child's events: {ev} (ppid {ppid})")


@test
def raw_fork_while_the_modules_start_does_not_wait_for_them(tmp):
    """A second thread forks without fork handlers (syscall(SYS_fork))
    while the main thread's first call starts gpuspy's modules (CUPTI's
    start made a second long by a preloaded dlopen): the child inherited
    "starting" from its parent, with no start of its own to end it, and
    its first CUDA call waited the full 3 s bound (3.01 s). It now goes on
    at once and makes its own trace; the output is the untraced one."""
    if "tsan" in PRELOAD_PREFIX:
        raise Skip("ThreadSanitizer's runtime does not survive a fork without its handlers")
    slow = os.path.join(BIN, "libhostile_slow_cupti.so")
    want = "child's first call took under half a second\nchild exited 0\n"
    plain = run("prog_rawfork", ["start"], tmp=tmp, preload=False)
    p = run("prog_rawfork", ["start"], tmp=tmp, env={"GPUSPY_CUPTI": "on", "GPUSPY_STACKS": "off",
                                                     "LD_PRELOAD": PRELOAD_PREFIX + slow + ":" + LIB})
    check(p.stdout == plain.stdout == want, f"output: {p.stdout!r}, untraced {plain.stdout!r}")
    pids = sorted(dump(os.path.join(tmp, f))[0]["pid"] for f in traces(tmp))
    check(len(pids) == 2, f"traces: {traces(tmp)}")


@test
def a_tool_in_the_driver_answers_with_its_own_lookup(tmp):
    """A driver into which a tool has injected itself (as Nsight Compute
    does) answers the runtime's lookup of cuGetProcAddress with the tool's
    own function: the static runtime's calls are still all recorded (none
    were: that one answer was handed out unwrapped, and the runtime's
    whole table with it), and the program's output is unchanged."""
    for v in ("12000", "11030"):  # the 5- and the 4-argument ABI
        d = os.path.join(tmp, v)
        os.mkdir(d)
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BIN, "proctool") + ":" + BIN, GPUSPY_DIR=d,
                   GPUSPY_QUIET="1", FAKECUDART_GPA_VERSION=v)
        env.pop("LD_PRELOAD", None)
        plain = subprocess.run([os.path.join(BIN, "prog_rt_static")], env=env, capture_output=True, text=True,
                               timeout=TIMEOUT)
        env["LD_PRELOAD"] = PRELOAD_PREFIX + LIB
        p = subprocess.run([os.path.join(BIN, "prog_rt_static")], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == plain.returncode == 0 and p.stdout == plain.stdout, f"{v}: output changed")
        check(len(traces(d)) == 1, f"{v}: traces {traces(d)}: nothing recorded")
        _, ev = dump(os.path.join(d, traces(d)[0]))
        compare(ev, rt_expected("drv", False))  # the runtime scenario's expected events


LIVE_OUT = "batch 1 done 0\nbatch 2 done 0\n"


def live(tmp, change, linger_ms=0, env=None):
    """tests/hostile/prog_live.c with its trace changed by change(path,
    pid) between its two batches of calls; (exit status, stdout, stderr)."""
    e = preload_env(tmp, GPUSPY_QUIET="1", GPUSPY_NVML_MS="10", FAKENVML="util=50", TMPDIR=tmp)
    e.update(LD_LIBRARY_PATH=os.path.join(BIN, "nvml") + ":" + BIN, **(env or {}))
    p = subprocess.Popen([os.path.join(BIN, "prog_live"), str(linger_ms)], env=e, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    t = traces(tmp)
    if first == "batch 1 done 0\n" and len(t) == 1:
        change(os.path.join(tmp, t[0]), p.pid)
    try:
        out, err = p.communicate("go\n", timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise Fail(f"hung: {first + out!r} {err[-300:]!r}")
    return p.returncode, first + out, err


def overwrite(path, field, value):
    off, size = HEADER_FIELDS[field]
    with open(path, "r+b") as f:
        f.seek(off)
        f.write((value % (1 << (8 * size))).to_bytes(size, "little"))


@test
@slow
def header_fields_overwritten_while_it_runs(tmp):
    """The trace's owner overwrites a field of its header while the program
    runs (between two batches of calls; the second claims more chunks
    than the 1 MiB buffer has, on two threads, and adds call stacks to the
    string table; GPUSPY_DEBUG makes a note at exit): the library
    takes no address, size or identity back from the file, so the program
    exits 0 with its output, a note claims no room past notes_used's
    area, and a changed pid starts no second file (the
    fork check unmapped the file under the control thread, which read it
    a second later: SIGSEGV)."""
    values = {"pid": lambda pid: pid + 1, "chunk_count": lambda pid: -16, "strtab_offset": lambda pid: 1 << 40,
              "chunk_offset": lambda pid: 1 << 40, "chunk_size": lambda pid: -256, "strtab_size": lambda pid: 1 << 40,
              "strtab_used": lambda pid: -16, "chunks_claimed": lambda pid: 0, "notes_used": lambda pid: -16}
    bad = []
    for field, value in values.items():
        d = os.path.join(tmp, field)
        os.mkdir(d)
        rc, out, err = live(d, lambda path, pid: overwrite(path, field, value(pid)),
                            linger_ms=1200 if field == "pid" else 0, env={"GPUSPY_BUFFER_MB": "1", "GPUSPY_DEBUG": "1"})
        if (rc, out) != (0, LIVE_OUT) or len(traces(d)) != 1:
            bad.append(f"{field}: exit {rc}, output {out!r}, traces {traces(d)}, stderr {err[-200:]!r}")
        elif field == "notes_used":  # GPUSPY_DEBUG's note at exit found no room, and said so
            proc, _ = dump(os.path.join(d, traces(d)[0]))
            if "notes" in proc or proc.get("notes_lost") != 1:
                bad.append(f"notes_used: notes {proc.get('notes')!r}, lost {proc.get('notes_lost')}")
    check(not bad, "\n".join(bad))


@test
def thread_cancelled_in_the_first_cuda_call(tmp):
    """A thread is cancelled (deferred) while it makes the process's first
    CUDA calls, where gpuspy makes its trace file: the program exits 0
    within the timeout with its untraced output (it hung: the thread died
    in open() holding the writer's lock, and main's next call waited on
    it for ever), and main's calls are recorded after the thread's."""
    want = "thread: cancelled\nmain: 0 0\n"
    a = run("prog_cancel", tmp=tmp, preload=False)
    check(a.stdout == want, f"untraced: {a.stdout!r}")
    try:
        b = subprocess.run([os.path.join(BIN, "prog_cancel")], env=preload_env(tmp, GPUSPY_QUIET="1"),
                           capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        raise Fail("the program hung")
    check((b.returncode, b.stdout) == (0, want), f"traced: exit {b.returncode}, {b.stdout!r}")
    _, ev = dump(os.path.join(tmp, traces(tmp)[0]))
    got = [(e["api"], e.get("bytes")) for e in ev]
    check(got[-2:] == [("cuMemAlloc_v2", 8192), ("cuMemFree_v2", 8192)], f"events: {got}")


@test
def trace_emptied_while_it_runs(tmp):
    """`: > trace.gspy` (logrotate's copytruncate) between two batches of
    calls, whose stores into the mapped file then lie past its end
    (SIGBUS), and gpuspy's own threads still read its header: the program
    exits 0 with its output, gpuspy says once (from its signal handler) on
    stderr with GPUSPY_LOG=stderr, or as one line naming the pid in a
    GPUSPY_LOG file and nothing on stderr, that recording stopped, and
    leaves the file empty. The reader refuses the empty file with one line
    (no signal)."""
    d = os.path.join(tmp, "t")
    os.mkdir(d)
    emptied = []

    def empty(path, pid):
        open(path, "r+b").truncate(0)
        emptied.append(path)
    rc, out, err = live(d, empty, linger_ms=1200, env={"GPUSPY_QUIET": "0", "GPUSPY_LOG": "stderr"})
    check((rc, out) == (0, LIVE_OUT), f"exit {rc}, output {out!r}, stderr {err[-300:]!r}")
    check(emptied and err == f"gpuspy: the trace file {emptied[0]} was cut while the program ran "
          "(emptied or truncated by another process); recording stopped\n", f"stderr: {err!r}")
    check(os.path.getsize(emptied[0]) == 0 and traces(d) == [os.path.basename(emptied[0])],
          f"files: {traces(d)}, size {os.path.getsize(emptied[0])}")
    p = subprocess.run([GPUSPY, "dump", emptied[0]], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and p.stderr.count("\n") == 1 and p.stderr.startswith("gpuspy: error:"),
          f"dump of the empty file: exit {p.returncode}, {p.stderr!r}")
    d = os.path.join(tmp, "logged")
    os.mkdir(d)
    log = os.path.join(tmp, "gpuspy.log")
    pids = []
    rc, out, err = live(d, lambda path, pid: (pids.append(pid), empty(path, pid)), linger_ms=1200,
                        env={"GPUSPY_QUIET": "0", "GPUSPY_LOG": log})
    check((rc, out, err) == (0, LIVE_OUT, "") and open(log).read() ==
          f"gpuspy[{pids[0]}]: the trace file {emptied[1]} was cut while the program ran (emptied or truncated by "
          "another process); recording stopped\n", f"GPUSPY_LOG=file: exit {rc}, {err!r}, log {open(log).read()!r}")


@test
def log_file_is_made_only_by_a_process_with_something_to_say(tmp):
    """GPUSPY_LOG=gpuspy.log (relative: each process's own start directory)
    and a preloaded program that makes no CUDA call and has nothing to say
    (ls, as a shell or make runs them): every such process made an empty
    gpuspy.log where it started, and ls listed it ("gpuspy.log\n", not
    ""). The file is now made by the first message: ls lists what it
    lists untraced and leaves nothing; a process with a message (an
    option it cannot read) still appends it to gpuspy.log in the
    directory it started in."""
    ls = shutil.which("ls")
    if not ls:
        raise Skip("no ls")
    d = os.path.join(tmp, "empty")
    os.mkdir(d)
    env = preload_env(tmp, GPUSPY_LOG="gpuspy.log", GPUSPY_QUIET="0")
    a = subprocess.run([ls], cwd=d, env=dict(env, LD_PRELOAD=PRELOAD_PREFIX), capture_output=True, text=True,
                       timeout=TIMEOUT)
    b = subprocess.run([ls], cwd=d, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    check((b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr) == (0, "", ""),
          f"ls: {b.returncode} {b.stdout!r} {b.stderr!r}")
    check(os.listdir(d) == [], f"left in the directory: {os.listdir(d)}")
    p = subprocess.run([ls], cwd=d, env=dict(env, GPUSPY_CUPTI_FLUSH="abc"), capture_output=True, text=True,
                       timeout=TIMEOUT)
    check((p.returncode, p.stderr) == (0, ""), f"ls with a message: {p.returncode} {p.stderr!r}")
    log = open(os.path.join(d, "gpuspy.log")).read()
    check(re.fullmatch(r"gpuspy\[\d+\]: GPUSPY_CUPTI_FLUSH=abc is not a number of seconds \(1\.\.3600\); using 5\n",
                       log) and p.stdout == "gpuspy.log\n", f"log: {log!r}, ls: {p.stdout!r}")


@test
def log_file_appends_whole_lines_and_refuses_a_link(tmp):
    """GPUSPY_LOG=FILE: four processes (tests/hostile/prog_notes: the traced
    one and three forked) each say 300 messages of 200 bytes at once. The
    file is made with mode 0600 and holds each as one whole line,
    "gpuspy[PID]: ...", in its process's order; a second run appends after
    them. The programs' output is as untraced. A name that is a symbolic
    link is refused (its target keeps every byte) and so is a path that
    cannot be opened: no log, nothing on stderr either, the note still in
    the trace."""
    log = os.path.join(tmp, "gpuspy.log")
    d = os.path.join(tmp, "t")
    os.mkdir(d)
    env = preload_env(d, GPUSPY_LOG=log, GPUSPY_QUIET="0")
    a = subprocess.run([os.path.join(BIN, "prog_notes"), "300", "200", "4"], env=dict(env, LD_PRELOAD=PRELOAD_PREFIX),
                       capture_output=True, text=True, timeout=TIMEOUT)
    b = subprocess.run([os.path.join(BIN, "prog_notes"), "300", "200", "4"], env=env, capture_output=True,
                       text=True, timeout=TIMEOUT)
    check((b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr) == (0, "notes done\n", ""),
          f"output: {b.returncode} {b.stdout!r} {b.stderr!r}")
    check(os.stat(log).st_mode & 0o777 == 0o600, f"log mode {oct(os.stat(log).st_mode)}")
    lines = open(log, "rb").read().split(b"\n")
    check(lines[-1] == b"" and len(lines) == 1201, f"{len(lines) - 1} lines")
    seen = {}
    for line in lines[:-1]:
        m = re.fullmatch(rb"gpuspy\[(\d+)\]: p([0-3]) m(\d{4}) (x+)", line)
        check(m and len(m.group(4)) == 191, f"not a whole line: {line[:80]!r}... ({len(line)} bytes)")
        seen.setdefault(int(m.group(2)), []).append((int(m.group(1)), int(m.group(3))))
    pid = dump(os.path.join(d, traces(d)[0]))[0]["pid"]
    check(sorted(seen) == [0, 1, 2, 3] and len({v[0][0] for v in seen.values()}) == 4 and seen[0][0][0] == pid and
          all(v == [(v[0][0], i) for i in range(300)] for v in seen.values()), "a process's lines missing or out of order")
    subprocess.run([os.path.join(BIN, "prog_notes"), "2", "20"], env=env, check=True, capture_output=True,
                   timeout=TIMEOUT)
    more = open(log, "rb").read().split(b"\n")
    check(more[:1200] == lines[:1200] and len(more) == 1203 and
          [re.sub(rb"^gpuspy\[\d+\]: ", b"", l) for l in more[1200:1202]] == [b"p0 m0000 " + b"x" * 11,
                                                                         b"p0 m0001 " + b"x" * 11],
          f"appended: {more[1200:]!r}")
    target = os.path.join(tmp, "target")
    with open(target, "wb") as f:
        f.write(b"precious\n")
    link = os.path.join(tmp, "link.log")
    os.symlink(target, link)
    for name, where in (("link", link), ("nowhere", os.path.join(tmp, "none", "x.log"))):
        d = os.path.join(tmp, name)
        os.mkdir(d)
        e = preload_env(d, GPUSPY_LOG=where, GPUSPY_QUIET="0", GPUSPY_CUPTI_FLUSH="abc")
        p = subprocess.run([os.path.join(BIN, "prog_files")], env=e, capture_output=True, text=True, timeout=TIMEOUT)
        check((p.returncode, p.stdout, p.stderr) == (0, "alloc 0\n", ""), f"{name}: {p.returncode} {p.stderr!r}")
        check(notes(d) == ["GPUSPY_CUPTI_FLUSH=abc is not a number of seconds (1..3600); using 5"],
              f"{name}: notes {notes(d)!r}")
    check(open(target, "rb").read() == b"precious\n" and os.path.islink(link), "the link's target was written")
    check(not os.path.exists(os.path.join(tmp, "none")), "a directory was made for the log")


@test
def log_file_of_another_user_or_a_fifo_is_refused(tmp):
    """GPUSPY_LOG naming a file another user made there (its bytes kept),
    or a FIFO (no reader: the open must not block, and no line goes into
    it): no log, nothing on stderr, the note still in the trace."""
    theirs = os.path.join(tmp, "theirs.log")
    with open(theirs, "wb") as f:
        f.write(b"theirs\n")
    fifo = os.path.join(tmp, "fifo.log")
    os.mkfifo(fifo)
    uid = 65534 if os.geteuid() != 65534 else 65533
    try:
        os.chown(theirs, uid, uid)
    except PermissionError:
        raise Skip("cannot give a file to another user here (not root)")
    os.chmod(theirs, 0o666)
    for name, where in (("theirs", theirs), ("fifo", fifo)):
        d = os.path.join(tmp, name)
        os.mkdir(d)
        e = preload_env(d, GPUSPY_LOG=where, GPUSPY_QUIET="0", GPUSPY_CUPTI_FLUSH="abc")
        p = subprocess.run([os.path.join(BIN, "prog_files")], env=e, capture_output=True, text=True, timeout=TIMEOUT)
        check((p.returncode, p.stdout, p.stderr) == (0, "alloc 0\n", ""), f"{name}: {p.returncode} {p.stderr!r}")
        check(notes(d) == ["GPUSPY_CUPTI_FLUSH=abc is not a number of seconds (1..3600); using 5"],
              f"{name}: notes {notes(d)!r}")
    check(open(theirs, "rb").read() == b"theirs\n", "another user's file was written")


@test
def control_thread_that_cannot_start_is_a_note(tmp):
    """No thread can start (pthread_create fails: how gpuspy's control
    thread failed on the H200 in programs linked with cuBLAS, cuSPARSE or
    cuSOLVER, which then printed gpuspy's line): the program's output and
    stderr are what they are untraced with the same pthread_create; the
    trace keeps it as its one note, which the report shows."""
    if SANITIZED:
        raise Skip("the sanitizer's own pthread_create comes first and reaches libc's, not the failing one")
    nothreads = os.path.join(BIN, "libhostile_nothreads.so")
    e = preload_env(tmp, GPUSPY_QUIET="0", GPUSPY_CUPTI="off")
    a = subprocess.run([os.path.join(BIN, "prog_files")], env=dict(e, LD_PRELOAD=PRELOAD_PREFIX + nothreads),
                       capture_output=True, text=True, timeout=TIMEOUT)
    b = subprocess.run([os.path.join(BIN, "prog_files")], env=dict(e, LD_PRELOAD=PRELOAD_PREFIX + nothreads + ":" + LIB),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check((b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr) == (0, "alloc 0\n", ""),
          f"traced: {b.returncode} {b.stdout!r} {b.stderr!r}")
    want = "cannot start the control thread: `gpuspy start`/`stop` will not reach this process"
    check(notes(tmp) == [want], f"notes {notes(tmp)!r}")
    check(f"   gpuspy's notes:\n     {want}\n" in report_text(tmp), "the report does not show the note")


# A note of someone else's making: escape sequences (the title, a clear
# screen, C1 CSI as UTF-8 and as a byte), DEL, CR, NUL, a byte that is not
# UTF-8 and the end of a <script>.
EVIL_NOTE = b"n\x1b]0;pwned\x07 \x1b[2J\xc2\x9b6n\x9b\x7f\r\x00</script><b>x\xff"


def put_notes(path, used, lost, area):
    with open(path, "r+b") as f:
        for field, value in (("notes_used", used), ("notes_lost", lost)):
            f.seek(HEADER_FIELDS[field][0])
            f.write(value.to_bytes(4, "little"))
        f.seek(HEADER_FIELDS["notes"][0])
        f.write(area.ljust(1024, b"\0"))


@test
def hostile_notes_are_bounded_and_escaped(tmp):
    """A trace whose notes someone else wrote: notes_used past the area
    (0xffffffff), 4294967295 lost, the area full of EVIL_NOTE lines, the
    last cut without its newline; and one whose notes_used (7) ends inside an escape
    sequence. The report reads no byte past the area or notes_used, closes
    the cut last line, shows each line with every control byte as text
    (--color never and always), --json and the dump are valid JSON with
    the same lines (invalid bytes as U+FFFD), and the page (--html) holds
    no raw </script><b> of the notes."""
    run_env = preload_env(tmp, GPUSPY_QUIET="1")
    subprocess.run([os.path.join(BIN, "prog_files")], env=run_env, check=True, capture_output=True, timeout=TIMEOUT)
    path = os.path.join(tmp, traces(tmp)[0])
    area = ((EVIL_NOTE + b"\n") * 40)[:1024]
    put_notes(path, 0xffffffff, 0xffffffff, area)
    pieces = [p for p in area.replace(b"\0", b"").split(b"\n") if p]
    check(len(pieces) == 27 and pieces[26] == b"n\x1b]0;pwned", f"{len(pieces)} lines")  # 26 whole, 1 cut
    shown = b"n\\x1b]0;pwned\\x07 \\x1b[2J\\u009b6n\\x9b\\x7f\\x0d</script><b>x\\xff"
    ours = (b"\x1b[1m", b"\x1b[33m", b"\x1b[0m")
    for color in ("never", "always"):
        p = subprocess.run([GPUSPY, "report", "--color", color, path], capture_output=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"--color {color}: exit {p.returncode} {p.stderr[-300:]!r}")
        check(not control_bytes(p.stdout, ours if color == "always" else ()),
              f"--color {color}: control bytes {control_bytes(p.stdout)[:8]}")
        section = p.stdout.split(b"   gpuspy's notes:\n")[1].split(b"   gpuspy's own time")[0].splitlines()
        check(len(section) == 28 and section[:26] == [b"     " + shown] * 26 and
              section[26] == b"     n\\x1b]0;pwned" and
              section[27] == b"     4294967295 more notes were lost: the trace keeps 1024 bytes of notes",
              f"--color {color}: notes section {section[:2]} ... {section[-2:]}")
    want = [x.decode("utf-8", errors="replace") for x in pieces]
    j = report_json(path)["processes"][0]
    check(j["notes"] == want and len(want) == 27 and j["notes_lost"] == 0xffffffff,
          f"--json: {j['notes'][:1]!r} {len(j['notes'])}")
    proc, _ = dump(path)
    check(proc["notes"] == j["notes"] and proc["notes_lost"] == 0xffffffff, f"dump: {proc['notes'][:1]!r}")
    page = os.path.join(tmp, "page.html")
    subprocess.run([GPUSPY, "report", "--html", page, path], check=True, capture_output=True, timeout=TIMEOUT)
    html = open(page, "rb").read()
    check(b"<b>x" not in html and html.count(b"</script>") == html.count(b"<script"), "the page holds the note raw")
    put_notes(path, 7, 0, area)
    check(notes(tmp) == ["n\x1b]0;pw"], f"notes_used 7: {notes(tmp)!r}")
    text = report_text(path)
    check("   gpuspy's notes:\n     n\\x1b]0;pw\n   gpuspy's own time" in text, f"notes_used 7: {text[:600]}")


@test
def misplaced_string_table_is_refused(tmp):
    """A format-3 trace whose header puts its string table over the chunks
    (inside the last one, or at the first), past the end of the file the
    header itself gives, or that says it is format 2 (the table first) over
    format 3's bytes: dump, report and export refuse it with one line
    saying the header is corrupt; top skips it. One whose table lies past
    the end of the file as it is (a copy cut short, the header whole)
    reads as cut: every event, the kernels "(unknown)" (host functions
    and graphs are named without it), one warning."""
    run("prog_drv", tmp=tmp)
    good = os.path.join(tmp, traces(tmp)[0])
    h = header(good)
    check(h["version"] == 3 and h["chunk_count"] == 1 and h["strtab_offset"] == 4096 + CHUNK, f"layout {h}")
    _, whole = dump(good)
    data = open(good, "rb").read()
    os.unlink(good)

    def patched(**fields):
        b = bytearray(data)
        for k, v in fields.items():
            off, n = HEADER_FIELDS[k]
            b[off:off + n] = v.to_bytes(n, "little")
        return bytes(b)
    end = lambda off: off + h["strtab_size"]  # noqa: E731: a file_size that agrees with the offset
    bad = {"overlap": patched(strtab_offset=4096 + CHUNK - 64, file_size=end(4096 + CHUNK - 64)),
           "first": patched(strtab_offset=4096, file_size=end(4096)),
           "past": patched(strtab_size=h["strtab_size"] + 4096),
           "v2": patched(version=2)}
    for name, b in bad.items():
        path = os.path.join(tmp, f"{name}.gspy")
        with open(path, "wb") as f:
            f.write(b)
        for args in (["dump", path], ["report", path],
                     ["export", "--format", "chrome", "-o", os.path.join(tmp, "o.json"), path]):
            p = subprocess.run([GPUSPY, *args], capture_output=True, text=True, timeout=TIMEOUT)
            check(p.returncode == 1 and p.stderr == f"gpuspy: error: {path}: corrupt header (inconsistent sizes)\n",
                  f"{name} {args[0]}: exit {p.returncode}, {p.stderr!r}")
        p = subprocess.run([GPUSPY, "top", "--once", "--json", tmp], capture_output=True, text=True, timeout=TIMEOUT)
        check((p.returncode, p.stdout, p.stderr) == (0, "[]\n", ""), f"{name} top: {p.returncode} {p.stderr!r}")
        os.unlink(path)
    far = os.path.join(tmp, "far.gspy")
    with open(far, "wb") as f:
        f.write(patched(strtab_offset=1 << 40, file_size=end(1 << 40)))
    p = subprocess.run([GPUSPY, "dump", far], capture_output=True, text=True, timeout=TIMEOUT)
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    got = [x for x in lines if x["type"] == "event"]
    check(p.returncode == 0 and p.stderr.count("\n") == 1 and "truncated" in p.stderr and len(got) == len(whole) and
          {e["name"] for e in got if e["kind"] == "launch"} == {"(unknown)", "(graph)", "(host function)"} and
          lines[0]["truncated"] and {e["name"] for e in whole if e["kind"] == "launch"} > {"(graph)", "(host function)"},
          f"table past the file: exit {p.returncode}, {p.stderr!r}, {len(got)} of {len(whole)} events")
