# SPDX-License-Identifier: MIT
"""Host allocations through libgpuspy-host.so."""
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from test_stacks import fn


HOST_NAMES = ["malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "mmap", "munmap"]


def defined_functions(lib):
    p = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True)
    return {l.split()[-1] for l in p.stdout.splitlines() if len(l.split()) == 3}


def _host_events(d):
    """The trace in d, removed after: its host_alloc_min, its host events
    (kind, api, bytes) and its count of CUDA events."""
    proc, ev = only_trace(d)
    host = sorted((e["kind"], e["api"], e["bytes"]) for e in ev if e.get("mem") == "host")
    cuda = sum(1 for e in ev if e["api"].startswith("cuda"))
    for f in traces(d):
        os.unlink(os.path.join(d, f))
    return proc["host_alloc_min"], host, cuda


# prog_stacks 4 with GPUSPY_HOST_ALLOC_MIN=1M: its 64 MiB malloc and its free.
HOST_WANT = (1 << 20, [("alloc", "malloc", 64 << 20), ("free", "free", 64 << 20)])
HOST_ENV = {"GPUSPY_HOST_ALLOC_MIN": "1M", **LOG_STDERR}


def _cuda_events(d):
    """prog_stacks 4's count of CUDA events, traced without host allocations."""
    run("prog_stacks", ["4"], tmp=d, host=False)
    return _host_events(d)[2]


@test
def gpuspys_own_first_work_is_not_the_programs(tmp):
    """An NVTX range (prog_nvtx) or gpuspy_pause() and gpuspy_resume()
    (prog_stacks pausefirst) as the program's first act, host allocations
    recorded from 1 MiB: the program runs to its end with its output, and
    no host allocation is in the trace. The name's interning, outside any
    hook, made the string index (a 2 MiB mmap) and the trace file (a
    272 MiB one) through the host hooks: the first was recorded, its stack
    interned under the string table's lock the thread held (it waited on
    itself for ever), and with a 4 MiB threshold the file's mapping was
    the program's, never freed. And gpuspy's own tables of NVTX strings
    (prog_nvtx strings: 70,000 registered; 512 KiB and 144 KiB a chunk)
    were the program's host allocations too."""
    for prog, args, out, leasts in (("prog_nvtx", [], "levels 0 1\n", ("1M", "4M")),
                                    ("prog_stacks", ["1", "pausefirst"], "paused first\n", ("1M", "4M")),
                                    ("prog_nvtx", ["strings"], "same 1\n", ("128K",))):
        for least in leasts:
            d = os.path.join(tmp, f"{prog}-{'-'.join(args)}-{least}")
            os.mkdir(d)
            p = run(prog, args, tmp=d, env=dict(HOST_ENV, GPUSPY_HOST_ALLOC_MIN=least), expect_rc=None)
            check(p.returncode == 0 and p.stdout == out, f"{prog} {least}: exit {p.returncode}, {p.stdout!r}")
            got = _host_events(d)
            check(got[1] == [], f"{prog} {least}: host events {got[1]}")


@test
def libgpuspy_defines_no_allocator(tmp):
    """libgpuspy defines no malloc, free, mmap...: a traced process calls its
    allocator directly unless libgpuspy-host.so is preloaded too, which
    defines those and nothing else; libgpuspy has the gpuspy_host_* hooks
    it calls."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    mine = defined_functions(os.path.realpath(LIB))
    check(not mine & set(HOST_NAMES), f"libgpuspy defines {sorted(mine & set(HOST_NAMES))}")
    check({"gpuspy_host_" + n for n in HOST_NAMES} <= mine, "libgpuspy lacks its gpuspy_host_* hooks")
    shim = defined_functions(HOST_LIB)
    check(shim == set(HOST_NAMES) | {"gpuspy_host_shim"}, f"libgpuspy-host.so defines {sorted(shim)}")


@test
def host_alloc_min_without_the_host_library_warns(tmp):
    """GPUSPY_HOST_ALLOC_MIN with libgpuspy alone: one warning naming the
    host library, host_alloc_min 0 in the trace, no host event, the CUDA
    events whole."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    cuda = _cuda_events(tmp)
    p = run("prog_stacks", ["4"], tmp=tmp, env=HOST_ENV, host=False)
    warn = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
    check(len(warn) == 1 and "libgpuspy-host.so is not preloaded" in warn[0], f"warnings {warn}")
    got = _host_events(tmp)
    check(got == (0, [], cuda), f"without the host library: {got}, {cuda} CUDA events untraced")


@test
def host_library_in_either_order(tmp):
    """Both libraries preloaded, either one first: the 64 MiB malloc and its
    free, no warning, the CUDA events as without host allocations."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    cuda = _cuda_events(tmp)
    p = run("prog_stacks", ["4"], tmp=tmp, env=HOST_ENV)
    check(not [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")], f"warned: {p.stderr!r}")
    check(_host_events(tmp) == (*HOST_WANT, cuda), "both preloaded, libgpuspy first")
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_QUIET="1",
             GPUSPY_HOST_ALLOC_MIN="1M", LD_PRELOAD=HOST_LIB + ":" + LIB)
    subprocess.run([os.path.join(BIN, "prog_stacks"), "4"], env=e, check=True, capture_output=True,
                   timeout=TIMEOUT)
    check(_host_events(tmp) == (*HOST_WANT, cuda), "both preloaded, the host library first")


def _run_env_without_host():
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_QUIET="1")
    e.pop("LD_PRELOAD", None)
    e.pop("GPUSPY_HOST_ALLOC_MIN", None)
    return e


@test
def gpuspy_run_adds_the_host_library(tmp):
    """gpuspy run preloads libgpuspy-host.so too for --host-alloc or
    GPUSPY_HOST_ALLOC_MIN, and not without either."""
    if SANITIZED:
        raise Skip("gpuspy run puts libgpuspy before the sanitizer runtime")
    cuda = _cuda_events(tmp)
    e = _run_env_without_host()
    for opts, extra in ((["--host-alloc", "1M"], {}), ([], {"GPUSPY_HOST_ALLOC_MIN": "1M"}), ([], {})):
        p = subprocess.run([GPUSPY, "run", "--dir", tmp, "--no-report", *opts, "--",
                            os.path.join(BIN, "prog_stacks"), "4"], env=dict(e, **extra),
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"gpuspy run {opts} {extra}: {p.stderr}")
        got = _host_events(tmp)
        check(got == ((*HOST_WANT, cuda) if opts or extra else (0, [], cuda)),
              f"gpuspy run {opts} {extra}: {got}")


@test
def gpuspy_run_refuses_a_bad_host_alloc(tmp):
    """--host-alloc takes a size over 0: another value is one line, exit 2."""
    for bad in ("1Q", "0", "-1", "M"):
        p = subprocess.run([GPUSPY, "run", "--host-alloc", bad, "--", "true"], env=_run_env_without_host(),
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 2 and p.stderr.count("\n") == 1 and "--host-alloc" in p.stderr,
              f"--host-alloc {bad}: rc {p.returncode} {p.stderr!r}")


@test
def host_allocators_each_recorded(tmp):
    """Every host allocator through libgpuspy-host.so (prog_stacks
    allocators, GPUSPY_HOST_ALLOC_MIN=1M), exact events in order: a
    posix_memalign and a realloc'ed block kept from before the first CUDA
    call, written first (the block realloc'ed from not at all); an
    aligned_alloc freed before it, not written; calloc; realloc as the old
    block's free and the new block's alloc, a shrink under the minimum as a
    free alone (and its later free unrecorded); a failing posix_memalign
    with its EINVAL as the result and errno untouched; aligned_alloc and
    free; mmap, a partial munmap as what it released (the rest unrecorded);
    a too-big malloc with ENOMEM; an overflowing calloc and a block under
    the minimum not recorded. Addresses as the program printed them, every
    host event with a stack, output as without gpuspy."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    a = run("prog_stacks", ["1", "allocators"], tmp=tmp, preload=False)
    b = run("prog_stacks", ["1", "allocators"], tmp=tmp, env={"GPUSPY_HOST_ALLOC_MIN": "1M"})
    plain = [l for l in b.stdout.splitlines() if not l.startswith("addr ")]
    check(plain == [l for l in a.stdout.splitlines() if not l.startswith("addr ")] and
          "bad alignment rc 22 errno 33 untouched 1" in plain and "early aligned 1" in plain,
          f"output changed: {a.stdout!r} {b.stdout!r}")
    addr = {l.split()[1]: int(l.split()[2], 16) for l in b.stdout.splitlines() if l.startswith("addr ")}
    proc, ev = only_trace(tmp)
    mib = 1 << 20
    got = [(e["kind"], e["api"], e["bytes"], e["result"]) for e in ev]
    want = [("alloc", "posix_memalign", 3 * mib, 0), ("alloc", "realloc", 4 * mib, 0), ("alloc", "cudaMalloc", mib, 0),
            ("alloc", "calloc", 2 * mib, 0), ("free", "realloc", 2 * mib, 0),
            ("alloc", "realloc", 4 * mib, 0), ("free", "realloc", 4 * mib, 0),
            ("alloc", "posix_memalign", 3 * mib, 22), ("alloc", "aligned_alloc", 5 * mib, 0),
            ("free", "free", 5 * mib, 0), ("alloc", "mmap", 6 * mib, 0), ("free", "munmap", 2 * mib, 0),
            ("alloc", "malloc", (1 << 63) - 1, 12), ("free", "free", 3 * mib, 0), ("free", "free", 4 * mib, 0),
            ("free", "cudaFree", mib, 0)]
    check(got == want and proc["dropped"] == 0 and proc["events"] == len(want), f"events {got}")
    host = [e for e in ev if e.get("mem") == "host"]
    where = [e["addr"] for e in host]
    check(where == [addr["posix_memalign"], addr["early_realloc"], addr["calloc"], addr["calloc"], addr["realloc"], addr["realloc"], 0,
                    addr["aligned_alloc"], addr["aligned_alloc"], addr["mmap"], addr["mmap"], 0,
                    addr["posix_memalign"], addr["early_realloc"]], f"addresses {where} against {addr}")
    check(all("stack" in e for e in host), f"a host event without a stack: {host}")


@test
def host_allocations_without_cuda_write_nothing(tmp):
    """A process that never calls CUDA writes nothing even with host
    allocations recorded: a C program, and Python, each with a live 64 MiB
    / 10 MB block at exit."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    env = {"GPUSPY_HOST_ALLOC_MIN": "1M"}
    p = run("prog_stacks", ["1", "nocuda"], tmp=tmp, env=env)
    check(p.stdout.startswith("no cuda") and traces(tmp) == [], f"a process without CUDA wrote {traces(tmp)}")
    e = dict(os.environ, GPUSPY_DIR=tmp, GPUSPY_HOST_ALLOC_MIN="1M", LD_PRELOAD=LIB + ":" + HOST_LIB)
    q = subprocess.run([sys.executable, "-c", "x = bytearray(10**7); print(len(x))"], env=e,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(q.returncode == 0 and q.stdout == "10000000\n" and traces(tmp) == [],
          f"python without CUDA: rc {q.returncode} {q.stdout!r}, files {traces(tmp)}")


@test
def host_allocations_before_the_first_cuda_call(tmp):
    """Before the first CUDA call, live blocks are kept and written once the
    file exists: the 64 MiB buffer a pageable copy reads later is there,
    first, with its stack (none with GPUSPY_STACKS=0), and the copy is tied
    to it; a block allocated and freed before is not; a thread's block that
    its thread never wrote (it ended with no CUDA call) is counted apart
    (host_unwritten), not as dropped for want of buffer."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    env = {"GPUSPY_HOST_ALLOC_MIN": "1M"}
    for stacks in ("on", "0"):
        run("prog_stacks", ["1", "early"], tmp=tmp, env=dict(env, GPUSPY_STACKS=stacks))
        proc, _ = only_trace(tmp)
        g = os.path.join(tmp, traces(tmp)[0])
        ev, st = dump_stacks(g)
        host = [(x["kind"], x["api"], x["bytes"]) for x in ev if x.get("mem") == "host"]
        check(host == [("alloc", "malloc", 64 << 20), ("free", "free", 64 << 20)], f"host events {host}")
        check(ev[0]["mem"] == "host" and ev[0]["kind"] == "alloc" and
              ev[0]["start_ns"] < next(x["start_ns"] for x in ev if x["api"] == "cudaMalloc"),
              f"the early block is not first: {ev[:2]}")
        check(ev[0]["tid"] == proc["pid"] and proc["dropped"] == 0 and proc.get("host_unwritten") == 1 and
              proc["events"] == 5, f"tid {ev[0]['tid']}, process line {proc}")
        copy = next(x for x in ev if x["kind"] == "copy")
        check(copy["addr"] == ev[0]["addr"] and copy["host_mem"] == "pageable", f"copy {copy}")
        if stacks == "on":
            check([fn(f) for f in st[ev[0]["stack"]]][:2] == ["make_host_buffer", "main"],
                  f"early stack {st.get(ev[0].get('stack'))}")
            cp = report_json(g)["copy_sites"]
            check([fn(f) for f in cp[0].get("host_alloc_stack", [])][:2] == ["make_host_buffer", "main"],
                  f"the copy is not tied to its early buffer: {cp}")
        else:
            check("stack" not in ev[0], f"a stack with GPUSPY_STACKS=0: {ev[0]}")
        os.unlink(g)


@test
def host_allocations_kept_before_a_fork(tmp):
    """A child forked before the first CUDA call leaves the kept block to
    its parent's trace; the child's trace has its own calls only."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    env = {"GPUSPY_HOST_ALLOC_MIN": "1M"}
    p = run("prog_stacks", ["1", "earlyfork"], tmp=tmp, env=env)
    check(p.stdout == "parent 0 child 0\n" and len(traces(tmp)) == 2, f"{p.stdout!r} {traces(tmp)}")
    procs = {}
    for t in traces(tmp):
        proc, ev = dump(os.path.join(tmp, t))
        procs[proc["pid"]] = (proc["ppid"], sorted((x["kind"], x["bytes"]) for x in ev if x.get("mem") == "host"))
        check(proc["dropped"] == 0 and any(x["kind"] == "copy" for x in ev), f"{t}: {proc['dropped']} dropped")
    child = next((pid for pid, (ppid, _) in procs.items() if ppid in procs), None)
    parent = next((pid for pid in procs if pid != child), None)
    check(child and procs[parent][1] == [("alloc", 64 << 20), ("free", 64 << 20)] and procs[child][1] == [],
          f"host events by process {procs}")
