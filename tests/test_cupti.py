# SPDX-License-Identifier: MIT
"""GPU records from CUPTI (the CUPTI double): joined to their calls, graphs and memsets, flushing, kills."""
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from test_routes import drv_expected
from test_stacks import src_line


# GPU timing from the CUPTI double (tests/doubles/fakecupti.c): its GPU runs
# each stream's work in order, a kernel grid_x us, a copy 10 bytes per ns, a
# memset 100, on gpuspy's clock (GPUSPY_CLOCK=mono: in ns).
CUPTI_ENV = {"GPUSPY_CUPTI": "on", "GPUSPY_CLOCK": "mono", "FAKECUPTI_STATS": "1"}


# GPU timing from the CUPTI double (tests/doubles/fakecupti.c): its GPU runs
# each stream's work in order, a kernel grid_x us, a copy 10 bytes per ns, a
# memset 100, on gpuspy's clock (GPUSPY_CLOCK=mono: in ns).
CUPTI_ENV = {"GPUSPY_CUPTI": "on", "GPUSPY_CLOCK": "mono", "FAKECUPTI_STATS": "1"}
GPU_KIND = {"gpu_kernel": "launch", "gpu_copy": "copy", "gpu_memset": "memset"}


def cupti_join(ev):
    """The host launches, copies and memsets by CUPTI correlation id, and the
    GPU records; every GPU record must join a host record of its kind."""
    host = {e["corr"]: e for e in ev if e["kind"] in ("launch", "copy", "memset") and "corr" in e}
    gpu = [e for e in ev if e["kind"] in GPU_KIND]
    return host, gpu


def cupti_stats(p):
    """(callbacks made, records written, records handed back from inside a
    context's destruction)."""
    m = re.search(r"fakecupti: (\d+) callbacks, (\d+) records, (\d+) handed back at context destroy", p.stderr)
    check(m, f"no fakecupti statistics in {p.stderr!r}")
    return int(m[1]), int(m[2]), int(m[3])


@test
def cupti_records_joined_to_their_calls(tmp):
    """GPUSPY_CUPTI=on against the CUPTI double: prog_train's 69 kernels and 9
    copies come back as GPU records with the double's exact GPU times, each
    joined by correlation id to the call that queued it (which got one CUPTI
    callback at entry and one at exit), and the report's per-phase GPU time
    is theirs; the same when CUPTI hands the records back in small buffers
    on its own thread. Without an NVIDIA driver the default leaves CUPTI
    alone."""
    want_kernels = {("fwd_gemm", 64000): 30, ("bwd_gemm", 64000): 36, ("sgd_update", 32000): 3}
    want_copies = {("h2d", "pageable", 1 << 20, 104857): 6, ("d2h", "pageable", 4, 0): 3}
    untraced = run("prog_train", ["3", "100"], preload=False, tmp=tmp)
    # GPUSPY_CUPTI=auto (the default) without an NVIDIA driver: CUPTI stays
    # unloaded although the double is on the library path.
    d = os.path.join(tmp, "auto")
    os.makedirs(d)
    p = run("prog_train", ["3", "100"], env={"FAKECUPTI_STATS": "1"}, tmp=d)
    if not os.path.exists("/dev/nvidiactl"):
        check("fakecupti" not in p.stderr and only_trace(d)[0]["gpu_timing"] == "none",
              f"auto without a driver: {p.stderr!r}")
    for cap in ("", "2048"):
        d = os.path.join(tmp, cap or "whole")
        os.makedirs(d)
        p = run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, FAKECUPTI_BUFFER=cap), tmp=d)
        check(p.stdout == untraced.stdout, f"output {p.stdout!r}")
        check(cupti_stats(p) == (2 * 78, 78, 0), f"callbacks, records {cupti_stats(p)}")
        head, ev = only_trace(d)
        check(head["gpu_timing"] == "cupti", f"gpu_timing {head['gpu_timing']}")
        host, gpu = cupti_join(ev)
        kernels, copies = {}, {}
        for g in gpu:
            k = ((g["name"], g["end_ns"] - g["start_ns"]) if g["kind"] == "gpu_kernel" else
                 (g["dir"], g["host_mem"], g["bytes"], g["end_ns"] - g["start_ns"]))
            c = kernels if g["kind"] == "gpu_kernel" else copies
            c[k] = c.get(k, 0) + 1
        check(kernels == want_kernels, f"{cap}: kernels {kernels}")
        check(copies == want_copies, f"{cap}: copies {copies}")
        check(sorted(host) == sorted(g["corr"] for g in gpu) and len(host) == 78,
              f"{cap}: {len(host)} host calls with a correlation id for {len(gpu)} GPU records")
        for g in gpu:
            h = host[g["corr"]]
            check(h["kind"] == GPU_KIND[g["kind"]] and g["start_ns"] >= h["start_ns"] + 1000,
                  f"{cap}: GPU record {g} joined to {h}")
            check(g["kind"] != "gpu_copy" or (g["bytes"], g["dir"]) == (h["bytes"], h["dir"]),
                  f"{cap}: copy {g} vs {h}")
        on_cupti_thread = sum(1 for g in gpu if g["tid"] != head["pid"])
        check(on_cupti_thread > 0 if cap else on_cupti_thread == 0,
              f"{cap}: {on_cupti_thread} GPU records written on CUPTI's thread")
        o = report_json(os.path.join(d, traces(d)[0]))
        check(o["timing"] == "gpu", o["timing"])
        ph = {x["name"]: x for x in o["phases"]}
        got = {n: (ph[n]["launch"]["gpu_count"], ph[n]["launch"]["gpu_ns"])
               for n in ("forward", "backward", "optimizer")}
        check(got == {"forward": (30, 3 * 640000), "backward": (36, 3 * 768000), "optimizer": (3, 3 * 32000)},
              f"{cap}: per-phase GPU time {got}")
        h2d = ph["data"]["copy"]["h2d"]["pageable"]
        check((h2d["gpu_bytes"], h2d["gpu_ns"]) == (6 << 20, 6 * 104857), f"{cap}: data copies {h2d}")
        check(o["gpu"]["matched"] == o["gpu"]["records"] == 78, f"{cap}: matched {o['gpu']}")


@test
def cupti_copies_memsets_and_graph_kernels_join_their_calls(tmp):
    """The CUPTI double on prog_drv (every family once): each memset's and
    copy's GPU record has its call's bytes and direction, one record for
    every copy but those between two contexts (CUPTI's peer-to-peer kind,
    which gpuspy does not enable), 2D, 3D and batched copies included (a
    batch: one record of its summed bytes, as on the H200); the graph
    launch's three kernels carry its correlation id and graph id."""
    d = os.path.join(tmp, "drv")
    os.makedirs(d)
    run("prog_drv", env=CUPTI_ENV, tmp=d)
    _, ev = only_trace(d)
    host, gpu = cupti_join(ev)
    for g in gpu:
        h = host.get(g["corr"])
        check(h and h["kind"] == GPU_KIND[g["kind"]], f"GPU record {g} joined to {h}")
        check(g["kind"] == "gpu_kernel" or g["bytes"] == h["bytes"], f"bytes of {g} vs {h}")
        check(g["kind"] != "gpu_copy" or g["dir"] == h["dir"], f"direction of {g} vs {h}")
    timed = {g["corr"] for g in gpu if g["kind"] == "gpu_copy"}
    copies = [(h["api"], h["bytes"], h["corr"] in timed) for h in host.values() if h["kind"] == "copy"]
    want = [(api, n, d != "p2p")
            for kind, api, n, d, *_ in drv_expected(False) if kind == "copy"]
    check(sorted(copies) == sorted(want), f"copies with a GPU record: {sorted(copies)}")
    sets = [h["api"] for h in host.values() if h["kind"] == "memset"]
    check(len(sets) == 12 and sum(1 for g in gpu if g["kind"] == "gpu_memset") == 12, f"memsets {sets}")
    graph = [h for h in host.values() if h["api"] == "cuGraphLaunch"]
    check(len(graph) == 1, f"graph launches {graph}")
    nodes = [g for g in gpu if g["corr"] == graph[0]["corr"]]
    check([(g["name"], g.get("graph_id"), g["end_ns"] - g["start_ns"]) for g in nodes] ==
          [("graph_node", graph[0]["graph"] & 0xffffffff, 2000)] * 3, f"graph kernels {nodes}")


@test
def cupti_paused_step_has_records_but_no_join(tmp):
    """Paused (prog_train's second step): no callbacks and no join for
    that step, its GPU records still come."""
    d = os.path.join(tmp, "pause")
    os.makedirs(d)
    p = run("prog_train", ["3", "100", "pause"], env=CUPTI_ENV, tmp=d)
    check(cupti_stats(p) == (2 * 52, 78, 0), f"paused step: callbacks, records {cupti_stats(p)}")
    o = report_json(os.path.join(d, traces(d)[0]))
    check((o["gpu"]["matched"], o["gpu"]["records"]) == (52, 78), f"paused step: matched {o['gpu']}")
    ph = {x["name"]: x for x in o["phases"]}
    check((ph["forward"]["launch"]["gpu_count"], ph["forward"]["launch"]["gpu_ns"]) == (20, 2 * 640000),
          f"paused step: forward {ph['forward']['launch']}")


@test
def cupti_unfinished_records_left_out_with_a_warning(tmp):
    """GPU work still running at exit: the forced flush hands back 5
    records without times; they are left out, with one note in the trace
    (written at exit, after the file was finished), none on stderr."""
    d = os.path.join(tmp, "unfinished")
    os.makedirs(d)
    p = run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, FAKECUPTI_UNFINISHED="5", GPUSPY_QUIET="0"), tmp=d)
    check(gpuspy_lines(p.stderr) == [], f"unfinished: stderr {p.stderr!r}")
    check(notes(d) == ["5 GPU records had no times (GPU work still running at exit): left out of the trace"],
          f"unfinished: notes {notes(d)!r}")
    _, ev = only_trace(d)
    gpu = [e for e in ev if e["kind"] in GPU_KIND]
    check(len(gpu) == 73 and all(e["start_ns"] and e["end_ns"] >= e["start_ns"] for e in gpu),
          f"unfinished: {len(gpu)} GPU records")


def all_78_gpu_records(d):
    """The header of d's one trace, checked to hold prog_train 3 100's 78
    GPU records, each with its times."""
    head, ev = only_trace(d)
    gpu = [e for e in ev if e["kind"] in GPU_KIND]
    check(len(gpu) == 78 and all(e["end_ns"] >= e["start_ns"] > 0 for e in gpu), f"{len(gpu)} GPU records")
    return head


@test
def cupti_records_kept_when_the_program_ends_with__exit(tmp):
    """A program that ends with _exit (Python's os._exit, a worker
    process) runs no atexit handler: CUPTI's held records were lost, all
    78 of them (0 in the trace). gpuspy's _exit has the flusher thread
    flush them first, and the program's status and output are its own.
    The trace says it exited, with its status: the report says so, not a
    kill with GPU records perhaps missing."""
    if SANITIZED:
        raise Skip("the sanitizer's own _exit comes first and goes straight to libc's")
    d = os.path.join(tmp, "exit")
    os.makedirs(d)
    plain = run("prog_train", ["3", "100", "_exit"], env=CUPTI_ENV, tmp=tmp, preload=False, expect_rc=7)
    p = run("prog_train", ["3", "100", "_exit"], env=CUPTI_ENV, tmp=d, expect_rc=7)
    check(p.returncode == plain.returncode == 7 and p.stdout == plain.stdout == "trained 3 steps\n",
          f"exit {p.returncode}, output {p.stdout!r}")
    head = all_78_gpu_records(d)
    check(head["state"] == "exited" and head.get("exit_code") == 7, f"{head['state']} {head.get('exit_code')}")
    text = subprocess.run([GPUSPY, "report", "--color", "never", d], capture_output=True, text=True,
                          timeout=TIMEOUT).stdout
    line = text.split("\n== ")[1].splitlines()[1]
    check(line.startswith("   host vm, exited by _exit, status 7, ") and "may be missing" not in text and
          "trace incomplete" not in text, f"report: {line!r}")
    j = json.loads(subprocess.run([GPUSPY, "report", "--json", d], capture_output=True, text=True,
                                  timeout=TIMEOUT).stdout)["processes"][0]
    check(j["clean_exit"] is True and j["exit_code"] == 7, f"--json: {j.get('clean_exit')} {j.get('exit_code')}")


@test
def cupti_records_kept_when_two_threads_call__exit(tmp):
    """Two threads end the program by _exit, the second 50 ms after the
    first, while CUPTI's forced flush takes 150 ms (FAKECUPTI_FORCED_MS):
    the second thread saw the flush under way, did not wait for it, and
    ended the process in the middle of it: 0 of 78 GPU records kept. Now
    it waits for the flush the first asked for, as the first does. The
    second's status is 9, the first's 7: untraced the first's exit ends
    the process at once, so 7; traced both wait, and the first's status
    still wins (each of 5 runs)."""
    if SANITIZED:
        raise Skip("the sanitizer's own _exit comes first and goes straight to libc's")
    d = os.path.join(tmp, "exit2")
    os.makedirs(d)
    for i in range(4):
        e = os.path.join(d, str(i))
        os.makedirs(e)
        run("prog_train", ["3", "100", "_exit2"], env=dict(CUPTI_ENV, FAKECUPTI_FORCED_MS="150"), tmp=e,
            expect_rc=7)
    p = run("prog_train", ["3", "100", "_exit2"], env=dict(CUPTI_ENV, FAKECUPTI_FORCED_MS="150"), tmp=d,
            expect_rc=7)
    check(p.stdout == "trained 3 steps\n", f"output {p.stdout!r}")
    head = all_78_gpu_records(d)
    check(head["state"] == "exited" and head.get("exit_code") == 7, f"{head['state']} {head.get('exit_code')}")


@test
def cupti_records_kept_when__exit_comes_during_exits_flush(tmp):
    """The main thread calls exit(7), whose atexit flush takes 150 ms
    (FAKECUPTI_FORCED_MS); another thread calls _exit(9) 50 ms later. Its
    _exit saw the flush under way (nobody had asked the flusher thread)
    and ended the process in the middle of it: 0 of 78 GPU records kept.
    Now it waits for exit()'s flush as for another _exit's: all 78 are
    there. Which of the two ends the process is the program's own race
    (7 or 9), as untraced."""
    if SANITIZED:
        raise Skip("the sanitizer's own _exit comes first and goes straight to libc's")
    d = os.path.join(tmp, "exit_exit")
    os.makedirs(d)
    p = run("prog_train", ["3", "100", "exit_exit"], env=dict(CUPTI_ENV, FAKECUPTI_FORCED_MS="150"), tmp=d,
            expect_rc=None)
    check(p.returncode in (7, 9) and p.stdout == "trained 3 steps\n", f"exit {p.returncode}, output {p.stdout!r}")
    all_78_gpu_records(d)


@test
def cupti_records_kept_when_a_signal_kills_the_program(tmp):
    """A program killed by a signal it does not handle (abort(): SIGABRT)
    lost CUPTI's held records, all 78. gpuspy's fatal-signal handler has
    the flusher thread flush them before the signal kills the process; the
    status (killed by SIGABRT) and output are the program's own, and the
    trace says signaled, signal 6."""
    if SANITIZED:
        raise Skip("the sanitizers report abort() themselves")
    d = os.path.join(tmp, "abort")
    os.makedirs(d)
    plain = run("prog_train", ["3", "100", "abort"], env=CUPTI_ENV, tmp=tmp, preload=False, expect_rc=-6)
    p = run("prog_train", ["3", "100", "abort"], env=CUPTI_ENV, tmp=d, expect_rc=-6)
    check(p.stdout == plain.stdout == "trained 3 steps\n", f"output {p.stdout!r}")
    head = all_78_gpu_records(d)
    check(head["state"] == "signaled" and head.get("exit_signal") == 6, f"{head}")


@test
def cupti_exit_waits_for_no_flusher_that_never_started(tmp):
    """No thread can start (pthread_create fails: programs linked with
    cuBLAS on the H200; tests/hostile/nothreads.c), so CUPTI has no
    flusher thread: _exit (and a fatal signal) still woke it and waited
    its full 500 ms for a flush that never came; prog_train's _exit took
    0.5 s more than untraced, every time. Now it exits at once, with the
    program's status and output."""
    if SANITIZED:
        raise Skip("the sanitizer's own pthread_create comes first and reaches libc's, not the failing one")
    nothreads = os.path.join(BIN, "libhostile_nothreads.so")
    took = []
    for k in range(3):
        t0 = time.monotonic()
        p = run("prog_train", ["3", "100", "_exit"], env=dict(CUPTI_ENV, LD_PRELOAD=PRELOAD_PREFIX + nothreads + ":" + LIB),
                tmp=tmp, expect_rc=7)
        took.append(time.monotonic() - t0)
        check(p.stdout == "trained 3 steps\n", f"output {p.stdout!r}")
    check(min(took) < 0.3, f"prog_train took {min(took):.2f} s at the least, waiting for a flusher that never started")
    check(len(traces(tmp)) == 3 and dump(os.path.join(tmp, traces(tmp)[0]))[0]["gpu_timing"] == "cupti",
          f"traces {traces(tmp)}")


PID_NS = ["unshare", "--pid", "--fork"]  # the program as a pid namespace's init (pid 1)


@test
def cupti_records_kept_when_sigterm_leaves_init_running(tmp):
    """A pid namespace's init (pid 1: `python train.py` as a container's
    first process, sent SIGTERM by `docker stop`) is not killed by a
    signal left to its default action: the kernel drops it and the
    program runs on. gpuspy's fatal-signal handler took it for a death:
    the flusher made its last flush and ended, and the trace said
    signaled, so CUPTI's records of the two steps after the signal were
    lost at the program's _exit (27 of 78 kept, the trace "signaled" by
    15). Now the status and output are the program's own as before, all
    78 records are kept, and the trace only saw the signal, then the
    program's _exit with its status."""
    if SANITIZED:
        raise Skip("the sanitizer's own _exit comes first and goes straight to libc's")
    if subprocess.run([*PID_NS, "true"], capture_output=True).returncode != 0:
        raise Skip("no pid namespaces here (unshare --pid --fork needs privileges)")
    d = os.path.join(tmp, "init")
    os.makedirs(d)
    plain = run("prog_train", ["3", "100", "term"], env=CUPTI_ENV, tmp=tmp, preload=False, expect_rc=7, wrap=PID_NS)
    p = run("prog_train", ["3", "100", "term"], env=CUPTI_ENV, tmp=d, expect_rc=7, wrap=PID_NS)
    check(p.stdout == plain.stdout == "trained 3 steps\n", f"output {p.stdout!r}")
    head = all_78_gpu_records(d)
    check(head["pid"] == 1 and head["state"] == "exited" and head.get("exit_code") == 7 and
          head.get("signal_seen") == 15 and "exit_signal" not in head, f"{head}")


@test
def cupti_records_of_every_threads_first_launch(tmp):
    """8 threads whose first CUDA calls come at once, each launching one
    kernel: the first thread makes the trace file and starts CUPTI; the
    others' launches went ahead meanwhile, before CUPTI collected, and 7
    of the 8 kernels had no GPU record (the H200: cuda-samples'
    simpleCallback kept 1 of 8, a context migrating between threads 1
    of 2). They now wait for the start, as the first thread does: 8 GPU
    records, each joined to its launch, and with 100 launches a thread,
    800 of 800; and so with a context the main thread made and popped,
    which each thread pushes before it launches (threadMigration)."""
    for m, want, how in ((1, 8, []), (100, 800, []), (1, 8, ["migrate"])):
        d = os.path.join(tmp, f"m{m}{''.join(how)}")
        os.makedirs(d)
        p = run("prog_threads", ["8", str(m), *how], env=CUPTI_ENV, tmp=d)
        check(p.stdout == f"issued {want}\n" and cupti_stats(p)[1] == want, f"{m}: {p.stdout!r} {cupti_stats(p)}")
        _, ev = only_trace(d)
        host, gpu = cupti_join(ev)
        check(len(gpu) == want and all(g["corr"] in host and host[g["corr"]]["kind"] == "launch" for g in gpu) and
              len({host[g["corr"]]["tid"] for g in gpu}) == 8, f"{m}: {len(gpu)} GPU records of {want} launches")


@test
def cupti_records_of_a_destroyed_context_kept(tmp):
    """A context destroyed mid-run (cuCtxDestroy): its records are handed
    back from inside the destruction, before the output."""
    d = os.path.join(tmp, "destroy")
    os.makedirs(d)
    p = run("prog_train", ["3", "100", "destroy"], env=CUPTI_ENV, tmp=d)
    check(cupti_stats(p) == (2 * 78, 78, 78), f"context destroyed: {cupti_stats(p)}")
    check(sum(1 for e in only_trace(d)[1] if e["kind"] in GPU_KIND) == 78, "context destroyed: GPU records")


@test
def cupti_held_by_another_tool_means_host_timing(tmp):
    """Another tool holding CUPTI: one note in the trace, none on stderr,
    host timing, output unchanged."""
    d = os.path.join(tmp, "held")
    os.makedirs(d)
    p = run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, FAKECUPTI_HELD="1", GPUSPY_QUIET="0"), tmp=d)
    check(p.stdout == "trained 3 steps\n", p.stdout)
    check(gpuspy_lines(p.stderr) == [], f"stderr {p.stderr!r}")
    warn = notes(d)
    check(len(warn) == 1 and warn[0].startswith("another tool holds CUPTI"), f"notes {warn!r}")
    head, ev = only_trace(d)
    check(head["gpu_timing"] == "in_use" and not cupti_join(ev)[1]
          and sum(1 for e in ev if e["kind"] == "launch") == 69, f"held: {head['gpu_timing']}")


@test
def cupti_injection_without_preload_records_gpu_work(tmp):
    """CUDA_INJECTION64_PATH=libgpuspy.so without LD_PRELOAD: the GPU
    records alone, and no correlation callbacks (nothing to join them to);
    preloaded and injected both, every GPU record joins its call."""
    d = os.path.join(tmp, "inject")
    os.makedirs(d)
    env = dict(CUPTI_ENV, CUDA_INJECTION64_PATH=LIB)
    if SANITIZED:  # the sanitizer runtime alone, loaded first
        env["LD_PRELOAD"] = PRELOAD_PREFIX.rstrip(":")
    p = run("prog_train", ["3", "100"], preload=False, tmp=d, env=env)
    check(p.stdout == "trained 3 steps\n" and cupti_stats(p) == (0, 78, 0), f"injection: {p.stderr!r}")
    # Preloaded and named by CUDA_INJECTION64_PATH: the wrappers are in the
    # path, the callbacks stay on and every GPU record joins its call.
    both = os.path.join(tmp, "both")
    os.makedirs(both)
    q = run("prog_train", ["3", "100"], tmp=both, env=dict(CUPTI_ENV, CUDA_INJECTION64_PATH=LIB))
    host, gpu = cupti_join(only_trace(both)[1])
    check(cupti_stats(q) == (2 * 78, 78, 0) and sorted(host) == sorted(g["corr"] for g in gpu),
          f"preloaded and injected: {cupti_stats(q)}, {len(host)} joined of {len(gpu)}")
    head, ev = only_trace(d)
    kinds = {}
    for e in ev:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    check(head["gpu_timing"] == "cupti" and kinds == {"gpu_kernel": 69, "gpu_copy": 9},
          f"injection: {head['gpu_timing']} {kinds}")


@test
def cupti_records_reach_the_file_before_a_kill(tmp):
    """CUPTI's flush period hands back only full buffers (so does the double);
    gpuspy's flusher thread asks for the completed ones a second after the
    program goes quiet: a process idle after its GPU work has all 78 GPU
    records in its file within seconds, and keeps them when SIGKILLed; the
    report says what a killed process may lack."""
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_QUIET="1",
             LD_PRELOAD=PRELOAD_PREFIX + LIB, **CUPTI_ENV)
    p = subprocess.Popen([os.path.join(BIN, "prog_train"), "3", "100", "hold"], env=e,
                         stdout=subprocess.PIPE, text=True)
    seen, waited = -1, 0.0
    try:
        check(p.stdout.readline() == "trained 3 steps\n", "prog_train hold: no output")
        path = os.path.join(tmp, traces(tmp)[0])
        while waited < 30:  # quiet: the flusher asks within two seconds
            seen = sum(1 for x in dump(path)[1] if x["kind"] in GPU_KIND)
            if seen == 78:
                break
            time.sleep(0.25)
            waited += 0.25
    finally:
        p.kill()
        p.wait()
    check(seen == 78, f"{seen} of 78 GPU records in the file of the live process after {waited:.1f} s")
    head, ev = only_trace(tmp)
    check(head["state"] != "exited" and sum(1 for x in ev if x["kind"] in GPU_KIND) == 78,
          f"after SIGKILL: {head['state']}, {sum(1 for x in ev if x['kind'] in GPU_KIND)} GPU records")
    text = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True).stdout
    check("GPU records of its last seconds may be missing: CUPTI hands them over a second after the program "
          "goes quiet, every GPUSPY_CUPTI_FLUSH seconds (default 5) while it launches" in text,
          f"report of the killed process: {text[:600]}")


@test
@slow
def cupti_flushes_wait_while_the_program_launches(tmp):
    """While the program keeps launching, gpuspy's flusher asks CUPTI for
    its records every GPUSPY_CUPTI_FLUSH seconds (default 5), not every
    second (that slowed a launch-bound loop on the H200): prog_train
    launching for ~3.5 s (700 steps of 5 ms host work) gets at most one
    unforced flush by default and at least two with GPUSPY_CUPTI_FLUSH=1
    (three ticks; a slow machine may lose one); at most one, too, paused
    from the second step on and injected (CUDA_INJECTION64_PATH, no
    preload), where no callback tells whether it launches; every one of the
    700 x 26 GPU records is in the file each time. A bad value warns once
    and keeps 5. (On a loaded machine the run takes longer: one more flush
    is allowed per 5 s it took.)"""
    def flushes(name, env, args=(), preload=True):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        t0 = time.monotonic()
        p = run("prog_train", ["700", "5000", *args], env=dict(CUPTI_ENV, **env), tmp=d, preload=preload)
        took = time.monotonic() - t0
        m = re.search(r"(\d+) unforced flushes", p.stderr)
        check(m and p.stdout == "trained 700 steps\n", f"{name}: {p.stdout!r} {p.stderr!r}")
        gpu = sum(1 for x in only_trace(d)[1] if x["kind"] in GPU_KIND)
        check(gpu == 700 * 26, f"{name}: {gpu} GPU records")
        return int(m[1]), took, max(1, int(took // 5))
    n, took, most = flushes("default", {})
    check(n <= most, f"default: {n} flushes while launching for {took:.1f} s")
    n, took, _ = flushes("every1", {"GPUSPY_CUPTI_FLUSH": "1"})
    check(n >= 2, f"GPUSPY_CUPTI_FLUSH=1: {n} flushes while launching for {took:.1f} s")
    n, took, most = flushes("paused", {}, ["paused"])
    check(n <= most, f"paused: {n} flushes while launching for {took:.1f} s")
    inject = {"CUDA_INJECTION64_PATH": LIB}
    if SANITIZED:  # the sanitizer runtime alone, loaded first
        inject["LD_PRELOAD"] = PRELOAD_PREFIX.rstrip(":")
    n, took, most = flushes("injected", inject, preload=False)
    check(n <= most, f"injected: {n} flushes while launching for {took:.1f} s")
    for bad in ("0", "x", "-1", "3601", "5s"):
        p = run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, GPUSPY_CUPTI_FLUSH=bad, **LOG_STDERR), tmp=tmp)
        want = f"GPUSPY_CUPTI_FLUSH={bad} is not a number of seconds (1..3600); using 5"
        check(p.stdout == "trained 3 steps\n" and p.stderr.count(want) == 1, f"{bad}: {p.stderr!r}")


@test
def cupti_a_kernel_that_never_ended_is_kept_and_named_first(tmp):
    """A kernel with a CUPTI record with a start and no end
    (FAKECUPTI_FAULT): it is kept, marked (result 1, its end its start),
    where before it was left out; the report's process lines name it
    first, with when it started, as still running at exit (no call failed
    with a sticky error: test_cupti's fault tests), and --json has it as
    `fault`. Work that never started (no times at all) is still left out
    with its warning."""
    d = os.path.join(tmp, "fault")
    os.makedirs(d)
    run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, FAKECUPTI_FAULT="1"), tmp=d)
    _, ev = only_trace(d)
    bad = [e for e in ev if e["kind"] in GPU_KIND and e.get("result")]
    check(len(bad) == 1 and bad[0]["name"] == "sgd_update" and bad[0]["result"] == 1 and
          bad[0]["end_ns"] == bad[0]["start_ns"], f"unended records {bad}")
    path = os.path.join(d, traces(d)[0])
    text = subprocess.run([GPUSPY, "report", "--color", "never", path], capture_output=True, text=True,
                          timeout=TIMEOUT).stdout
    lines = text.split("\n== ")[1].splitlines()
    # No call failed after it: said as work still running at exit, not as
    # a fault (a program may simply exit without synchronising).
    check(re.fullmatch(r"   GPU kernel sgd_update, started at \S+ ms, was still running at exit \(no end recorded\)",
                       lines[2]), "\n".join(lines[:4]))
    o = json.loads(subprocess.run([GPUSPY, "report", "--json", path], capture_output=True, text=True,
                                  timeout=TIMEOUT).stdout)
    f = o["processes"][0]["fault"]
    first = min(e["start_ns"] for e in ev)
    check(f["kernel"] == "sgd_update" and f["what"] == "running at exit" and f["start_ns"] == bad[0]["start_ns"] - first and f["failed_after"] == 0,
          f"fault {f}")


FAULT_SRC = os.path.join(ROOT, "tests", "progs", "prog_fault.c")
ASSERT_ENV = dict(CUPTI_ENV, FAKECUDA_ASSERT="check_index")


def fault_report(d):
    """The fault's lines (the process's third header line and those
    indented under it) and --json's `fault` of the one trace in d."""
    return fault_report_of(os.path.join(d, traces(d)[0]))


def fault_report_of(path):
    text = subprocess.run([GPUSPY, "report", "--color", "never", path], capture_output=True, text=True,
                          timeout=TIMEOUT).stdout
    lines = text.split("\n== ")[1].splitlines()[2:]
    lines = lines[:1 + next((i for i, l in enumerate(lines[1:]) if not l.startswith("     ")), len(lines) - 1)]
    o = json.loads(subprocess.run([GPUSPY, "report", "--json", path], capture_output=True, text=True,
                                  timeout=TIMEOUT).stdout)
    return lines, o["processes"][0].get("fault")


def fault_run(tmp, name, args, env):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    p = run("prog_fault", args, env=env, tmp=d, expect_rc=1)
    check(p.stdout == "synchronize: 710, memset after: 710\n", f"{name}: output {p.stdout!r}")
    return d


@test
def cupti_a_faulted_kernel_is_named_from_its_launch(tmp):
    """tests/gpu/exits/fault.cu as the H200 ran it: 20 launches, a good
    synchronize, a kernel whose device-side assert fails (FAKECUDA_ASSERT),
    then a synchronize and a memset that fail with 710. CUPTI's forced
    flush then hands back every kernel record without times, so no GPU
    record names the kernel: the host side does, the only launch since the
    last synchronize. The report's first process line names it, with the
    first failed call and the line where the error surfaced (that call's
    stack, kept although it took less than GPUSPY_STACK_MIN); --json has
    it as `fault`; the note says why the records had no times. The same
    without CUPTI; with every launch's stack, the launch's own line."""
    sync = src_line(FAULT_SRC, "the error surfaces here")
    launch = src_line(FAULT_SRC, "the launch the report should name")
    first = ("   GPU kernel check_index faulted (a device-side assert): error 710 (cudaErrorAssert) from "
             "cudaDeviceSynchronize, and 2 calls failed in all")
    want = {"kernel": "check_index", "what": "fault", "found": "last launch before the first failed call",
            "cause": "a device-side assert", "candidates": 1, "surfaced_at": f"main (prog_fault.c:{sync})",
            "failed_after": 2, "first_failed_api": "cudaDeviceSynchronize", "first_failed_code": 710}
    for name, env in (("cupti", ASSERT_ENV), ("min", dict(ASSERT_ENV, GPUSPY_STACK_MIN="1s")),
                      ("nocupti", dict(ASSERT_ENV, GPUSPY_CUPTI="off"))):
        d = fault_run(tmp, name, [], env)
        lines, f = fault_report(d)
        check(lines == [first, f"     the error surfaced at main (prog_fault.c:{sync}); CUDA_LAUNCH_BLOCKING=1 "
                               "makes the launch itself fail"], f"{name}:\n" + "\n".join(lines))
        check(f == want, f"{name}: fault {f}")
        if name != "nocupti":
            check(notes(d) == ["21 GPU records came back without times after the GPU fault (a call failed with "
                               "a sticky error): left out of the trace"], f"{name}: notes {notes(d)!r}")
    d = fault_run(tmp, "launches", [], dict(ASSERT_ENV, GPUSPY_STACK_LAUNCHES="1"))
    lines, f = fault_report(d)
    check(lines == [first, f"     launched at main (prog_fault.c:{launch})"], "launches:\n" + "\n".join(lines))
    check(f == dict(want, launched_at=f"main (prog_fault.c:{launch})"), f"launches: fault {f}")


@test
def cupti_a_fault_after_two_launches_names_both(tmp):
    """Two launches between the last good synchronize and the failing one:
    either kernel may have faulted, which no trace tells. The report names
    the last and the first, says it is one of 2, and that
    CUDA_LAUNCH_BLOCKING=1 makes the failing launch report it; run so, the
    launch that failed first is named. A GPU record that started and never
    ended (FAKECUPTI_FAULT) names the kernel when it is one of the two."""
    sync = src_line(FAULT_SRC, "the error surfaces here")
    launch = src_line(FAULT_SRC, "the launch the report should name")
    failure = "error 710 (cudaErrorAssert) from cudaDeviceSynchronize, and 2 calls failed in all"
    lines, f = fault_report(fault_run(tmp, "two", ["two"], ASSERT_ENV))
    check(lines == [f"   GPU kernel check_index, or the one launched before it, faulted (a device-side assert): "
                    f"{failure}",
                    "     one of the 2 kernels launched since the last call that synchronized: the first scale, "
                    "the last check_index",
                    f"     the error surfaced at main (prog_fault.c:{sync}); CUDA_LAUNCH_BLOCKING=1 makes the "
                    "failing launch itself fail"], "two:\n" + "\n".join(lines))
    check(f == {"kernel": "check_index", "what": "fault", "found": "last launch before the first failed call",
                "cause": "a device-side assert", "candidates": 2, "first_candidate": "scale",
                "surfaced_at": f"main (prog_fault.c:{sync})", "failed_after": 2,
                "first_failed_api": "cudaDeviceSynchronize", "first_failed_code": 710}, f"two: fault {f}")
    d = fault_run(tmp, "record", ["two"], dict(ASSERT_ENV, FAKECUPTI_FAULT="1"))
    _, ev = only_trace(d)
    rec = [e for e in ev if e["kind"] == "gpu_kernel"]
    lines, f = fault_report(d)
    check(len(rec) == 1 and rec[0]["name"] == "check_index" and rec[0].get("result") == 1, f"record: {rec}")
    check(lines[0] == f"   GPU kernel check_index faulted (a device-side assert): {failure}" and len(lines) == 2,
          "record:\n" + "\n".join(lines))
    check(f["found"] == "gpu record" and f["kernel"] == "check_index" and f["candidates"] == 2 and
          f["start_ns"] == rec[0]["start_ns"] - min(e["start_ns"] for e in ev), f"record: fault {f}")
    lines, f = fault_report(fault_run(tmp, "blocking", ["two"], dict(ASSERT_ENV, CUDA_LAUNCH_BLOCKING="1")))
    check(lines == ["   GPU kernel scale faulted (a device-side assert): error 710 (cudaErrorAssert) from "
                    "cudaLaunchKernel, and 3 calls failed in all",
                    "     the first failed call launched check_index: with CUDA_LAUNCH_BLOCKING=1, that kernel "
                    "faulted",
                    f"     the error surfaced at main (prog_fault.c:{launch})"], "blocking:\n" + "\n".join(lines))
    check(f["first_failed_launch"] == "check_index" and f["candidates"] == 1, f"blocking: fault {f}")


@test
def cupti_a_fault_in_a_made_up_trace_names_the_programs_call(tmp):
    """The H200's trace of fault.cu, made up as JSON Lines: the driver's
    failed cuCtxSynchronize_v2 comes first (it ended first) inside the
    program's failed cudaDeviceSynchronize, whose stack is the program's
    line (the driver call's starts in the static runtime); the report
    names the program's call, and counts the two as one failure (the
    program made two calls that failed, not three). A GPU record that never ended from long
    before (not one of the launches since the last synchronize) and one
    whose start is before the trace began (the H200 gave one after a
    fault) name nothing."""
    t = 10 ** 12
    lines = [{"type": "process", "format_version": 2, "pid": 1, "ppid": 0, "host": "h", "rank": -1,
              "local_rank": -1, "command": "fault_bin", "events": 0, "dropped": 0, "clean_exit": True,
              "state": "exited", "truncated": False, "threads": 1, "start_ns": t, "device_mem": [1 << 30],
              "clock": "monotonic", "gpu_timing": "cupti"},
             {"type": "stack", "id": 1, "frames": ["main (fault.cu:32)", "__libc_start_main (libc.so.6)"]},
             {"type": "stack", "id": 2, "frames": ["cudaDeviceSynchronize+0x3a (fault_bin)", "main (fault.cu:32)"]}]

    def ev(kind, api, s, e, result=0, **kw):
        lines.append({"type": "event", "kind": kind, "api": api, "tid": 1, "start_ns": t + s, "end_ns": t + e,
                      "result": result, "device": 0, **kw})

    def launch(s, name, corr):
        ev("launch", "cudaLaunchKernel", s, s + 5, name=name, grid=[1, 1, 1], block=[1, 1, 1], stream=0,
           async_=True, corr=corr)
    for i in range(3):
        launch(10 * i, "scale", 10 + i)
    ev("gpu_kernel", "cupti_kernel", 40, 40, result=1, name="scale", corr=12, stream=7)
    ev("sync", "cudaDeviceSynchronize", 50, 400)
    launch(410, "check_index", 13)
    ev("sync", "cuCtxSynchronize_v2", 430, 440, result=710, stack=2)
    ev("sync", "cudaDeviceSynchronize", 420, 450, result=710, stack=1)
    ev("memset", "cuMemsetD8_v2", 460, 470, result=710, bytes=16)
    ev("gpu_kernel", "cupti_kernel", -5000, -5000, result=1, name="sgd", corr=9, stream=7)
    path = os.path.join(tmp, "fault.jsonl")
    with open(path, "w") as f:
        f.write("".join(json.dumps(l).replace('"async_"', '"async"') + "\n" for l in lines))
    lines, f = fault_report_of(path)
    check(lines == ["   GPU kernel check_index faulted (a device-side assert): error 710 (cudaErrorAssert) from "
                    "cudaDeviceSynchronize, and 2 calls failed in all",
                    "     the error surfaced at main (fault.cu:32); CUDA_LAUNCH_BLOCKING=1 makes the launch itself "
                    "fail"], "\n".join(lines))
    check(f["found"] == "last launch before the first failed call" and f["candidates"] == 1 and
          f["surfaced_at"] == "main (fault.cu:32)", f"fault {f}")


@test
def cupti_a_fault_on_another_stream_stays_a_candidate(tmp):
    """Two streams: `fill` launched on stream A, `check_index` on stream
    B, then stream A's synchronize returns (its work is done), then the
    device's synchronize fails with 710. Stream A's sync says nothing of
    stream B: its kernel is still the one that can have faulted. The
    candidates were cleared by any synchronize, so the report named no
    kernel from the host side; now it names check_index, the only launch
    not yet synchronized. A device's synchronize that succeeds clears
    every stream, and an event's (whose stream the trace does not name)
    none: with fill's stream synchronized through an event, both are
    candidates."""
    t = 10 ** 12

    def trace(name, sync_a):
        lines = [{"type": "process", "format_version": 2, "pid": 1, "ppid": 0, "host": "h", "rank": -1,
                  "local_rank": -1, "command": "two_streams", "events": 0, "dropped": 0, "clean_exit": True,
                  "state": "exited", "truncated": False, "threads": 1, "start_ns": t, "device_mem": [1 << 30],
                  "clock": "monotonic", "gpu_timing": "none"}]

        def ev(kind, api, s, e, result=0, **kw):
            lines.append({"type": "event", "kind": kind, "api": api, "tid": 1, "start_ns": t + s,
                          "end_ns": t + e, "result": result, "device": 0, **kw})
        ev("sync", "cudaDeviceSynchronize", 0, 5)
        ev("launch", "cudaLaunchKernel", 10, 15, name="fill", grid=[1, 1, 1], block=[1, 1, 1], stream=0xa,
           corr=1)
        ev("launch", "cudaLaunchKernel", 20, 25, name="check_index", grid=[1, 1, 1], block=[1, 1, 1],
           stream=0xb, corr=2)
        ev("sync", sync_a, 30, 40, stream=0xa)
        ev("sync", "cudaDeviceSynchronize", 50, 60, result=710)
        path = os.path.join(tmp, name + ".jsonl")
        with open(path, "w") as f:
            f.write("".join(json.dumps(l) + "\n" for l in lines))
        return path
    lines, f = fault_report_of(trace("stream", "cudaStreamSynchronize"))
    check(lines[0] == "   GPU kernel check_index faulted (a device-side assert): error 710 (cudaErrorAssert) from "
          "cudaDeviceSynchronize, and 1 call failed in all" and f["candidates"] == 1 and
          f["kernel"] == "check_index", "\n".join(lines) + f"\n{f}")
    lines, f = fault_report_of(trace("event", "cudaEventSynchronize"))
    check(f["candidates"] == 2 and f["kernel"] == "check_index" and f["first_candidate"] == "fill",
          "\n".join(lines) + f"\n{f}")


@test
def cupti_a_program_polling_after_a_fault_pays_few_stacks(tmp):
    """After the fault, prog_fault calls cudaDeviceSynchronize 40 more
    times, each failing at once with 710 (a program that polls or
    retries). A failed call with a sticky error keeps its stack whatever
    GPUSPY_STACK_MIN says, but only the first 16 such calls: the 40 each
    walked a stack before. The report still names the line where the
    error surfaced. (GPUSPY_STACK_MIN=1s: the later failed calls keep no
    stack on a loaded machine either, where one may stretch past 10 us.)"""
    d = fault_run(tmp, "poll", ["poll"], dict(ASSERT_ENV, GPUSPY_STACK_MIN="1s"))
    _, ev = only_trace(d)
    sticky = [e for e in ev if e.get("result") == 710]
    stacked = [e for e in sticky if e.get("stack")]
    check(len(sticky) == 42 and len(stacked) == 16, f"{len(sticky)} failed, {len(stacked)} with a stack")
    lines, f = fault_report(d)
    check(f["kernel"] == "check_index" and f["surfaced_at"].startswith("main (prog_fault.c:"), f"fault {f}")


PY_FAULT = os.path.join(ROOT, "tests", "progs", "py_fault.py")


@test
def cupti_a_faulted_kernel_launched_from_python_is_named_at_its_line(tmp):
    """tests/gpu/exits/loop.py's index fault as Python makes it, through
    ctypes.CDLL, which releases the GIL as PyTorch's bindings do
    (py_fault.py). A launch keeps its Python frames (a few loads); the
    thread's first sticky failure writes them as a mark at that launch's
    start (GSPY_MARK_FAULT_SITE), and the report gives the launch's own
    line, not the synchronize's where the error surfaced, the H200's
    `torch.cuda.synchronize()`. The same without CUPTI, its launches
    sampled for their stacks (the default). Without CUPTI and launch
    stacks (nothing turns Python frames on while ctypes has released the
    GIL: the launches keep nothing): the line where it surfaced, past
    ctypes' own frames (libffi's, _ctypes_callproc). With Python frames
    off and every launch's stack taken: no line at all, though a Python
    built from source has the interpreter's lines ("run_mod
    (pythonrun.c:1731)" is not the program's). When the first call
    to fail is a later launch (PyTorch's next operation, often), the
    faulted one is still named at its line."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    if sys.version_info < (3, 11):
        raise Skip("Python frames without the GIL need CPython 3.11 or later")
    lib = os.path.join(BIN, "libcudart.so.13")
    line = lambda tag: src_line(PY_FAULT, "# " + tag)
    first = ("   GPU kernel check_index faulted (a device-side assert): error 710 (cudaErrorAssert) from "
             "cudaDeviceSynchronize, and 1 call failed in all")
    runs = (("cupti", {}, []), ("launch", {}, ["launch"]), ("nocupti", {"GPUSPY_CUPTI": "off", "GPUSPY_STACK_LAUNCHES": "0"}, []),
            ("sampled", {"GPUSPY_CUPTI": "off"}, []),
            ("nopython", {"GPUSPY_PYTHON_FRAMES": "0", "GPUSPY_STACK_LAUNCHES": "1"}, []))
    for name, extra, args in runs:
        d = os.path.join(tmp, name)
        os.makedirs(d)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUSPY_")}
        env.update(ASSERT_ENV, GPUSPY_DIR=d, LD_PRELOAD=LIB, LD_LIBRARY_PATH=BIN, **extra)
        p = subprocess.run([sys.executable, PY_FAULT, lib, *args], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == 1 and p.stdout == "synchronize 710\n", f"{name}: {p.returncode} {p.stdout!r} {p.stderr}")
        ev, stacks = dump_stacks(os.path.join(d, traces(d)[0]))
        marks = [e for e in ev if e["kind"] == "mark"]
        lines, f = fault_report(d)
        if name in ("cupti", "launch", "sampled"):
            head = first if name != "launch" else first.replace(
                "from cudaDeviceSynchronize, and 1 call failed", "from cudaLaunchKernel, and 2 calls failed")
            launch = next(e for e in ev if e["kind"] == "launch" and e.get("name") == "check_index")
            check(len(marks) == 1 and marks[0]["name"] == "gpuspy: the launch before the fault" and
                  marks[0]["start_ns"] == launch["start_ns"] and marks[0]["tid"] == launch["tid"] and
                  stacks[marks[0]["stack"]] == [f"launch ({PY_FAULT}:{line('LINE_LAUNCH')})",
                                                f"index ({PY_FAULT}:{line('LINE_INDEX')})",
                                                f"<module> ({PY_FAULT}:{line('LINE_CALL')})"],
                  f"marks {marks}, {[stacks.get(m.get('stack')) for m in marks]}")
            blocking = ["     the first failed call launched scale: with CUDA_LAUNCH_BLOCKING=1, that kernel "
                        "faulted"] if name == "launch" else []
            check(lines == [head, *blocking, f"     launched at launch ({PY_FAULT}:{line('LINE_LAUNCH')})"],
                  f"{name}:\n" + "\n".join(lines))
            check(f["launched_at"] == f"launch ({PY_FAULT}:{line('LINE_LAUNCH')})" and f["kernel"] == "check_index"
                  and f["found"] == "last launch before the first failed call", f"{name}: fault {f}")
        else:
            check(not marks, f"{name}: marks {marks}")
            where = f"<module> ({PY_FAULT}:{line('LINE_SYNC')})" if name == "nocupti" else None
            if where:
                check(lines == [first, f"     the error surfaced at {where}; CUDA_LAUNCH_BLOCKING=1 makes the "
                                       "launch itself fail"], f"{name}:\n" + "\n".join(lines))
            check("launched_at" not in f and f["kernel"] == "check_index", f"{name}: fault {f}")
            if name == "nopython": # the interpreter's frames, with lines or not, are nobody's line
                check("surfaced_at" not in f and not any(" the error surfaced" in l for l in lines),
                      f"{name}: fault {f}\n" + "\n".join(lines))
