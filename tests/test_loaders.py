# SPDX-License-Identifier: MIT
"""Loader workers: the replay that moves a data phase's host work to
DataLoader workers, less each batch's handoff to the main process, on
made-up loaders known to the nanosecond; a loader whose workers fall
behind; a data phase by any name."""
import os

from harness import check, test


def report_json_of(path):
    from test_advice import report_json_of as of
    return of(path)


def set_cpus(path, n):
    from test_advice import set_cpus as to
    to(path, n)


# What the replay keeps of a PyTorch data phase's work when workers load
# its batch: the batch's handoff to the main process (replay.h's
# GS_LOADER_HANDOFF_NS).
HANDOFF = 750_000


def loader_mark(t, line=12, workers=0):
    """The PyTorch helper's mark of a pass over a DataLoader made at train.py:line."""
    return {"kind": "mark", "api": "gpuspy_mark", "tid": 7, "start_ns": t, "end_ns": t, "result": 0, "device": 0,
            "name": f"DataLoader num_workers={workers} made at <module> (/w/train.py:{line})"}


def loader_steps(load=790_000, step=1_000_000, mark=False):
    """50 steps of 1 ms (step): 'data' works 790 us (load) on the host,
    then copies its batch (pinned, async, 10 us); 'forward' launches a
    200 us kernel 20 us later (at 810 us) and works to the step's end;
    with mark, the helper marked the loop's DataLoader (train.py:12)."""
    from test_report import phase_event
    ev = [loader_mark(900_000)] if mark else []
    for k in range(50):
        t, a = 1_000_000 + k * step, 1_000_000 + k * step + load
        ev.append(phase_event(True, t, "data", k))
        ev.append({"kind": "copy", "api": "cudaMemcpyAsync", "tid": 7, "start_ns": a, "end_ns": a + 10_000,
                   "result": 0, "bytes": 4096, "dir": "h2d", "host_mem": "pinned", "device": 0, "stream": 0,
                   "async": True, "corr": 2 * k + 1})
        ev.append({"kind": "gpu_copy", "api": "cupti_memcpy", "tid": 200, "start_ns": a + 10_000,
                   "end_ns": a + 11_000, "result": 0, "bytes": 4096, "dir": "h2d", "device": 0, "stream": 7,
                   "corr": 2 * k + 1})
        ev.append(phase_event(False, a + 10_000, "data", k))
        ev.append(phase_event(True, a + 10_000, "forward", k))
        ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": a + 20_000, "end_ns": a + 30_000,
                   "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0,
                   "corr": 2 * k + 2})
        ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": a + 40_000,
                   "end_ns": a + 240_000, "result": 0, "device": 0, "stream": 7, "corr": 2 * k + 2, "name": "k"})
        ev.append(phase_event(False, t + step, "forward", k))
    return ev


# A loader whose batches take 3.79 ms to load, in 4 ms steps: its workers pay.
HEAVY = dict(load=3_790_000, step=4_000_000)


@test
def loader_workers_are_replayed_exactly(tmp):
    """A starved loader, known to the nanosecond (HEAVY): each 4 ms step
    loads its batch in phase 'data' for 3.79 ms of host work, copies it
    (pinned, async, 10 us), then 'forward' launches a 200 us kernel at
    3.81 ms and works to the step's end. Replayed, the last 40 steps take
    3,991,900 ns a step (the first from the window's start); with workers
    loading alongside, the data phase's own 3.79 ms goes but the batch's
    handoff to the main process, 750 us (HANDOFF), not the forward pass's
    180 us before it: the host then sets the pace at 951.9 us a step, and
    it saves 3,790,000 - 750,000 = 3,040,000 ns a step; 7 workers keep up
    (3.79 ms of loading a batch and 2 ms of a worker's own handoff,
    GS_LOADER_WORKER_NS, against the 951.9 us step left). With the
    CPUs the process may use in the trace, the workers are that many less
    one. The helper marked two DataLoaders: one made at train.py:30 with
    6 workers, iterated before the loop and again in its middle, and the
    loop's, made at train.py:12 with none, iterated last before the steady
    state and again in the middle (an epoch): the diagnosis names the
    loop's, and its workers, none (no loader_behind)."""
    from test_report import write_jsonl
    ev = [loader_mark(100_000, 30, 6), loader_mark(900_000)] + loader_steps(**HEAVY)
    for t, line, w in ((120_500_000, 30, 6), (121_500_000, 12, 0)):
        ev.insert(next(i for i, e in enumerate(ev) if e["start_ns"] > t), loader_mark(t, line, w))
    path = write_jsonl(os.path.join(tmp, "data.jsonl"), ev, timing="cupti")
    o = report_json_of(path)
    step = o["processes"][0]["step"]
    check(step["what"] == "PyTorch's optimizer steps: data, forward" and step["step_ns"] == 4_000_000
          and step["replayed_step_ns"] == 3_991_900 and step["replayed_savings_ns"]["workers"] == 3_790_000 - HANDOFF,
          f"{step}")
    d = o["diagnoses"]
    check(d and d[0]["id"] == "data_starvation" and d[0]["saving"]["per_step_ns"] == 3_040_000, f"diagnoses {d}")
    check("the GPU waits for data, from the DataLoader made at <module> (/w/train.py:12).\n" in d[0]["text"],
          d[0]["text"])
    check(step["loader_workers"] == 7 and "(7 workers keep up: a batch takes 3.8 ms to load and a worker 2.0 ms more "
          "to hand it over, the step then 951.9 us)" in d[0]["saving"]["how"], d[0]["saving"])
    # The same program on 2 CPUs (the trace's header): one worker beside
    # the step loads a batch every 3.79 ms at best, so the replayed step is
    # no shorter than that: 3,991,900 - 3,790,000 = 201,900 ns a step.
    set_cpus(path, 2)
    o = report_json_of(path)
    check(o["processes"][0]["step"]["replayed_savings_ns"]["workers"] == 201_900, f"{o['processes'][0]['step']}")
    # The CPUs' floor set it: a bound ("up to"), not the replay's "about".
    check(d[0]["saving"]["bound"] == "estimate" and o["diagnoses"][0]["saving"]["bound"] == "upper",
          f"{d[0]['saving']} {o['diagnoses'][0]['saving']}")
    check("(7 workers would keep up, a batch taking 3.8 ms to load and a worker 2.0 ms more to hand it over; this "
          "process may use 2 CPUs: with 1 worker "
          "the step is 3.8 ms)" in o["diagnoses"][0]["saving"]["how"], o["diagnoses"][0]["saving"])
    # Each step's kernel launched inside its data phase, at 500 us, and
    # running 1 ms (GPU augmentation: the GPU busy 26% of the phase): no
    # phase of starvation, but the replay's own diagnosis, which names the
    # same DataLoader.
    for e in ev:
        if e["kind"] in ("launch", "gpu_kernel"):
            e["start_ns"] -= 3_310_000
            e["end_ns"] = e["start_ns"] + (1_000_000 if e["kind"] == "gpu_kernel" else 10_000)
    ev.sort(key=lambda e: e["start_ns"])
    path = write_jsonl(os.path.join(tmp, "busy.jsonl"), ev, timing="cupti")
    d = {x["id"]: x for x in report_json_of(path)["diagnoses"]}
    check("data_starvation" in d and d["data_starvation"]["text"].startswith(
        "Each step loads its data on the main thread, from the DataLoader made at <module> (/w/train.py:12), while "
        "the GPU waits.\n"), f"{d}")


@test
def a_batch_that_loads_faster_than_its_handoff_gains_nothing_from_workers(tmp):
    """loader_steps' loop, its DataLoader marked by the helper, its batches
    loaded in 790 us a 1 ms step, then 700 us: a worker's batch reaches
    the main process in 750 us (HANDOFF: on an H100, the zoo's
    torch.compile loop, whose batches loaded in 0.44 ms, ran 0.31 ms a
    step slower with 2 workers, pinned). Workers save 790,000 - 750,000 =
    40,000 ns a step of the first, still a change worth making (over 1% of
    the step), said with the handoff, and nothing of the second: no
    data_starvation (before, the replay took the whole 700 us off)."""
    from test_report import write_jsonl
    for load, save in ((790_000, 40_000), (700_000, 0)):
        o = report_json_of(write_jsonl(os.path.join(tmp, f"load-{load}.jsonl"), loader_steps(load, mark=True),
                                       timing="cupti"))
        step, d = o["processes"][0]["step"], o["diagnoses"]
        check(step["replayed_savings_ns"]["workers"] == save, f"{load}: {step}")
        starved = [x["saving"] for x in d if x["id"] == "data_starvation"]
        check([x["per_step_ns"] for x in starved] == ([save] if save else []) and
              all("in loader workers, alongside the step, less 750.0 us a batch that reaches the main process ("
                  in x["how"] for x in starved), f"{load}: diagnoses {d}")


@test
def a_loader_whose_workers_fall_behind_gets_a_bound(tmp):
    """loader_steps' loop (790 us of loading a 1 ms step), but the helper
    marked its DataLoader (made at train.py:12) as loading in 6 worker
    processes: its 790 us in
    'data' a step are the step waiting for them, which the replay of
    moving the loading to workers does not model. So no data_starvation
    and no "about": loader_behind, first, whose saving is an upper bound:
    the whole wait, 50 x 800 us = 40 ms, were the workers always a batch
    ahead; it names the CPUs the process may use (8: up to 7 workers)."""
    from test_report import write_jsonl
    ev = [{"kind": "mark", "api": "gpuspy_mark", "tid": 7, "start_ns": 900_000, "end_ns": 900_000, "result": 0,
           "device": 0, "name": "DataLoader num_workers=6 made at <module> (/w/train.py:12)"}] + loader_steps()
    path = write_jsonl(os.path.join(tmp, "data.jsonl"), ev, timing="cupti")
    set_cpus(path, 8)
    o = report_json_of(path)
    d = o["diagnoses"]
    ids = [x["id"] for x in d]
    check("data_starvation" not in ids and ids and ids[0] == "loader_behind", f"diagnoses {ids}")
    check(d[0]["text"].startswith("Phase 'data' takes 80% of the time in phases (40.0 ms over 50 occurrences) "
                                  "waiting for the 6 worker processes of the DataLoader made at <module> "
                                  "(/w/train.py:12), and the GPU") and
          "(this process may use 8 CPUs: up to 7 workers beside the step)" in d[0]["text"], d[0]["text"])
    check(d[0]["saving"]["bound"] == "upper" and d[0]["saving"]["ns"] == 40_000_000, f"{d[0]['saving']}")
    check("loader_workers" not in o["processes"][0]["step"], "workers to keep up, where the program has its own")


@test
def a_loader_phase_by_any_data_name_is_replayed_the_same(tmp):
    """loader_workers_are_replayed_exactly's loop with its loader phase
    named 'load_data', then 'DataLoader': data_starvation names a phase
    whose name holds "data" in any case, and the replay's workers take the
    same phase, so each says the same 3,790,000 ns a step (no DataLoader
    marked by the helper: its loading goes whole, no handoff kept). Before, the
    replay took only a phase named 'data': it saved nothing for the
    others, and the diagnosis went (the what-if suite's loop was named
    'data' and never showed it)."""
    from test_report import write_jsonl
    for name in ("load_data", "DataLoader"):
        ev = loader_steps(**HEAVY)
        for e in ev:
            if e.get("name") == "data":
                e["name"] = name
        o = report_json_of(write_jsonl(os.path.join(tmp, f"{name}.jsonl"), ev, timing="cupti"))
        step = o["processes"][0]["step"]
        check(step["replayed_savings_ns"]["workers"] == 3_790_000 and step["steady_host_ns"]["data"] == 3_800_000,
              f"{name}: {step}")
        d = o["diagnoses"]
        check(d and d[0]["id"] == "data_starvation" and d[0]["text"].startswith(f"Phase '{name}' takes")
              and d[0]["saving"]["per_step_ns"] == 3_790_000, f"{name}: {d}")


@test
def loader_workers_take_a_stack_walk_off_once(tmp):
    """The data phase's gaps that workers take over, when the call before
    one kept a call stack: each 2 ms step's 'data' works 100 us on the
    host, reads a scalar back (.item(), 10 us, its stack taken: the run's
    mean walk 50 us, which replay.c takes off the gap after it), works
    1,590 us more, copies its batch (pinned, async); 'forward' launches a
    200 us kernel. The replayed step is 1,937.1 us (1,987.1 us less the
    walk: the scalar's copy holds the host its 10 us, the 4 us before its
    GPU record too, as nothing before it was left to wait for); with
    workers the data phase's own work goes, 100 + 1,590 - 50 = 1,640 us a
    step, but the batch's handoff, 750 us (HANDOFF; its DataLoader marked):
    890 us, and no more:
    the walk, already off the gap, was taken off again (940 us) when the
    gap's data part passed its length."""
    from test_report import gpu_record as gpu, host_call as call, phase_event, write_jsonl
    ev, corr = [loader_mark(900_000)], 0
    for k in range(20):
        t = 1_000_000 + k * 2_000_000
        ev += [phase_event(True, t, "data", k),
               call("copy", "cudaMemcpy", t + 100_000, 10_000, bytes=4, dir="d2h", host_mem="pageable",
                    corr=3 * k + 1, stack=1),
               gpu("gpu_copy", t + 104_000, 1000, 3 * k + 1, bytes=4, dir="d2h"),
               call("copy", "cudaMemcpyAsync", t + 1_700_000, 10_000, bytes=4096, dir="h2d", host_mem="pinned",
                    corr=3 * k + 2, **{"async": True}),
               gpu("gpu_copy", t + 1_712_000, 1000, 3 * k + 2, bytes=4096, dir="h2d"),
               phase_event(False, t + 1_720_000, "data", k), phase_event(True, t + 1_720_000, "forward", k),
               call("launch", "cuLaunchKernel", t + 1_730_000, 10_000, name="k", grid=[1, 1, 1], block=[32, 1, 1],
                    corr=3 * k + 3),
               gpu("gpu_kernel", t + 1_745_000, 200_000, 3 * k + 3, name="k"),
               phase_event(False, t + 2_000_000, "forward", k)]
    path = write_jsonl(os.path.join(tmp, "walk.jsonl"), ev, timing="cupti",
                       frames={1: ["cudaMemcpy (libcudart.so+0x1)", "load (loop.py:9)"]})
    import json
    lines = open(path).read().splitlines()
    head = dict(json.loads(lines[0]), stacks_taken=20, stacks_ns=20 * 50_000)
    with open(path, "w") as f:
        f.write("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    o = report_json_of(path)
    step = o["processes"][0]["step"]
    check(step["what"] == "PyTorch's optimizer steps: data, forward" and step["step_ns"] == 2_000_000 and
          step["replayed_step_ns"] == 1_937_100 and step["replayed_savings_ns"]["workers"] == 890_000, f"{step}")
    d = o["diagnoses"]
    check(d and d[0]["id"] == "data_starvation" and d[0]["saving"]["per_step_ns"] == 890_000, f"diagnoses {d}")
