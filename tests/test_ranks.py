# SPDX-License-Identifier: MIT
"""The ranks of one job (gpuspy report over rank files): made-up traces of
four ranks whose steps are known to the nanosecond, one of them slow, with
NCCL kernels on the GPU; and ranks without collectives."""
import json
import os
import subprocess

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)

STEP = 10000000  # 10 ms


def rank_trace(path, rank, work, nccl, steps=12, skew=0):
    """Rank `rank`: each step a phase "forward" of `work` ns, then
    "backward" to the step's end, holding one NCCL all-reduce kernel of
    `nccl` ns on the GPU; its clock `skew` ns off the others'."""
    t = 10 ** 12 + skew
    lines = [{"type": "process", "format_version": 2, "pid": 100 + rank, "ppid": 1, "host": f"node{rank // 2}",
              "rank": rank, "local_rank": rank % 2, "command": "train.py", "events": 0, "dropped": 0,
              "clean_exit": True, "state": "exited", "truncated": False, "threads": 1, "start_ns": t,
              "gpu_timing": "cupti", "device_mem": [1 << 34], "clock": "monotonic"}]

    def ev(kind, api, s, e, **kw):
        lines.append({"type": "event", "kind": kind, "api": api, "tid": 100 + rank, "start_ns": s, "end_ns": e,
                      "result": 0, **kw})
    for k in range(steps):
        ev("phase_begin", "gpuspy_phase_push", t, t, name="forward")
        ev("phase_end", "gpuspy_phase_pop", t + work, t + work, name="forward")
        ev("phase_begin", "gpuspy_phase_push", t + work, t + work, name="backward")
        ev("launch", "cuLaunchKernel", t + work + 10, t + work + 20, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL",
           grid=[1, 1, 1], block=[1, 1, 1], device=0, stream=1, corr=k + 1)
        ev("gpu_kernel", "cupti_kernel", t + STEP - nccl - 100, t + STEP - 100, device=0, stream=1, corr=k + 1,
           name="ncclDevKernel_AllReduce_Sum_f32_RING_LL")
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
    check("  clock of rank 3: +15.00 s from rank 0's, the median over 12 collectives' ends (they agree to 0 ns)\n"
          in text, text[-800:])
    check(f"straggler: rank 2, the slowest in {n} of {n} steps, by 3.0 ms a step over the others' mean;\n"
          "  the others waited for it 9.0 ms a step in all, inside their collectives\n" in text, text[-1500:])


@test
def ranks_without_collectives_say_so(tmp):
    """Without NCCL kernels (gloo, or no CUPTI) the waiting is not told
    apart from the work: no straggler is named; processes without RANK
    get no ranks section at all."""
    for r in range(2):
        rank_trace(os.path.join(tmp, f"r{r}.jsonl"), r, 3000000, 0)
    text = report(tmp, "--color", "never")
    check("no collective kernels (NCCL, with CUPTI) in these traces: which rank the others waited for is not known"
          in text and "straggler:" not in text, text[-800:])
    o = json.loads(report(tmp, "--json"))["ranks"]
    check(o["straggler"] is None and [x["collective_ns"] for x in o["ranks"]] == [None, None], f"{o}")
    d = os.path.join(tmp, "norank")
    os.makedirs(d)
    for i in range(2):
        run("prog_train", ["5", "10"], tmp=d)
    check("== ranks" not in report(d, "--color", "never") and "ranks" not in json.loads(report(d, "--json")),
          "a ranks section for processes without RANK")
