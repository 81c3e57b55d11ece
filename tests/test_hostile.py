# SPDX-License-Identifier: MIT
"""Programs written to break gpuspy: start-up, interposers, signals, fork,
threads that end or are cancelled, exit paths (the trace's and the log's
files under attack are test_hostile_files.py's).

Each test reproduces one way a real job could hang,
crash or change behaviour under gpuspy, and asserts what the program did."""
import os
import re
import subprocess
import sys
import time

from harness import (BIN, CHUNK, GPUSPY, HOST_LIB, LIB, PRELOAD_PREFIX, SANITIZED, SLACK, SYS_PY, TIMEOUT, Fail, Skip,
                     check, compare, dump, dump_stacks, header, only_trace, run, run_py, slow, test, traces)
from test_routes import rt_expected


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
    # mask's handler ends the program with _exit(0): a crash handler's exit,
    # said with the signal it took, not as a clean end. (The sanitizers'
    # own _exit goes straight to libc's: never marked.)
    if SANITIZED:
        return
    text = subprocess.run([GPUSPY, "report", "--color", "never", os.path.join(tmp, "mask")], capture_output=True,
                          text=True, timeout=TIMEOUT).stdout
    lines = text.split("\n== ")[1].splitlines()
    check(lines[1].startswith("   host vm, exited by _exit, status 0, ") and
          lines[2] == "   fatal signal 11 was passed to the program's own handler, which then called _exit(0)",
          "\n".join(lines[:3]))


def preload_env(tmp, **extra):
    """The environment of a program run here by hand: libgpuspy preloaded,
    the doubles on the library path, its traces in tmp, and extra."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, LD_PRELOAD=PRELOAD_PREFIX + LIB, **extra)
    return env


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
    if SANITIZED:
        # ASan's quarantine alone keeps up to 256 MiB of freed memory.
        raise Skip("read and symbolized; a sanitizer's quarantine and shadow make the peak not ours")
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
    if SANITIZED:
        # Under ASan the shim's slow start does not hold the fork (a run
        # takes 0.02 s, not 1 s), and 1 run in 4 the child makes its own
        # slow start instead: the situation tested does not arise. TSan's
        # runtime does not survive a fork without its handlers.
        raise Skip("the sanitizers change the start's order: the fork does not come during it")
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
def a_vfork_childs_exit_is_not_its_parents(tmp):
    """A vfork child runs in its parent's memory: its _exit(255) after a
    failed exec (Python's subprocess when the program is missing) must not
    become the status of the parent's later _exit(7). And a Python program
    that catches the missing program and ends with os._exit(0) exits 0."""
    p = run("prog_vfork", ["vfork"], tmp=tmp, expect_rc=7, env={"GPUSPY_CUPTI": "on"})
    check(p.stdout == "child exited 255\n", f"stdout {p.stdout!r}")
    h, _ = only_trace(tmp)
    # (The sanitizers' own _exit goes straight to libc's: never marked.)
    check(SANITIZED or (h["state"], h.get("exit_code")) == ("exited", 7),
          f"trace: state {h['state']}, code {h.get('exit_code')}")
    code = ("import os, subprocess\n"
            "try:\n    subprocess.run(['/nonexistent/gpuspy-missing-tool'])\n"
            "except FileNotFoundError:\n    print('missing')\n"
            "os._exit(0)\n")
    for preload in (False, True) if not SANITIZED else ():  # Python under a sanitized preload is not run
        q = run_py(["-c", code], tmp, preload=preload)
        check((q.returncode, q.stdout) == (0, "missing\n"), f"preload {preload}: {q.returncode} {q.stdout!r}")


@test
def a_raw_fork_childs_exit_leaves_cupti_alone(tmp):
    """A child of fork by system call runs no fork handler: it has the
    parent's CUPTI state but none of CUPTI's threads (the double ends a
    child that flushes, with 98, as the real one may hang there), and the
    parent's trace mapped. Its exit(5) runs the atexit handlers and
    destructors it inherited, gpuspy's among them: they are the parent's,
    never the child's (the writer's end trimmed the parent's file under
    it). The parent's 3 calls after it are recorded, 6 allocations and
    frees in all, and its trace ends exited."""
    p = run("prog_vfork", ["rawexit"], tmp=tmp, env={"GPUSPY_CUPTI": "on"})
    check(p.stdout == "child exited 5\n" and "fakecupti" not in p.stderr, f"{p.stdout!r} {p.stderr!r}")
    h, ev = only_trace(tmp)
    calls = [e["api"] for e in ev if e["kind"] in ("alloc", "free")]
    check(h["state"] == "exited" and calls == ["cuMemAlloc_v2", "cuMemFree_v2"] * 6, f"{h['state']}: {calls}")


@test
def a_handler_chaining_to_gpuspys_still_aborts(tmp):
    """The program puts its SIGABRT handler in front of gpuspy's and chains
    to it, then abort(): the process dies of SIGABRT as untraced, and the
    program's handler stays. Passed on with its siginfo (abort's: sent by
    the process itself), the trace is flushed and marked signaled, by 6.
    Passed on with none (NULL), gpuspy reads no siginfo it was not given
    and cannot tell abort's from a kill the program lives through: the
    trace stays running, as a killed process's."""
    for args, state in ((["abortchain", "info"], "signaled"), (["abortchain"], "running or killed")):
        d = os.path.join(tmp, args[-1])
        os.makedirs(d)
        for preload in (False, True):
            p = run("prog_vfork", args, tmp=d, preload=preload, expect_rc=-6, env={"GPUSPY_CUPTI": "on"})
            check(p.stdout == "the program's handler ran\n", f"{args} preload {preload}: stdout {p.stdout!r}")
        h, _ = only_trace(d)
        check(h["state"] == state and (state != "signaled" or h.get("exit_signal") == 6),
              f"{args}: trace {h['state']}, {h.get('exit_signal')}")


PY_HOSTILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "progs", "py_hostile.py")


def py_hostile(tmp, mode, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSPY_")}
    env.update(GPUSPY_DIR=tmp, LD_LIBRARY_PATH=BIN, GPUSPY_HOST_ALLOC_MIN="1M",
               LD_PRELOAD=PRELOAD_PREFIX + LIB + ":" + HOST_LIB, **extra)
    return subprocess.run([SYS_PY, PY_HOSTILE, mode, os.path.join(BIN, "libcudart.so.13")], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def need_py311():
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    v = subprocess.run([SYS_PY, "-c", "import sys; print(sys.version_info >= (3, 11))"], capture_output=True,
                       text=True).stdout.strip()
    if v != "True":
        raise Skip("needs CPython 3.11 or later")


@test
def no_collection_runs_inside_a_recorded_realloc(tmp):
    """CPython 3.11 makes frame objects only when asked for them, and making
    one may start a collection. Lists grown past GPUSPY_HOST_ALLOC_MIN
    realloc their items (recorded, with the Python frames) after glibc
    freed the old ones and before the list points at the new: a
    collection then would walk freed memory. With the collector at every
    allocation, the program runs as untraced, and its reallocs carry its
    lines: 50 lists of 200,000 items, each realloc's innermost Python
    frame `grow` at the `item *= 2000` line."""
    need_py311()
    p = py_hostile(tmp, "gc")
    check((p.returncode, p.stdout) == (0, "10000000\n"), f"rc {p.returncode}, {p.stdout!r} {p.stderr[-400:]!r}")
    t = traces(tmp)
    check(len(t) == 1, f"traces {t}")
    ev, stacks = dump_stacks(os.path.join(tmp, t[0]))
    line = next(i for i, l in enumerate(open(PY_HOSTILE), 1) if "item *= 2000" in l)
    grown = [e for e in ev if e["api"] == "realloc" and e.get("bytes", 0) >= 1 << 20]
    at = [next((f for f in stacks[e["stack"]] if ".py:" in f), None) for e in grown if e.get("stack")]
    want = f"grow ({PY_HOSTILE}:{line})"
    check(len(grown) >= 50 and len(at) == len(grown) and all(f == want for f in at),
          f"{len(grown)} reallocs, frames {sorted(set(at))[:3]}, want {want}")


@test
def a_sub_interpreter_does_not_make_frames_read_without_the_gil(tmp):
    """Once a sub-interpreter exists, CPython's PyGILState_Check says yes
    to every thread. A thread that released the GIL (ctypes.CDLL) then
    calls cudaMalloc: gpuspy must read its frames raw, not through the C
    API (which would read a thread state that is not there). The program
    prints the call's result, 0, and the allocation's Python frame is the
    line that made it."""
    need_py311()
    p = py_hostile(tmp, "subinterp")
    check((p.returncode, p.stdout) == (0, "0\n"), f"rc {p.returncode}, {p.stdout!r} {p.stderr[-400:]!r}")
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    line = next(i for i, l in enumerate(open(PY_HOSTILE), 1) if "LINE_SUBINTERP" in l)
    alloc = [e for e in ev if e["api"] == "cudaMalloc" and e.get("bytes") == 2 << 20]
    check(len(alloc) == 1 and alloc[0].get("stack") and
          [f for f in stacks[alloc[0]["stack"]] if ".py:" in f] == [f"<module> ({PY_HOSTILE}:{line})"],
          f"alloc {alloc}, frames {[stacks.get(e.get('stack')) for e in alloc]}")


@test
def a_thread_without_the_gil_never_gets_anothers_frames(tmp):
    """Before 3.12, CPython's current thread state is the GIL holder's,
    whichever thread that is: a thread that released the GIL (ctypes.CDLL)
    and calls CUDA while another thread runs Python must not take that
    state for its own (it read the spinner's frames, through the C API,
    without the GIL). With frames read through the C API (the layout not
    learned: py_hostile.py threads), the 600 calls all succeed and none
    carries a frame of the spinning thread's."""
    need_py311()
    p = py_hostile(tmp, "threads", GPUSPY_TORCH="0")
    check((p.returncode, p.stdout) == (0, "0\n"), f"rc {p.returncode}, {p.stdout!r} {p.stderr[-400:]!r}")
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    calls = [e for e in ev if e["api"] in ("cudaMalloc", "cudaFree") and e.get("bytes") == 4096]
    wrong = [stacks[e["stack"]] for e in calls if e.get("stack") and
             any("spinner_function" in f for f in stacks[e["stack"]])]
    check(len(calls) == 600 and not wrong, f"{len(calls)} calls, {len(wrong)} with the spinner's frames: {wrong[:1]}")


@test
def gpuspy_holds_no_descriptor_under_100(tmp):
    """What gpuspy keeps open for the process's life (the trace, the NVML
    sampler's device lock, libunwind's pipe) sits at 100 or above: a
    program expects the low numbers free, may close them and open its
    own files there, and gpuspy would then write into those. prog_files
    waits on stdin after its first call while the test reads its
    descriptors: under 100, the same numbers as untraced (the test's own
    pipes), with CUPTI, the NVML double and call stacks on; gpuspy's
    are the trace, the lock and a pipe's two ends."""
    if SANITIZED:
        raise Skip("a sanitizer's runtime keeps descriptors of its own; the stacks are glibc's under TSan")
    def fds(preload):
        env = dict(os.environ, GPUSPY_DIR=tmp, GPUSPY_QUIET="1", GPUSPY_NVML_MS="10", FAKENVML="util=50",
                   GPUSPY_CUPTI="on", TMPDIR=tmp, LD_LIBRARY_PATH=os.path.join(BIN, "nvml") + ":" + BIN)
        env.pop("LD_PRELOAD", None)
        if preload:
            env["LD_PRELOAD"] = PRELOAD_PREFIX + LIB
        p = subprocess.Popen([os.path.join(BIN, "prog_files"), "wait"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            check(p.stdout.readline() == "alloc 0\n", "first call")
            lock = os.path.join(tmp, "gpuspy-nvml-0000_10_00_0.lock")
            got = {}
            for _ in range(250):  # the sampler takes its lock a period after the first call, then moves it
                got = {}
                for n in os.listdir(f"/proc/{p.pid}/fd"):
                    try:
                        got[int(n)] = os.readlink(f"/proc/{p.pid}/fd/{n}")
                    except OSError:
                        pass
                at = [n for n, t in got.items() if t == lock]
                if not preload or (at and min(at) >= 100):  # seen once moved (dup'ed high, the low one closed)
                    break
                time.sleep(0.02)
            return got
        finally:
            p.communicate("\n", timeout=TIMEOUT)

    plain, traced = fds(False), fds(True)
    low = {n: t for n, t in traced.items() if n < 100}
    check(sorted(low) == sorted(n for n in plain if n < 100), f"under 100: traced {low}, untraced {plain}")
    ours = sorted(t.split(":")[0] if t.startswith("pipe:") else os.path.basename(t)
                  for n, t in traced.items() if n >= 100 and n not in plain)
    check(len(ours) == 4 and ours[0] == "gpuspy-nvml-0000_10_00_0.lock" and re.fullmatch(r"gpuspy-.*\.gspy", ours[1])
          and ours[2:] == ["pipe", "pipe"], f"gpuspy's descriptors: {ours}")


@test
def a_python_starts_as_it_does_untraced(tmp):
    """libgpuspy puts its helper's directory on PYTHONPATH for a Python
    process; the helper (python/sitecustomize.py) must leave no trace of
    it. Each of these prints the same stdout and stderr and exits the same
    traced as untraced: a user's sitecustomize that fails on an import of
    its own (site's one-line error, not swallowed); one whose names are
    read as sitecustomize.X; PYTHONPATH empty, with an empty entry (the
    current directory, for children), and unset (no GPUSPY_ variable left
    either); -S, -I and -E with -W clustered (the interpreter reads no
    PYTHONPATH or no site: nothing is put there); the helper imports
    neither threading nor importlib.abc's train (tempfile, typing), which
    a program may look for in sys.modules (gevent's patching). Where other
    interpreters are installed (pyenv): 3.11 with no sitecustomize at all
    (`import sitecustomize` fails as untraced) and Python 2, which parses
    the helper and runs the user's sitecustomize."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    bad, usc = os.path.join(tmp, "bad"), os.path.join(tmp, "usc")
    for d, text in ((bad, "import not_a_module_xyz\n"), (usc, "X = 42\n")):
        os.makedirs(d)
        with open(os.path.join(d, "sitecustomize.py"), "w") as f:
            f.write(text)
    show = ("import os, sys; print(repr(os.environ.get('PYTHONPATH')), sys.path[:3], "
            "sorted(k for k in os.environ if k.startswith('GPUSPY_P')))")
    cases = [({"PYTHONPATH": bad}, [SYS_PY, "-c", "print('hi')"]),
             ({"PYTHONPATH": usc}, [SYS_PY, "-c", "import sitecustomize; print(sitecustomize.X)"]),
             ({"PYTHONPATH": ""}, [SYS_PY, "-c", show]),
             ({"PYTHONPATH": ":/opt/x"}, [SYS_PY, "-c", show]),
             ({}, [SYS_PY, "-c", show]),
             ({}, [SYS_PY, "-S", "-c", show]),
             ({}, [SYS_PY, "-I", "-c", show]),
             ({}, [SYS_PY, "-Wignore", "-sE", "-c", show]),
             ({}, [SYS_PY, "-c", "import sys; print([m in sys.modules for m in ('threading', 'tempfile', 'typing')])"])]
    pyenv = os.path.expanduser("~/.pyenv/versions")
    for v, args in (("3.11.7/bin/python3.11", ["-c", "import sitecustomize"]),
                    ("2.7.18/bin/python2.7", ["-c", "import os, sitecustomize; print os.environ.get('PYTHONPATH'), "
                                                    "sitecustomize.X"])):
        if os.path.exists(os.path.join(pyenv, v)):
            cases.append(({"PYTHONPATH": usc} if "2.7" in v else {}, [os.path.join(pyenv, v), *args]))
    for extra, argv in cases:
        got = []
        for preload in (False, True):
            env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSPY_") and k not in ("PYTHONPATH",
                                                                                                  "LD_PRELOAD")}
            env.update(GPUSPY_DIR=tmp, LD_LIBRARY_PATH=BIN, **extra)
            if preload:
                env["LD_PRELOAD"] = LIB
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp)
            got.append((p.returncode, p.stdout, p.stderr))
        check(got[0] == got[1], f"{extra} {argv[1:]}: untraced {got[0]}\n traced {got[1]}")
