# SPDX-License-Identifier: MIT
"""Call stacks: exact chains, sites, options, Python frames."""
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from test_report import strip_files


# ---- call stacks, host allocations, sites ------------------------------------

STACKS_SRC = os.path.join(ROOT, "tests", "progs", "prog_stacks.c")


def src_line(path, needle):
    """The 1-based line of the only line of path that contains needle."""
    hits = [i + 1 for i, l in enumerate(open(path)) if needle in l]
    check(len(hits) == 1, f"{needle!r} found {len(hits)} times in {path}")
    return hits[0]


def fn(frame):
    """A rendered frame's function: "f (file:line)" or "f+0x1a (module)"."""
    return frame.split(" (")[0].split("+0x")[0]


def chain_from(frames, first):
    """The function names from `first` outward (frames before it are CUDA's)."""
    names = [fn(f) for f in frames]
    check(first in names, f"{first} not in the stack {frames}")
    return names[names.index(first):]


STACK_CHAINS = {  # (kind, mem/dir) -> innermost user functions, in order
    ("alloc", "device"): ["alloc_weights", "model_init", "main"],
    ("alloc", "pinned"): ["alloc_staging", "model_init", "main"],
    ("alloc", "host"): ["make_host_buffer", "load_batch", "main"],
    ("copy", "h2d"): ["upload", "load_batch", "main"],
    ("memset", None): ["clear_grads", "train_step", "main"],
    ("sync", None): ["wait_for_gpu", "train_step", "main"],
}


def stack_key(e):
    return (e["kind"], e.get("mem") or e.get("dir"))


@test
def packed_records_round_trip(tmp):
    """format.h's codec: 200 chunks of random records (fields unchanged, a
    small step, or anything, as in real traces; never of kind none, which
    is never written and whose zero byte ends a chunk) decode bit for bit; a cut
    chunk decodes to a prefix and stops at the cut. The records, their
    packed size and a hash of the packed bytes are pinned: an encoder
    rewritten for speed must write the same bytes (the format's readers
    decode files written by any version). Then the same with gpuspy's own
    time after each record (its stack walk, packed beside it): it comes
    back too, up to GSPY_OWN_MAX, and records without it pack to the bytes
    they did before it existed."""
    p = run("prog_codec", ["12345", "200"], tmp=tmp, preload=False)
    check(p.stdout.split() == ["ok", "307221", "13079891", "2dc32011b33645fc"], p.stdout)
    p = run("prog_codec", ["12345", "200", "own"], tmp=tmp, preload=False)
    check(p.stdout.split() == ["ok", "287310", "13080116", "bf941b9b53ad3c90"], p.stdout)


@test
def stacks_exact_call_chains(tmp):
    """With GPUSPY_STACKS=all, every device/pinned/host allocation, copy,
    memset and wait of a program with known call chains carries its stack:
    the user's functions in order, file:line from DWARF, no gpuspy frame;
    shared and static runtime."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    lines = {"alloc_weights": src_line(STACKS_SRC, "cudaMalloc(&d, n);"),
             "upload": src_line(STACKS_SRC, "cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice)"),
             "make_host_buffer": src_line(STACKS_SRC, "char *p = malloc(n);"),
             "wait_for_gpu": src_line(STACKS_SRC, "int rc = cudaDeviceSynchronize();")}
    for prog in ("prog_stacks", "prog_stacks_static"):
        d = os.path.join(tmp, prog)
        os.makedirs(d)
        run(prog, ["4"], tmp=d, env={"GPUSPY_HOST_ALLOC_MIN": "1M", "GPUSPY_STACKS": "all"})
        ev, stacks = dump_stacks(os.path.join(d, traces(d)[0]))
        seen = {}
        for e in ev:
            if e["kind"] in ("phase_begin", "phase_end", "free"):
                continue
            check("stack" in e and e["stack"] in stacks, f"{prog}: no stack on {e}")
            frames = stacks[e["stack"]]
            check(not any("gpuspy" in f or fn(f).startswith("gs_") for f in frames),
                  f"{prog}: gpuspy's own frames in {frames}")
            want = STACK_CHAINS[stack_key(e)]
            got = chain_from(frames, want[0])[:3]
            check(got == want, f"{prog}: {stack_key(e)} stack {got}, expected {want}")
            first = frames[[fn(f) for f in frames].index(want[0])]
            if want[0] in lines:
                check(first == f"{want[0]} (prog_stacks.c:{lines[want[0]]})",
                      f"{prog}: frame {first!r}, expected line {lines[want[0]]}")
            seen[stack_key(e)] = seen.get(stack_key(e), 0) + 1
        check(seen == {("alloc", "device"): 1, ("alloc", "pinned"): 1, ("alloc", "host"): 1,
                       ("copy", "h2d"): 1, ("memset", None): 4, ("sync", None): 4},
              f"{prog}: events with stacks {seen}")
        frees = [e for e in ev if e["kind"] == "free"]
        check(sorted((e["mem"], e["bytes"]) for e in frees) ==
              [("device", 64 << 20), ("host", 64 << 20), ("pinned", 1 << 20)], f"{prog}: frees {frees}")
        check(all("stack" in e for e in frees), f"{prog}: a free without its stack")


@test
def each_stack_walk_is_timed_on_its_record(tmp):
    """Every call that kept a stack carries the walk's time after it
    (own_ns), and no other: the replay takes each walk off the gap after
    its call, where a mean would be wrong by 10x (a walk took 2 us after
    one cudaFree, 150 us after a cudaMalloc of the same step on the H200).
    prog_stacks with GPUSPY_STACKS=all: its 11 stacked calls (device and
    pinned allocations, the pageable upload, 4 memsets, 4 waits) and its
    2 frees; the header's total walk time is their sum (within a ns a
    record, the clock's conversion)."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    run("prog_stacks", ["4"], tmp=tmp, env={"GPUSPY_STACKS": "all"})
    head, ev = only_trace(tmp)
    timed = [e for e in ev if "own_ns" in e]
    check(all("stack" in e for e in timed), f"a walk's time without a stack: {timed}")
    stacked = [(e["kind"], e.get("mem") or e.get("host_mem")) for e in ev if "stack" in e]
    check(sorted(stacked) == sorted([("alloc", "device"), ("alloc", "pinned"), ("copy", "pageable")] +
                                    [("memset", None)] * 4 + [("sync", None)] * 4 +
                                    [("free", "device"), ("free", "pinned")]), f"stacked calls {stacked}")
    check(len(timed) == len(stacked) == head["stacks_taken"] and all(e["own_ns"] > 0 for e in timed),
          f"{len(timed)} timed of {len(stacked)} stacked, header {head['stacks_taken']}")
    total = sum(e["own_ns"] for e in timed)
    check(abs(total - head["stacks_ns"]) <= len(timed), f"walks {total} ns, header {head['stacks_ns']} ns")


@test
def stacks_report_sites_and_host_buffer(tmp):
    """report --json lists alloc_sites, peak_sites, copy_sites (tied to the
    malloc of the pageable buffer) and sync_sites with exact numbers; the
    diagnosis names both lines; the JSON Lines dump reports the same."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    run("prog_stacks", ["4"], tmp=tmp, env={"GPUSPY_HOST_ALLOC_MIN": "1M"})
    o = report_json(tmp)
    names = lambda site: [fn(f) for f in site["stack"]][:3]
    al = [(names(x), x["mem"], x["count"], x["bytes"]) for x in o["alloc_sites"]]
    check(al == [(["alloc_weights", "model_init", "main"], "device", 1, 64 << 20),
                 (["alloc_staging", "model_init", "main"], "pinned", 1, 1 << 20)], f"alloc_sites {al}")
    pk = [(names(x), x["count"], x["bytes"]) for x in o["peak_sites"]]
    check(pk == [(["alloc_weights", "model_init", "main"], 1, 64 << 20)], f"peak_sites {pk}")
    cp = o["copy_sites"]
    check(len(cp) == 1 and names(cp[0]) == ["upload", "load_batch", "main"] and cp[0]["count"] == 1
          and cp[0]["bytes"] == 64 << 20 and cp[0]["dir"] == "h2d", f"copy_sites {cp}")
    check([fn(f) for f in cp[0].get("host_alloc_stack", [])][:3] == ["make_host_buffer", "load_batch", "main"]
          and cp[0]["host_alloc_bytes"] == 64 << 20, f"host buffer of the copy: {cp[0]}")
    sy = [(names(x), x["count"], x["phase"]) for x in o["sync_sites"]]
    check(sy == [(["wait_for_gpu", "train_step", "main"], 4, "step")], f"sync_sites {sy}")
    for x in o["alloc_sites"] + o["copy_sites"] + o["sync_sites"]:
        check(set(x) >= {"stack", "count", "bytes", "host_ns"} and x["host_ns"] > 0, f"site fields {x}")
    d = [x["text"] for x in o["diagnoses"] if x["id"] == "pageable_copies"]
    check(d and "All 64 MiB copied in upload (prog_stacks.c:" in d[0]
          and "from a 64 MiB pageable buffer allocated in make_host_buffer (prog_stacks.c:" in d[0],
          f"diagnosis does not name the lines: {d}")
    g = os.path.join(tmp, traces(tmp)[0])
    j = os.path.join(tmp, "trace.jsonl")
    subprocess.run([GPUSPY, "dump", g, "-o", j], check=True, timeout=TIMEOUT)
    check(strip_files(report_json(g)) == strip_files(report_json(j)),
          "report --json with stacks differs between the .gspy and its JSON Lines dump")
    h = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True)
    check("Call sites" in h.stdout and "host buffer (64 MiB) allocated at:" in h.stdout
          and max(len(l) for l in h.stdout.splitlines()) <= 100, "human report's call sites")
    out = os.path.join(tmp, "trace.json")
    subprocess.run([GPUSPY, "export", "--format", "chrome", g, "-o", out], check=True, timeout=TIMEOUT)
    ev = json.load(open(out))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    st = {e["name"]: [fn(f) for f in e["args"]["stack"]][:3] for e in ev if "stack" in e.get("args", {})}
    check(st.get("cudaMalloc") == ["alloc_weights", "model_init", "main"] and
          st.get("cudaMemcpy") == ["upload", "load_batch", "main"], f"export's stacks: {st}")


@test
def stacks_threads_recursion_and_limits(tmp):
    """8 threads x 200 rounds with host allocations recorded (the unwinder and
    the loader allocate inside the hooks): exact counts, every event with its
    stack, output unchanged; allocations under the minimum not recorded.
    Under a sanitizer (whose allocator comes first) without the host part."""
    env = {"GPUSPY_HOST_ALLOC_MIN": "1M", "GPUSPY_STACKS": "all"}
    if "tsan" in PRELOAD_PREFIX:  # libunwind's thread-exit destructor breaks TSan's runtime
        env["GPUSPY_STACKS"] = "all,glibc"
    rounds = 20 if SANITIZED else 200  # sanitizers make each unwind slow
    a = run("prog_stacks", [str(rounds), "threads"], tmp=tmp, env=env, preload=False)
    b = run("prog_stacks", [str(rounds), "threads"], tmp=tmp, env=env)
    check(a.stdout == b.stdout, "output changed")
    proc, ev = only_trace(tmp)
    count = {}
    for e in ev:
        k = (e["kind"], e["api"])
        count[k] = count.get(k, 0) + 1
        check("stack" in e, f"no stack: {e}")
    n = 8 * rounds
    want = {("alloc", "cudaMalloc"): n, ("alloc", "cudaMallocHost"): n, ("alloc", "malloc"): 2 * n,
            ("copy", "cudaMemcpy"): n, ("free", "cudaFree"): n, ("free", "cudaFreeHost"): n,
            ("free", "free"): 2 * n, ("memset", "cudaMemset"): n, ("sync", "cudaDeviceSynchronize"): n}
    if SANITIZED:
        del want[("alloc", "malloc")], want[("free", "free")]
    check(count == want and proc["dropped"] == 0, f"counts {count}")
    if not SANITIZED:
        check(sorted({e["bytes"] for e in ev if e["api"] == "malloc"}) == [2 << 20, 3 << 20], "host sizes")


@test
def stacks_refuse_a_changed_binary(tmp):
    """The reader symbolizes a module only if its build id is the one the
    trace recorded: a program rebuilt since keeps module+offset frames, with
    one warning, never wrong names."""
    exe = os.path.join(tmp, "prog_copy")
    shutil.copy(os.path.join(BIN, "prog_stacks"), exe)
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_QUIET="1", LD_PRELOAD=PRELOAD_PREFIX + LIB)
    subprocess.run([exe, "2"], env=e, check=True, capture_output=True, timeout=TIMEOUT)
    trace = os.path.join(tmp, traces(tmp)[0])
    _, stacks = dump_stacks(trace)
    check(any(f.startswith("alloc_weights (prog_stacks.c:") for fr in stacks.values() for f in fr),
          "not symbolized while the binary is unchanged")
    os.unlink(exe)
    shutil.copy(os.path.join(BIN, "prog_stacks_static"), exe)  # another build at the same path
    p = subprocess.run([GPUSPY, "dump", trace], capture_output=True, text=True, timeout=TIMEOUT)
    frames = [f for l in p.stdout.splitlines() if '"type":"stack"' in l for f in json.loads(l)["frames"]]
    check(p.returncode == 0 and "build id differs" in p.stderr and p.stderr.count("warning") == 1,
          f"no single warning: {p.stderr!r}")
    check(not any("prog_stacks.c" in f for f in frames) and any(f.startswith("prog_copy+0x") for f in frames),
          f"frames of the changed binary: {frames[:6]}")


@test
def stacks_options(tmp):
    """GPUSPY_STACKS=0 records none; GPUSPY_STACK_DEPTH caps the frames;
    GPUSPY_STACK_LAUNCHES=N gives exactly 1 launch in N a stack; libunwind
    takes neither backtrace() nor _Unwind_Backtrace from the process."""
    run("prog_train", ["3", "10"], tmp=tmp, env={"GPUSPY_STACKS": "0"})
    proc, ev = only_trace(tmp)
    check(ev and not any("stack" in e for e in ev), "GPUSPY_STACKS=0 still records stacks")
    check(proc["stacks_taken"] == 0 and proc["stacks_ns"] == 0 and proc["stacks"] == "off",
          f"own stack time without stacks: {proc}")
    # Without stacks the own time is the records' estimate alone.
    host = sum(not e["kind"].startswith("gpu_") for e in ev)
    own = report_json(tmp)["processes"][0]["own_time"]
    check(own == {"estimate_ns": host * 300, "host_records": host, "record_ns": 300}, f"own_time {own}, {host} host records")
    text = report_text(tmp).splitlines()
    line = [text[i:i + 2] for i, x in enumerate(text) if "own time" in x]
    check(len(line) == 1 and line[0][1] == f"      {host} records at ~300 ns each (estimated)", f"own-time lines: {line}")
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    run("prog_train", ["3", "10"], tmp=tmp, env={"GPUSPY_STACK_LAUNCHES": "5", "GPUSPY_STACK_DEPTH": "2"})
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    launches = [e for e in ev if e["kind"] == "launch"]
    check(len(launches) == 69, f"{len(launches)} launches")
    with_stack = [i for i, e in enumerate(launches) if "stack" in e]
    check(with_stack == list(range(0, 69, 5)), f"launches with stacks: {with_stack}")
    # gpuspy counts its own time for stacks: one per event that has one.
    proc, _ = only_trace(tmp)
    n = sum("stack" in e for e in ev)
    # 14 of the 69 launches, 6 H2D and 3 D2H copies, 3 waits, 5 allocations, 5 frees
    check(n == 14 + 6 + 3 + 3 + 5 + 5 and proc["stacks_taken"] == n and proc["stacks_ns"] > 0,
          f"stacks_taken {proc['stacks_taken']}, {n} events with a stack, {proc['stacks_ns']} ns")
    o = report_json(tmp)
    host = sum(not e["kind"].startswith("gpu_") for e in ev)
    own = o["processes"][0]["own_time"]
    check(own["host_records"] == host and own["estimate_ns"] == host * 300 + proc["stacks_ns"], f"own_time {own}")
    check(f" records at ~300 ns each (estimated), {n} call stacks at " in report_text(tmp), "no stacks in the own-time line")
    check(o["processes"][0]["stacks_taken"] == n == o["stacks_taken"], "stacks_taken not in report --json")
    check(stacks and all(1 <= len(f) <= 2 for f in stacks.values()), "depth not capped at 2")
    check(all("stack" in e for e in ev if e["kind"] in ("alloc", "free", "sync")), "alloc/free/sync stack")
    p = run("prog_stacks", ["1", "symbols"], tmp=tmp)
    got = dict(l.split(" ", 1) for l in p.stdout.splitlines())
    check("libunwind" not in got["backtrace"] and "libunwind" not in got["_Unwind_Backtrace"],
          f"backtrace symbols taken over: {got}")


@test
def stacks_skip_a_streams_wait_on_an_event(tmp):
    """A stream's wait on an event (cuStreamWaitEvent) holds the GPU, not the
    host, so it is no wait site and keeps no stack by default; the host's
    waits (stream, context, event synchronisation) each keep one, and
    GPUSPY_STACKS=all gives the stream's wait its stack too."""
    want = {"cuStreamSynchronize": 1, "cuCtxSynchronize": 1, "cuCtxSynchronize_v2": 1,
            "cuEventSynchronize": 1, "cuStreamWaitEvent": 0}
    for value, wait in (("on", 0), ("all", 1)):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        run("prog_drv", tmp=tmp, env={"GPUSPY_STACKS": value})
        _, ev = only_trace(tmp)
        got = {}
        for e in ev:
            if e["kind"] == "sync":
                got[e["api"]] = got.get(e["api"], 0) + ("stack" in e)
        check(got == dict(want, cuStreamWaitEvent=wait), f"GPUSPY_STACKS={value}: waits with a stack {got}")


@test
def stacks_default_kinds(tmp):
    """By default only what the report's call sites use keeps a stack:
    allocations, frees, pageable copies and waits, a launch once in
    GPUSPY_STACK_LAUNCH_PERIOD (here an hour: the first), not memsets nor pinned
    or device-to-device copies; GPUSPY_STACKS=all (also with glibc) gives
    those theirs; off with anything else, or a word it does not know, is
    refused with a warning and stacks stay on; "," (no word) is on; the
    dump's process line says which (stacks on or all). Exact counts, shared and
    static runtime."""
    def with_stack(prog, value):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        p = run(prog, tmp=tmp, env={"GPUSPY_STACKS": value, "GPUSPY_QUIET": "0"})
        check(gpuspy_lines(p.stderr) == [], f"{prog} {value}: stderr {p.stderr!r}")
        proc, ev = only_trace(tmp)
        got = {}
        for e in ev:
            k = "/".join(str(e.get(f)) for f in ("kind", "host_mem", "dir") if e.get(f))
            n, m = got.get(k, (0, 0))
            got[k] = (n + ("stack" in e), m + 1)
        check(proc["stacks_taken"] == sum(n for n, _ in got.values()), f"{prog} {value}: stacks_taken {proc}")
        check(proc["stacks"] == ("all" if got == every else "on"), f"{prog} {value}: stacks {proc['stacks']}")
        return got, "\n".join(proc.get("notes", []))
    on = {"alloc": (2, 2), "free": (2, 2), "copy/pageable/d2h": (2, 2), "copy/pageable/h2d": (2, 2),
          "copy/pinned/d2h": (0, 2), "copy/pinned/h2d": (0, 1), "copy/d2d": (0, 1), "launch": (1, 3),
          "memset": (0, 1), "sync": (2, 2)}
    every = dict(on, **{"copy/pinned/d2h": (2, 2), "copy/pinned/h2d": (1, 1), "copy/d2d": (1, 1),
                        "memset": (1, 1)})
    for prog in ("prog_rt_dyn", "prog_rt_static"):
        for value, want, warned in (("", on, False), ("on", on, False), ("all", every, False),
                                    ("glibc,all", every, False), ("off,all", on, True), ("on,off", on, True),
                                    ("all,every", on, True), (",", on, False)):
            got, err = with_stack(prog, value)
            check(got == want, f"{prog} GPUSPY_STACKS={value}: (with a stack, of) {got}")
            check(err == (f"GPUSPY_STACKS={value} is not off, nor a list of on, all and glibc; using on"
                          if warned else ""), f"{prog} GPUSPY_STACKS={value}: notes {err!r}")


@test
def launch_stacks_by_time(tmp):
    """GPUSPY_STACK_LAUNCH_PERIOD (the tests' harness sets it to an hour):
    a thread's launch gets a stack when half to one and a half periods
    have passed since its last one that got one, the first included.
    prog_train's 69 launches of 4 ms each (the double's FAKECUDA_LAUNCH_NS)
    with a period of 10 ms: the first has one; each later one with a stack
    starts 5 ms or more after the last before it, each without under 15
    ms after it, which over 276 ms or more leaves 14 at least. A period of
    0, or GPUSPY_STACK_LAUNCHES=0, gives none; GPUSPY_STACK_LAUNCHES=3
    every third, the first included, whatever the period."""
    def launches(env):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        p = run("prog_train", ["3", "10"], tmp=tmp, env=env)
        check(gpuspy_lines(p.stderr) == [], f"{env}: stderr {p.stderr!r}")
        proc, ev = only_trace(tmp)
        return proc, [("stack" in e, e["start_ns"], e["tid"]) for e in ev if e["kind"] == "launch"]
    proc, got = launches({"GPUSPY_STACK_LAUNCH_PERIOD": "10ms", "FAKECUDA_LAUNCH_NS": "4000000"})
    check(len(got) == 69 and len({t for _, _, t in got}) == 1 and got[0][0], f"launches {got[:3]}")
    last, bad = got[0][1], []
    for stacked, start, _ in got[1:]:
        if stacked and start - last < 5_000_000 - 1000 or not stacked and start - last >= 15_000_000 + 1000:
            bad.append((stacked, start - last))
        last = start if stacked else last
    n = sum(x for x, _, _ in got)
    check(not bad and n >= 14 and proc["stacks_taken"] >= n, f"{n} stacked; against the rule: {bad}")
    for env in ({"GPUSPY_STACK_LAUNCH_PERIOD": "0"}, {"GPUSPY_STACK_LAUNCH_PERIOD": "10ms", "GPUSPY_STACK_LAUNCHES": "0"}):
        _, got = launches(dict(env, FAKECUDA_LAUNCH_NS="4000000"))
        check(len(got) == 69 and not any(x for x, _, _ in got), f"{env}: {sum(x for x, _, _ in got)} stacked")
    _, got = launches({"GPUSPY_STACK_LAUNCH_PERIOD": "1ns", "GPUSPY_STACK_LAUNCHES": "3"})
    check([i for i, (x, _, _) in enumerate(got) if x] == list(range(0, 69, 3)), f"every third: {got}")


@test
def stacks_min_duration(tmp):
    """GPUSPY_STACK_MIN (nsys's backtrace threshold): waits, memsets, copies
    that are not pageable and sampled launches shorter than it keep no stack;
    allocations, frees and pageable copies always do; the header, the dump
    and the report say which threshold; a bad value is refused with a warning."""
    def kinds(env):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        p = run("prog_train", ["3", "10"], tmp=tmp, env={"GPUSPY_STACK_LAUNCHES": "1", **env})
        check(gpuspy_lines(p.stderr) == [], f"{env}: stderr {p.stderr!r}")
        proc, ev = only_trace(tmp)
        got = {}
        for e in ev:
            if e["kind"] not in ("phase_begin", "phase_end", "mark"):
                k = e["kind"] + ("/" + e["host_mem"] if "host_mem" in e else "")
                n, m = got.get(k, (0, 0))
                got[k] = (n + ("stack" in e), m + 1)
        return proc, got, "\n".join(proc.get("notes", []))

    def judged(kind):
        """Whether each call of kind kept a stack exactly when it took 10 ms
        or more (a loaded machine stretched a 20 us wait past 4 ms: each
        call is judged by the time it took), and how many did."""
        ev = [e for e in only_trace(tmp)[1] if e["kind"] == kind]
        return all(("stack" in e) == (e["end_ns"] - e["start_ns"] >= 10_000_000) for e in ev), \
            sum("stack" in e for e in ev)
    # Launches of 12 ms pass a 10 ms threshold; the double's waits take 20 us.
    proc, got, _ = kinds({"GPUSPY_STACK_MIN": "10ms", "FAKECUDA_LAUNCH_NS": "12000000"})
    (ok_sync, slow), (ok_launch, _) = judged("sync"), judged("launch")
    check(ok_sync and ok_launch and got == {"alloc": (5, 5), "free": (5, 5), "copy/pageable": (9, 9),
                                            "sync": (slow, 3), "launch": (69, 69)},
          f"(with a stack, of) by kind: {got}")
    check(proc["stack_min_ns"] == 10000000 and proc["wait_stack_min_ns"] == 10000000 and
          proc["stacks_taken"] == 88 + slow, f"process line {proc}")
    check("carry a stack only when they took 10.0 ms or more" in report_text(tmp), "no threshold note")
    proc, got, _ = kinds({"GPUSPY_STACK_MIN": "10ms"})
    check(judged("launch")[0] and judged("sync")[0] and got["launch"][1] == 69 and got["sync"][1] == 3 and
          got["copy/pageable"] == (9, 9), f"instant launches with a 10 ms threshold: {got}")
    # Waits of 200 us here: far over the 10 us default, also on a loaded
    # machine (under the sanitizers, beside the browser tests).
    proc, got, err = kinds({"GPUSPY_STACK_MIN": "20 us", "GPUSPY_QUIET": "0", "FAKECUDA_SYNC_NS": "200000"})
    check(proc["stack_min_ns"] == 0 and proc["wait_stack_min_ns"] == 10000 and got["sync"] == (3, 3) and
          got["launch"] == (69, 69), f"{proc} {got}")
    check(err == "GPUSPY_STACK_MIN=20 us is not a duration (e.g. 20us); using waits: 10us", f"notes {err!r}")
    text = report_text(tmp)
    check(": GPUSPY_STACK_MIN)" not in text and f"   gpuspy's notes:\n     {err}\n" in text,
          "a threshold note without a threshold, or the bad value's note not shown")
    # Unset, waits under 10 us keep no stack (the double's take none here,
    # but a loaded machine may stretch one past 10 us: each wait is judged
    # by the time it took) and the report counts them; everything else
    # keeps its stack.
    proc, got, _ = kinds({"FAKECUDA_SYNC_NS": "0"})
    _, ev = only_trace(tmp)
    waits = [(e["end_ns"] - e["start_ns"], "stack" in e) for e in ev if e["kind"] == "sync"]
    check(len(waits) == 3 and all(s == (d >= 10000) for d, s in waits if abs(d - 10000) > 100),
          f"waits (ns, with a stack) {waits}")
    short = sum(d < 10000 for d, _ in waits)
    check(proc["stack_min_ns"] == 0 and proc["wait_stack_min_ns"] == 10000 and got["sync"][1] == 3 and
          got["launch"] == (69, 69) and got["copy/pageable"] == (9, 9), f"{proc} {got}")
    check(short == 0 or re.search(rf"\({short} {'wait' if short == 1 else 'waits'} inside repeated phases, "
                                  r"[0-9.]+ [nu]s in all, (was|were) shorter than 10\.0 us and carry no stack: "
                                  r"GPUSPY_STACK_MIN\)", report_text(tmp)), "no note of the waits without a site")
    proc, got, _ = kinds({"FAKECUDA_SYNC_NS": "0", "GPUSPY_STACK_MIN": "0"})
    check(proc["wait_stack_min_ns"] == 0 and got["sync"] == (3, 3), f"GPUSPY_STACK_MIN=0: every wait {got}")
    check("GPUSPY_STACK_MIN" not in report_text(tmp), "a note with every wait sited")


@test
def python_frames_with_and_without_the_gil(tmp):
    """GPUSPY_PYTHON_FRAMES=1: a CUDA call made holding the GIL (ctypes.PyDLL)
    shows the Python functions and lines in order, and so does one made
    without it (ctypes.CDLL releases the GIL, as PyTorch's bindings do),
    whose frames are read raw by the layout learned from the first (with
    GPUSPY_TORCH=0) or by the start-up hook; GPUSPY_PYTHON_FRAMES=0: none."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    script = os.path.join(ROOT, "tests", "progs", "py_stacks.py")
    lib = os.path.join(BIN, "libcudart.so.13")
    env = {"LD_LIBRARY_PATH": BIN, "GPUSPY_PYTHON_FRAMES": "1", "GPUSPY_TORCH": "0"}
    p = subprocess.run([sys.executable, script, lib], env=dict(os.environ, GPUSPY_DIR=tmp, LD_PRELOAD=LIB, **env),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout == "rc 0 0\n", f"script failed: {p.stdout} {p.stderr}")
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    allocs = [e for e in ev if e["kind"] == "alloc"]
    check(len(allocs) == 2, f"{len(allocs)} allocations")
    py = lambda e: [f for f in stacks[e["stack"]] if ".py:" in f]
    line = lambda tag: src_line(script, "# " + tag)
    want = [f"alloc_holding_gil ({script}:{line('LINE_HELD')})", f"Model.build ({script}:{line('LINE_BUILD')})",
            f"<module> ({script}:{line('LINE_MODULE')})"]
    check(py(allocs[0]) == want, f"Python frames {py(allocs[0])}, expected {want}")
    want = [f"alloc_without_gil ({script}:{line('LINE_RELEASED')})", f"<module> ({script}:{line('LINE_SECOND')})"]
    check(py(allocs[1]) == want, f"Python frames without the GIL {py(allocs[1])}, expected {want}")
    # The start-up hook learns instead (GPUSPY_TORCH on): the same frames.
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    e2 = dict(env)
    del e2["GPUSPY_TORCH"]
    p = subprocess.run([sys.executable, script, lib], env=dict(os.environ, GPUSPY_DIR=tmp, LD_PRELOAD=LIB, **e2),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout == "rc 0 0\n", f"script failed: {p.stdout} {p.stderr}")
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    allocs = [e for e in ev if e["kind"] == "alloc"]
    check(py(allocs[1]) == want, f"with the start-up hook: {py(allocs[1])}, expected {want}")
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    env["GPUSPY_PYTHON_FRAMES"] = "0"
    subprocess.run([sys.executable, script, lib], env=dict(os.environ, GPUSPY_DIR=tmp, LD_PRELOAD=LIB, **env),
                   capture_output=True, text=True, timeout=TIMEOUT, check=True)
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    check(not any(".py:" in f for fr in stacks.values() for f in fr), "Python frames with GPUSPY_PYTHON_FRAMES=0")


@test
def a_launch_bound_step_names_the_function_its_launches_come_from(tmp):
    """test_advice.py's launch_loop, one launch in four with a stack
    (GPUSPY_STACK_LAUNCHES=4), through PyTorch's frames (not the
    program's): launch i from line 31 + i % 10 of forward, but those in
    `other` from sample's line 50. forward has 4 of a step's 5 stacked
    launches (a third or more: sites.c's gs_sites_step_line), at lines
    31, 35, 39 and 33: "from forward (/w/decode.py:31-39)". With sample's
    share the larger it names sample, one line. Frames without a line
    name the frame as it is. With only PyTorch's frames in 4 of the 5
    (the backward pass's launches, from the autograd thread), forward's
    one is under a third: no function is named. The replay is unchanged
    (no walk timed). gpuspy's own frames between them (its PyTorch helper's
    wrapper run from a source tree, its library's builtin; the H100's
    optimizer launches) are not the program's."""
    from test_advice import launch_loop, report_json_of
    from test_report import write_jsonl
    cases = ((16,), "forward (/w/decode.py:31-39)", "forward"), ((0, 4, 16), "sample (/w/decode.py:50)", "sample"), \
        ((), "run_step+0x3d (app)", "run_step+0x3d (app)"), ((0, 4, 8, 12), None, "")
    for other, want, own in cases:
        def stack_of(i):
            if own in ("forward", "sample"):
                f = "sample (/w/decode.py:50)" if i in other else f"forward (/w/decode.py:{31 + i % 10})"
            elif i in other:  # the autograd thread: no Python frames at all
                return ["at::native::launch (libtorch_cuda.so+0x10)", "start_thread (libc.so.6)"]
            else:
                f = own or "forward (/w/decode.py:31)"
            return ["at::native::launch (libtorch_cuda.so+0x10)", "libgpuspy.so+0x2e452",
                    "_wrap.<locals>.wrapper (/src/gpuspy/python/gpuspy_torch.py:233)", f, "<module> (/w/decode.py:59)"]
        frames = {100 + i: stack_of(i) for i in range(0, 20, 4)}
        ev = launch_loop(stack=lambda i: 100 + i if i % 4 == 0 else None)
        o = report_json_of(write_jsonl(os.path.join(tmp, "lines.jsonl"), ev, timing="cupti", frames=frames))
        d, step = o["diagnoses"], o["processes"][0]["step"]
        check(step["replayed_savings_ns"]["graph"] == 145_800 and step.get("launches_from") == want, f"step {step}")
        said = f"one by one from {want} and the GPU" if want else "one by one and the GPU"
        check(len(d) == 1 and d[0]["text"].startswith(f"Each step launches 20 kernels {said}"), f"diagnoses {d}")


@test
def a_step_launching_from_hundreds_of_functions_names_the_one_with_a_third(tmp):
    """launch_loop with every launch stacked: its first 12 a step each from
    a function of its own (480 functions in the steps that count, their
    stacks interned first), its last 8 from forward's lines 31-38 (two
    fifths). The count is kept for every function, not for the first 32
    seen (which left forward out): "from forward (/w/decode.py:31-38)"."""
    from test_advice import launch_loop, report_json_of
    from test_report import write_jsonl
    ev = launch_loop(stack=lambda i: 100_000 + i)
    frames, n = {}, 0
    for e in ev:
        if e["kind"] != "launch":
            continue
        i = n % 20
        if i < 12:
            e["stack"] = 1_000 + n
            frames[e["stack"]] = ["at::native::launch (libtorch_cuda.so+0x10)", f"f{n} (/w/decode.py:{100 + n})"]
        else:
            frames[e["stack"]] = ["at::native::launch (libtorch_cuda.so+0x10)", f"forward (/w/decode.py:{19 + i})"]
        n += 1
    o = report_json_of(write_jsonl(os.path.join(tmp, "many.jsonl"), ev, timing="cupti", frames=frames))
    step = o["processes"][0]["step"]
    check(step.get("launches_from") == "forward (/w/decode.py:31-38)", f"step {step}")


@test
def a_jax_step_names_the_line_that_dispatches_it(tmp):
    """test_advice.py's host-bound JAX loop, each graph launch with a
    stack through XLA's frames from timed_loop's line 50: the host_bound
    diagnosis says where its steps are dispatched, after its finding and
    before its advice; its saving is unchanged (46,734 ns a step)."""
    from test_advice import jax_loop
    o = jax_loop(tmp, 15_000, frames=["xla::PjRtStreamExecutorClient::Execute (libjax.so+0x10)",
                                      "timed_loop (/w/jax_hostbound.py:50)", "<module> (/w/jax_hostbound.py:57)"])
    d = o["diagnoses"]
    check(d and d[0]["id"] == "host_bound" and d[0]["saving"]["per_step_ns"] == 46_734 and
          d[0]["text"].split("\n")[0].endswith(" Its steps are dispatched at timed_loop (/w/jax_hostbound.py:50).")
          and o["processes"][0]["step"]["launches_from"] == "timed_loop (/w/jax_hostbound.py:50)", f"diagnoses {d}")


@test
def a_jax_step_the_gpu_nearly_keeps_up_with_names_its_dispatch_line(tmp):
    """The same loop at 200 us a step, 3 kernels of 52 us back to back: the
    GPU works 156 us of each step and idles 44 us (22%) before the next
    dispatch's work, under the quarter diagnose.c's host_bound asks. The
    replay still has the host set the pace (its step 176,777 ns, the GPU
    under 80% of the step), so the diagnosis is the replay's own, in its
    words, at the dispatching line."""
    from test_advice import jax_loop
    o = jax_loop(tmp, 52_000, frames=["timed_loop (/w/jax_hostbound.py:50)"], kernels=3, kernel_ns=52_000,
                 period=200_000)
    d, step = o["diagnoses"], o["processes"][0]["step"]
    check(step["replayed_step_ns"] == 176_777 and step["gpu_ns"] == 156_000, f"step {step}")
    check(len(d) == 1 and d[0]["id"] == "host_bound" and d[0]["text"].startswith(
        "Each step is dispatched from the host at timed_loop (/w/jax_hostbound.py:50), which takes longer than "
        "the GPU's 156.0 us of work a step (200.0 us).") and d[0]["saving"]["per_step_ns"] > 4_000,
        f"diagnoses {d}")


@test
def a_programs_own_library_keeps_its_lines(tmp):
    """A library of the program's own that links the runtime, built with
    debug information and named as a module of others might be
    (cupy_myop.so, a myop.cpython-311-x86_64-linux-gnu.so extension),
    loaded by Python's ctypes (RTLD_LOCAL, as Python imports extension
    modules: its cudart is outside the global scope) and allocating:
    its cudaMalloc reaches the runtime and succeeds (gpuspy's wrapper
    found no runtime there: every call got 999), while a probe of the
    global scope (dlsym(RTLD_DEFAULT, "cudaMalloc")) still finds none,
    as untraced; and its frame keeps its
    line ("my_alloc (myop.c:5)"), while the runtime's, the interpreter's,
    libffi's and the C library's keep their module, never a line (a
    Python built from source has the interpreter's: "run_mod
    (pythonrun.c:1731)" would pass for the program's); ctypes' own
    module may keep its lines (the report knows its functions)."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    src = os.path.join(tmp, "myop.c")
    with open(src, "w") as f:
        f.write("#include <stddef.h>\nint cudaMalloc(void **p, size_t n);\n\nint my_alloc(void)\n"
                "{ void *p; return cudaMalloc(&p, 4096); }\n")
    for name in ("cupy_myop.so", "myop.cpython-311-x86_64-linux-gnu.so"):
        so = os.path.join(tmp, name)
        subprocess.run(["cc", "-g", "-O0", "-shared", "-fPIC", "-o", so, src, "-L" + BIN, "-l:libcudart.so.13"],
                       check=True, timeout=TIMEOUT)
        d = os.path.join(tmp, name + ".d")
        os.makedirs(d)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSPY_")}
        env.update(GPUSPY_DIR=d, LD_PRELOAD=LIB, LD_LIBRARY_PATH=BIN, GPUSPY_PYTHON_FRAMES="0")
        py = (f"import ctypes; lib = ctypes.CDLL({so!r}); c = ctypes.CDLL(None); c.dlsym.restype = ctypes.c_void_p; "
              "print(bool(c.dlsym(None, b'cudaMalloc')), lib.my_alloc())")
        p = subprocess.run([sys.executable, "-c", py], env=env, capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and p.stdout == "False 0\n", f"{name}: {p.returncode} {p.stdout!r} {p.stderr}")
        ev, stacks = dump_stacks(os.path.join(d, traces(d)[0]))
        alloc = [e for e in ev if e["kind"] == "alloc" and e.get("bytes") == 4096]
        frames = stacks[alloc[0]["stack"]] if len(alloc) == 1 else []
        lined = [f for f in frames if re.search(r"\([\w.-]+\.[ch]:\d+\)$", f)]
        check(lined and lined[0] == "my_alloc (myop.c:5)" and frames[0] == lined[0] and
              all(f.startswith(("_ctypes", "PyCFuncPtr")) for f in lined[1:]) and
              any(f.startswith("__libc_start_main") for f in frames), f"{name}: {alloc} {frames}")
