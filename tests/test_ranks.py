# SPDX-License-Identifier: MIT
"""The ranks of one job (gpuspy report over rank files): made-up traces of
four ranks whose steps are known to the nanosecond, one of them slow, with
NCCL kernels on the GPU, or with gloo's all-reduces on the host; three
ranks of tests/progs/prog_ranks.c on the driver double, one of them slow; and
ranks without collectives."""
import json
import os
import re
import subprocess

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)

STEP = 10000000  # 10 ms


OVERLAP = 500000  # a compute kernel runs 0.5 ms into each step's all-reduce


def rank_trace(path, rank, work, nccl, steps=12, skew=0, gloo=False):
    """Rank `rank`: each step a phase "forward" of `work` ns, then
    "backward" to the step's end, holding one NCCL all-reduce kernel of
    `nccl` ns on the GPU, which a compute kernel on another stream
    overlaps by OVERLAP; its clock `skew` ns off the others'. With gloo,
    the all-reduce is gloo's on the host instead: the main thread copies
    4 MiB to pinned buffer 0x7000 on stream 7, gloo's thread (tid +1000)
    syncs stream 7 until work + 300 and copies the buffer back at
    STEP - 200 (the collective: STEP - 500 - work); a 2 ms kernel runs
    inside it. Decoys: the main thread syncs and copies a batch to the
    device from another buffer; gloo's thread copies 0x7000 back with
    other bytes, and a copy back without a sync before it."""
    t = 10 ** 12 + skew
    lines = [{"type": "process", "format_version": 2, "pid": 100 + rank, "ppid": 1, "host": f"node{rank // 2}",
              "rank": rank, "local_rank": rank % 2, "command": "train.py", "events": 0, "dropped": 0,
              "clean_exit": True, "state": "exited", "truncated": False, "threads": 1, "start_ns": t,
              "gpu_timing": "cupti", "device_mem": [1 << 34], "clock": "monotonic"}]

    def ev(kind, api, s, e, **kw):
        lines.append({"type": "event", "kind": kind, "api": api, "tid": 100 + rank, "start_ns": s, "end_ns": e,
                      "result": 0, **kw})
    def copy(api, s, e, d, addr, nbytes, tid=100 + rank):
        lines.append({"type": "event", "kind": "copy", "api": api, "tid": tid, "start_ns": s, "end_ns": e,
                      "result": 0, "bytes": nbytes, "dir": d, "host_mem": "pinned", "addr": addr, "stream": 7,
                      "async": True, "device": 0})

    def sync(s, e, tid, stream=7):
        lines.append({"type": "event", "kind": "sync", "api": "cuStreamSynchronize", "tid": tid, "start_ns": s,
                      "end_ns": e, "result": 0, "stream": stream, "device": 0})
    gt = 1100 + rank  # gloo's thread
    if gloo and rank == 0:  # rank 0 alone: a start-up round trip of 144 bytes, which matches no other rank's
        copy("cuMemcpyDtoHAsync_v2", t - 5000, t - 4900, "d2h", 0x6000, 144)
        sync(t - 4800, t - 4700, gt)
        copy("cuMemcpyHtoDAsync_v2", t - 3000, t - 2900, "h2d", 0x6000, 144, tid=gt)
    for k in range(steps):
        ev("phase_begin", "gpuspy_phase_push", t, t, name="forward")
        ev("phase_end", "gpuspy_phase_pop", t + work, t + work, name="forward")
        ev("phase_begin", "gpuspy_phase_push", t + work, t + work, name="backward")
        if gloo:
            sync(t + 10, t + 20, 100 + rank)
            copy("cuMemcpyHtoDAsync_v2", t + 30, t + 40, "h2d", 0x9000, 4 << 20)  # a batch: no round trip
            copy("cuMemcpyDtoHAsync_v2", t + work + 100, t + work + 200, "d2h", 0x7000, 4 << 20)
            sync(t + work + 150, t + work + 300, gt)
            ev("gpu_kernel", "cupti_kernel", t + work + 1000, t + work + 2001000, device=0, stream=2,
               name="sgemm_backward")
            copy("cuMemcpyHtoDAsync_v2", t + STEP - 200, t + STEP - 150, "h2d", 0x7000, 4 << 20, tid=gt)
            copy("cuMemcpyDtoHAsync_v2", t + STEP - 140, t + STEP - 130, "d2h", 0x7000, 1024)
            copy("cuMemcpyHtoDAsync_v2", t + STEP - 120, t + STEP - 110, "h2d", 0x7000, 1024, tid=gt)  # no sync
            copy("cuMemcpyHtoDAsync_v2", t + STEP - 100, t + STEP - 90, "h2d", 0x7000, 4096, tid=gt)  # other bytes
        else:
            ev("launch", "cuLaunchKernel", t + work + 10, t + work + 20,
               name="ncclDevKernel_AllReduce_Sum_f32_RING_LL", grid=[1, 1, 1], block=[1, 1, 1], device=0, stream=1,
               corr=k + 1)
            ev("gpu_kernel", "cupti_kernel", t + STEP - nccl - 100, t + STEP - 100, device=0, stream=1, corr=k + 1,
               name="ncclDevKernel_AllReduce_Sum_f32_RING_LL")
            ev("gpu_kernel", "cupti_kernel", t + work + 1000, t + STEP - nccl - 100 + OVERLAP, device=0, stream=2,
               name="sgemm_backward")
        ev("phase_end", "gpuspy_phase_pop", t + STEP - 50, t + STEP - 50, name="backward")
        t += STEP
    lines.sort(key=lambda x: x.get("start_ns", 0) if x["type"] == "event" else -1)
    with open(path, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def report(d, *args):
    p = subprocess.run([GPUSPY, "report", *args, d], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"report: {p.returncode} {p.stderr}")
    return p.stdout


@test
def ranks_name_the_straggler(tmp):
    """Rank 2 computes 3 ms longer each step; the others wait for it in
    their all-reduce (4 ms of NCCL against its 1 ms): rank 2 is the
    straggler in every step compared, 3 ms a step over the others' mean,
    and they waited 9 ms a step in all. Clocks 5 s apart change nothing:
    steps are matched by their order; the collectives' ends measure each
    rank's clock offset from rank 0's exactly."""
    for r in range(4):
        slow = r == 2
        rank_trace(os.path.join(tmp, f"r{r}.jsonl"), r, 6000000 if slow else 3000000, 1000000 if slow else 4000000,
                   skew=r * 5000000000)
    o = json.loads(report(tmp, "--json"))["ranks"]
    # A step runs from one step's first phase event to the next's, as the
    # report's steps do (a few ns off the 10 ms the phases span).
    got = [(x["rank"], x["steps"], round(x["step_ns"] / x["steps"], -3), x["collective_ns"] // x["steps"],
            x["straggler_steps"]) for x in o["ranks"]]
    n = o["steps"]
    want = [(r, n, STEP, 1000000 if r == 2 else 4000000, n if r == 2 else 0) for r in range(4)]
    check(n >= 8 and got == want, f"ranks {got}\n want {want}")
    check(o["straggler"] == {"rank": 2, "steps": n, "lead_ns": 3000000 * n, "others_waited_ns": 9000000 * n},
          f"straggler {o['straggler']}")
    offs = [(x["rank"], x.get("clock_offset_ns"), x.get("clock_spread_ns")) for x in o["ranks"]]
    check(offs == [(0, 0, 0)] + [(r, r * 5000000000, 0) for r in (1, 2, 3)], f"clocks {offs}")
    text = report(tmp, "--color", "never")
    check("  clock of rank 3: +15.00 s from rank 0's (median of 12 collectives' ends; 90% within 0 ns)\n"
          in text, text[-800:])
    check(f"straggler: rank 2, the last to its collectives in {n} of {n} steps,\n  3.0 ms a step after the "
          "others' mean; the others waited for it 9.0 ms a step in all,\n  inside their collectives\n" in text,
          text[-1500:])
    # Overlap: a compute kernel runs 0.5 ms into each all-reduce.
    ov = [(x["rank"], x["collectives"], x["overlap_ns"], x["overlap_of_ns"]) for x in o["ranks"]]
    want = [(r, "nccl", OVERLAP * 12, (1000000 if r == 2 else 4000000) * 12) for r in range(4)]
    check(ov == want, f"overlap {ov}\n want {want}")
    waited = [(x["rank"], x["waited_ns"]) for x in o["ranks"]]
    check(waited == [(r, 0 if r == 2 else 3000000 * n) for r in range(4)], f"waited {waited}")
    check("collectives: NCCL's kernels, their GPU time;" in text and
          re.search(r"\n +2 +\d+ +10\.0 ms +1\.0 ms +0 ns +9\.0 ms +50% ", text), text[-1500:])


@test
def ranks_gloo_host_collectives(tmp):
    """gloo's all-reduces of CUDA tensors run on the host: a copy out to a
    pinned buffer, gloo's thread syncing its stream, the reduction, a copy
    back of the same bytes from the same buffer. Rank 1 computes 3 ms
    longer: its collectives take 3 ms less, it is named the straggler
    with a 3 ms lead, the other three waited 9 ms a step; each collective
    is the time from the sync's end to the copy back, to the ns; the
    decoys (a batch's copy, a copy back of other bytes, one without a sync
    between) are none; a 2 ms kernel inside each is the overlap; the clocks
    come out of the copies back, the k-th of each size on every rank, so
    that rank 0's extra start-up collective shifts nothing."""
    for r in range(4):
        work = 6000000 if r == 1 else 3000000
        rank_trace(os.path.join(tmp, f"r{r}.jsonl"), r, work, 0, skew=r * 1000000000, gloo=True)
    o = json.loads(report(tmp, "--json"))["ranks"]
    n = o["steps"]
    got = [(x["rank"], x["collectives"], x["collective_ns"] // x["steps"], x["overlap_ns"], x["overlap_of_ns"])
           for x in o["ranks"]]
    want = [(r, "host", STEP - 500 - (6000000 if r == 1 else 3000000), 2000000 * 12,
             (STEP - 500 - (6000000 if r == 1 else 3000000)) * 12 + (1700 if r == 0 else 0)) for r in range(4)]
    check(n >= 8 and got == want, f"ranks {got}\n want {want}")
    check(o["straggler"] == {"rank": 1, "steps": n, "lead_ns": 3000000 * n, "others_waited_ns": 9000000 * n},
          f"straggler {o['straggler']}")
    offs = [(x["rank"], x.get("clock_offset_ns"), x.get("clock_spread_ns")) for x in o["ranks"]]
    check(offs == [(r, r * 1000000000, 0) for r in range(4)], f"clocks {offs}")
    text = report(tmp, "--color", "never")
    check("collectives: gloo's all-reduces on the host (the sync after the copy out, to the copy back);"
          in text and f"straggler: rank 1, the last to its collectives in {n} of {n} steps,\n  3.0 ms a step" in text,
          text[-1500:])


@test
def ranks_without_collectives_say_so(tmp):
    """Without NCCL kernels (gloo, or no CUPTI) the waiting is not told
    apart from the work: no straggler is named; processes without RANK
    get no ranks section at all."""
    for r in range(2):
        rank_trace(os.path.join(tmp, f"r{r}.jsonl"), r, 3000000, 0)
    text = report(tmp, "--color", "never")
    check("no collectives in these traces (NCCL's kernels, with CUPTI, or gloo's all-reduces of CUDA tensors): "
          "which rank the others waited for is not known" in text and "straggler:" not in text, text[-800:])
    o = json.loads(report(tmp, "--json"))["ranks"]
    check(o["straggler"] is None and [x["collective_ns"] for x in o["ranks"]] == [None, None], f"{o}")
    d = os.path.join(tmp, "norank")
    os.makedirs(d)
    for i in range(2):
        run("prog_train", ["5", "10"], tmp=d)
    check("== ranks" not in report(d, "--color", "never") and "ranks" not in json.loads(report(d, "--json")),
          "a ranks section for processes without RANK")


@test
def ranks_on_the_doubles_name_the_slow_rank(tmp):
    """Three ranks of tests/progs/prog_ranks.c run at once against the driver
    double under gpuspy, their all-reduce on the host as gloo's (a copy out
    to a pinned buffer, a worker thread's sync, a barrier over files, the
    copy back), rank 1 sleeping 30 ms before each forward pass: every rank
    exits as untraced would; every rank's 10 all-reduces are found as host
    collectives; rank 1 is the straggler of most steps compared, and it
    came to the all-reduce at least half its sleep after the others."""
    import concurrent.futures
    bar = os.path.join(tmp, "barrier")
    os.makedirs(bar)

    def one(r):
        return run("prog_ranks", [bar, "10", "1", "30"], tmp=tmp, env={"RANK": str(r), "WORLD_SIZE": "3"})
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        outs = list(ex.map(one, range(3)))
    check([p.stdout for p in outs] == [f"rank {r} steps 10\n" for r in range(3)], f"{[p.stdout for p in outs]}")
    check(len(traces(tmp)) == 3, f"traces {traces(tmp)}")
    o = json.loads(report(tmp, "--json"))["ranks"]
    n, s = o["steps"], o["straggler"]
    check([x["collectives"] for x in o["ranks"]] == ["host"] * 3 and n >= 7, f"{o}")
    check(s["rank"] == 1 and s["steps"] >= n - 1 and s["lead_ns"] / s["steps"] >= 15e6, f"straggler {s}")
    check([x["collectives_n"] for x in o["ranks"]] == [10] * 3, f"{o['ranks']}")


@test
def ranks_duplicate_rank_is_refused(tmp):
    """Two traces of rank 0 in one directory (two runs of a job, say) and
    one of rank 1: not "3 ranks of one job" with rank 0 twice, but one
    warning line naming both rank-0 files, and no ranks table (text or
    JSON); each process is still reported."""
    for name, r in (("a0", 0), ("b0", 0), ("a1", 1)):
        rank_trace(os.path.join(tmp, f"{name}.jsonl"), r, 3000000, 4000000)
    for args in ((), ("--json",)):
        p = subprocess.run([GPUSPY, "report", "--color", "never", *args, tmp], capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == 0 and p.stderr ==
              f"gpuspy: warning: rank 0 is in 2 traces, {tmp}/a0.jsonl and {tmp}/b0.jsonl (several runs in one "
              "place?): no ranks table; report one run's traces for it\n", f"report {args}: {p.returncode} {p.stderr!r}")
        if args:
            o = json.loads(p.stdout)
            check("ranks" not in o and len(o["processes"]) == 3, f"JSON: ranks {o.get('ranks')}")
        else:
            check("== ranks" not in p.stdout and p.stdout.count("rank 0 (pid 100)") == 2, p.stdout[-1500:])


def plain_rank(path, rank, step_ns, steps=12, phases=True, second="k", cupti=True, odd_extra=False):
    """Rank `rank` with no collective: each step a phase "forward" of half
    the step, then "backward" to its end, one kernel in each (CUPTI).
    Without phases (a C program's loop), the same kernels, and a
    cuStreamSynchronize to the step's end after the second (named
    `second`: an NCCL all-reduce's, say); odd_extra: a third kernel in
    every other step (its period two of them). Without CUPTI, no GPU
    records."""
    t = 10 ** 12
    lines = [{"type": "process", "format_version": 2, "pid": 100 + rank, "ppid": 1, "host": "node0",
              "rank": rank, "local_rank": rank, "command": "train.py", "events": 0, "dropped": 0,
              "clean_exit": True, "state": "exited", "truncated": False, "threads": 1, "start_ns": t,
              "gpu_timing": "cupti" if cupti else "none", "device_mem": [1 << 34], "clock": "monotonic"}]
    for k in range(steps):
        if odd_extra and k % 2:
            lines.append({"type": "event", "kind": "launch", "api": "cuLaunchKernel", "tid": 100 + rank,
                          "start_ns": t + 10, "end_ns": t + 90, "result": 0, "stream": 7, "device": 0,
                          "name": "extra", "corr": 1000 + k})
        for name, s, e in (("forward", t, t + step_ns // 2), ("backward", t + step_ns // 2, t + step_ns)):
            if phases:
                lines.append({"type": "event", "kind": "phase_begin", "api": "gpuspy_phase_push",
                              "tid": 100 + rank, "start_ns": s, "end_ns": s, "result": 0, "name": name})
            lines.append({"type": "event", "kind": "launch", "api": "cuLaunchKernel", "tid": 100 + rank,
                          "start_ns": s + 100, "end_ns": s + 5000, "result": 0, "stream": 7, "device": 0,
                          "name": second if name == "backward" else "k", "corr": 2 * k + (name == "backward") + 1})
            if cupti:
                lines.append({"type": "event", "kind": "gpu_kernel", "api": "cupti_kernel", "tid": 100 + rank,
                              "start_ns": s + 6000, "end_ns": s + 1006000, "result": 0, "stream": 7, "device": 0,
                              "name": second if name == "backward" else "k",
                              "corr": 2 * k + (name == "backward") + 1})
            if phases:
                lines.append({"type": "event", "kind": "phase_end", "api": "gpuspy_phase_pop", "tid": 100 + rank,
                              "start_ns": e, "end_ns": e, "result": 0, "name": name})
            elif name == "backward":
                lines.append({"type": "event", "kind": "sync", "api": "cuStreamSynchronize", "tid": 100 + rank,
                              "start_ns": s + 6000, "end_ns": e - 1000, "result": 0, "stream": 7, "device": 0})
        t += step_ns
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")


@test
def ranks_without_collectives_name_the_slowest(tmp):
    """Four ranks with no collective, rank 2's steps 3 ms longer (13 ms
    against 10 ms): no rank is a straggler by default (none leads in
    collectives it does not have; the first rank used to be named in
    every step), and the slowest by step time is named with its lead over
    the others' mean, 3 ms."""
    for r in range(4):
        plain_rank(os.path.join(tmp, f"r{r}.jsonl"), r, 13_000_000 if r == 2 else STEP)
    text = report(tmp, "--color", "never")
    check("straggler:" not in text and "  slowest: rank 2, its steps 3.0 ms longer than the others' mean "
          "(13.0 ms a step)\n" in text, text[-900:])
    o = json.loads(report(tmp, "--json"))["ranks"]
    check(o["straggler"] is None and [x["straggler_steps"] for x in o["ranks"]] == [0, 0, 0, 0]
          and o["slowest"] == {"rank": 2, "lead_ns": 3_000_000}, f"{o}")


@test
def ranks_without_phases_compare_their_own_steps(tmp):
    """Four ranks of a C loop, no phase (two kernels and a synchronize a
    step), rank 2's steps 13 ms against 10: each rank's own step is
    found (11 steps past the first), the table set from those, not
    matched across ranks, and rank 2 named the slowest, 3 ms ahead. (No
    ranks table at all had been printed: ranks were compared only by
    phase series.) With an NCCL all-reduce as the second kernel, every
    rank's step would be the slowest's: no rank is named, with CUPTI or
    without (its launches say it), and the collectives are said, not
    counted in "the rest". Rank 0 with a third kernel every other step,
    its step found as two of the others': the steps are unlike, no rank
    is named (rank 0 had been, "10.0 ms longer")."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    for d, kw in (("plain", {}), ("nccl", dict(second=nccl)), ("host", dict(second=nccl, cupti=False)),
                  ("unlike", {})):
        os.makedirs(os.path.join(tmp, d))
        for r in range(4):
            plain_rank(os.path.join(tmp, d, f"r{r}.jsonl"), r, 13_000_000 if r == 2 else STEP, phases=False,
                       steps=12 if d != "unlike" else 24, odd_extra=d == "unlike" and r == 0, **kw)
    text = report(os.path.join(tmp, "plain"), "--color", "never")
    check("== ranks: 4 of one job, each its own steady step (the median), not matched across ranks\n" in text
          and re.search(r"\n +2 +11 +13\.0 ms +n/a", text) and "  slowest: rank 2, its steps 3.0 ms longer than "
          "the others' mean (13.0 ms a step)\n" in text, text[-900:])
    o = json.loads(report(os.path.join(tmp, "plain"), "--json"))["ranks"]
    check(o["matched"] == "none" and o["alike"] and o["slowest"] == {"rank": 2, "lead_ns": 3_000_000} and
          [(x["steps"], x["step_ns"]) for x in o["ranks"]] == [(11, 110_000_000)] * 2 + [(11, 143_000_000)] +
          [(11, 110_000_000)], f"{o}")
    for d, n in (("nccl", 12), ("host", 12)):
        text = report(os.path.join(tmp, d), "--color", "never")
        o = json.loads(report(os.path.join(tmp, d), "--json"))["ranks"]
        check("slowest" not in o and o["straggler"] is None and "slowest:" not in text and "  collectives ran, but "
              "no phases match one rank's steps to another's" in text and re.search(r"\n +2 +11 +13\.0 ms +n/a +n/a +n/a",
                                                                                   text) and
              [(x["collectives"], x["collectives_n"]) for x in o["ranks"]] == [("nccl", n)] * 4, f"{d}: {o} {text[-900:]}")
    text = report(os.path.join(tmp, "unlike"), "--color", "never")
    o = json.loads(report(os.path.join(tmp, "unlike"), "--json"))["ranks"]
    check("slowest" not in o and not o["alike"] and "slowest:" not in text and "  the ranks' steps are not alike"
          in text, f"{o} {text[-900:]}")


@test
def ranks_alike_name_no_rank(tmp):
    """Ranks within a fiftieth of a step of each other are alike: four
    ranks with no collective, steps of 10.000, 10.001, 10.002 and 10.0005
    ms, name no slowest (rank 2 was, "1.5 us longer"); four with equal
    all-reduces every step name no straggler (the first rank was, in
    every step, "0 ns a step after the others' mean"), nor a slowest in
    --json, which is said only without collectives."""
    os.makedirs(os.path.join(tmp, "plain"))
    for r, extra in enumerate((0, 1_000, 2_000, 500)):
        plain_rank(os.path.join(tmp, "plain", f"r{r}.jsonl"), r, STEP + extra)
    text = report(os.path.join(tmp, "plain"), "--color", "never")
    o = json.loads(report(os.path.join(tmp, "plain"), "--json"))["ranks"]
    check("slowest:" not in text and "slowest" not in o and o["straggler"] is None, f"{o} {text[-600:]}")
    os.makedirs(os.path.join(tmp, "nccl"))
    for r in range(4):
        rank_trace(os.path.join(tmp, "nccl", f"r{r}.jsonl"), r, 3_000_000, 4_000_000)
    text = report(os.path.join(tmp, "nccl"), "--color", "never")
    o = json.loads(report(os.path.join(tmp, "nccl"), "--json"))["ranks"]
    check("straggler:" not in text and o["straggler"] is None and "slowest" not in o and
          [x["straggler_steps"] for x in o["ranks"]] == [0, 0, 0, 0], f"{o} {text[-600:]}")
