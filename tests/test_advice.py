# SPDX-License-Identifier: MIT
"""Advice you can bet on: the step found in any program (the program's own
period when nothing names it), checked on sequences whose period, warm-up
and repetitions are known; each change's replay on a made-up timeline
known to the nanosecond, against the saving worked out by hand. The
what-if suite's traces: test_whatif.py."""
import os
import subprocess

from harness import BIN, GPUSPY, SANITIZED, TIMEOUT, Skip, check, run, test


def report_json_of(path):
    """`gpuspy report --json PATH`, parsed."""
    import json
    p = subprocess.run([os.path.join(os.path.dirname(BIN), "..", "tools", "gpuspy"), "report", "--json", path],
                       capture_output=True, text=True, timeout=TIMEOUT)
    return json.loads(p.stdout)


@test
def period_is_found_with_its_warm_up_and_repetitions(tmp):
    """tools/report/period.c (tests/unit/period_test.c): a training step of
    7 calls after 23 calls of warm-up, its wait the step's end; a first
    step that compiles (3 calls more); a decode loop of 98 calls a token
    whose layers repeat inside it (the token, not the layer, is the
    period); a step that logs every 10th time (still 20 calls, 100 steps);
    a step of 399 launches of 30 kernels and a wait, whose own distance is
    rarer than the kernels' but explains the run; a token of 137 calls
    whose kernels cycle every 37, no call made once a token, alone and
    with a wait after every 10th token (the token, not 37 calls nor ten
    tokens: no call is a token apart from the last like it, but the four
    where two tokens meet are); no repetition, and two repetitions only
    (not a loop: no step)."""
    out = subprocess.run([os.path.join(BIN, "unit_period")], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout.split("\n")
    want = ["train 1 7 23 50 0", "first_step_compiles 1 7 6 49 0", "decode 1 98 0 200 0",
            "log_every_10 1 20 0 100 0", "long_step 1 400 0 20 0", "layers_only 1 137 0 200 0",
            "layers_wait_every_10 1 137 0 200 0", "none 0 0 0 0 0", "two_only 0 0 0 0 0",
            ""]
    check(out == want, f"got {out}")


def wait_step_trace(tmp, steps=50, host_ns=400_000, stack=False):
    """A made-up CUPTI trace known to the nanosecond: each step launches a
    600 us kernel (a 10 us call; the kernel starts 20 us after the call
    began), synchronizes its stream at once (returning 5 us after the
    kernel ends: .item()'s shape), then works host_ns on the host."""
    from test_report import write_jsonl
    ev, P = [], 625_000 + host_ns
    for k in range(steps):
        t = 1_000_000 + k * P
        ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 10_000,
                   "result": 0, "device": 0, "name": "step_kernel", "grid": [1, 1, 1], "block": [32, 1, 1],
                   "stream": 0, "corr": k + 1})
        ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": t + 20_000,
                   "end_ns": t + 620_000, "result": 0, "device": 0, "stream": 7, "corr": k + 1,
                   "name": "step_kernel"})
        sync = {"kind": "sync", "api": "cudaStreamSynchronize", "tid": 7, "start_ns": t + 15_000,
                "end_ns": t + 625_000, "result": 0, "device": 0, "stream": 0}
        if stack:
            sync["stack"] = 1
        ev.append(sync)
    frames = {1: ["cudaStreamSynchronize (libcudart.so.13+0x1)", "train_step (loop.py:42)", "main (loop.py:60)"]}
    return write_jsonl(os.path.join(tmp, "wait.jsonl"), ev, timing="cupti", frames=frames if stack else None)


@test
def a_wait_every_step_is_replayed_exactly(tmp):
    """.item() every step, on a timeline known to the nanosecond
    (wait_step_trace): the step is the launcher's own period (launch, wait;
    no phase), 49 whole steps of 1,025 us; the replay of the last 40 takes
    off what tracing added (the launch's 10 us less 4.3 us: gpuspy's record
    and CUPTI's one GPU record; the wait's own 5 us beyond the kernel less
    0.3 us), 1,010.4 us a step, and with the wait dropped the 400 us of
    host work runs while the kernel does: the GPU sets the pace, 600 us a
    step after the first launch, but in one step of 20, which still waits
    (the advice reads the values every 20 steps): the 20th and the 40th
    wait for the 20 kernels before them, then the host works 4.7 + 400
    us, and the next launch takes 5.7. So the 40 steps take 5,700 + 40 x
    600,000 + 2 x 404,700 + 5,700 = 24,820,800 ns, 620,520 a step, and
    it saves 1,010,400 - 620,520 = 389,880 ns a step (410,257 with no
    wait left), named at the wait's
    line, with the host work after it; nothing else is diagnosed. With no
    host work, each wait's round trip (the kernel's start 20 us after its
    launch, the wait's return) gives 610.4 - 600.52 = 9.88 us a step, 1.6%:
    said as the GPU idling, not as host work to overlap."""
    o = report_json_of(wait_step_trace(tmp, stack=True))
    step = o["processes"][0]["step"]
    check(step["found"] and step["steps"] == 49 and step["step_ns"] == 1_025_000 and step["replayed_steps"] == 40
          and step["replayed_step_ns"] == 1_010_400 and step["launches"] == 1 and "loader_workers" not in step,
          f"step {step}")
    d = o["diagnoses"]
    check(len(d) == 1 and d[0]["id"] == "step_waits", f"diagnoses {d}")
    check(d[0]["text"].startswith("Each step waits for the GPU once at train_step (loop.py:42), then works "
                                  "400.0 us on the host while the GPU idles"), d[0]["text"])
    s = d[0]["saving"]
    check(s["per_step_ns"] == 389_880 and s["steps"] == 49 and s["bound"] == "estimate"
          and s["how"].startswith("the waits replayed as not waiting but in one step of 20"), f"saving {s}")
    os.unlink(os.path.join(tmp, "wait.jsonl"))
    d = report_json_of(wait_step_trace(tmp, host_ns=0))["diagnoses"]
    check(len(d) == 1 and d[0]["saving"]["per_step_ns"] == 9_880 and d[0]["text"].startswith(
        "Each step waits for the GPU once, and the GPU idles from the end of its work until the wait returns and "
        "the host's next launch reaches it (the host works only 0 ns after the waits)."), f"no host work: {d}")


@test
def the_waits_kept_are_one_step_in_20_of_any_window(tmp):
    """wait_step_trace's loop, 21 and 30 steps long: windows of 19 and 28
    steps, which keep round(19 / 20) and round(28 / 20) steps waiting, at
    least one: the last. 19 steps: 5,700 + 19 x 600,000 + 404,700 ns =
    621,600 a step, saving 1,010,400 - 621,600 = 388,800 ns (with the
    20th step alone kept, none here: 410,100). 28 steps: 5,700 + 28 x
    600,000 + 404,700 = 614,657.1 a step, saving 395,742 ns."""
    for steps, window, saving in ((21, 19, 388_800), (30, 28, 395_742)):
        o = report_json_of(wait_step_trace(tmp, steps=steps))
        step, d = o["processes"][0]["step"], o["diagnoses"]
        check(step["replayed_steps"] == window and step["replayed_step_ns"] == 1_010_400, f"{steps}: step {step}")
        check(len(d) == 1 and d[0]["id"] == "step_waits" and d[0]["saving"]["per_step_ns"] == saving,
              f"{steps}: diagnoses {d}")
        os.unlink(os.path.join(tmp, "wait.jsonl"))


@test
def a_stack_walk_after_a_wait_is_not_saved(tmp):
    """The .item() loop of a_wait_every_step_is_replayed_exactly, with
    gpuspy's header saying its 49 call stacks took 50 us each: the walk
    comes after the wait ends, inside the 400 us of host work that
    follows, on the critical path. It is tracing's: it goes from the
    replay with the wait and without it alike. Before, the change that
    drops the wait was credited with it: 389,880 ns a step, where the
    program's own saving is 47,500 ns less, 19/20 of the walk (the
    what-if suite's empty_cache() loop, 16 stacks a step, over-predicted
    by 16-17%): the replayed step is 960,400 ns, the saving (the host's
    work after the wait 350 us) 9,880 + 0.95 x 350,000 = 342,380 ns."""
    import json
    path = wait_step_trace(tmp, stack=True)
    lines = open(path).read().splitlines()
    head = json.loads(lines[0])
    head["stacks_taken"], head["stacks_ns"] = 49, 49 * 50_000
    with open(path, "w") as f:
        f.write("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    o = report_json_of(path)
    step = o["processes"][0]["step"]
    check(step["step_ns"] == 1_025_000 and step["replayed_step_ns"] == 960_400, f"step {step}")
    d = o["diagnoses"]
    check(len(d) == 1 and d[0]["id"] == "step_waits" and d[0]["saving"]["per_step_ns"] == 342_380,
          f"diagnoses {d}")


@test
def each_walk_is_taken_off_as_timed(tmp):
    """The loop of a_stack_walk_after_a_wait_is_not_saved, whose header
    says the run's walks took 50 us each on average (a cold first walk
    takes 2 ms), with each wait's record saying its own walk took 30 us
    (own_ns, as gpuspy writes it): the replay takes off each walk as
    timed, not the mean. The replayed step is 1,010,400 - 30,000 ns, the
    saving 9,880 + 0.95 x 370,000 = 361,380 ns (with the mean: 960,400
    and 342,380). Then with another thread's 1 us call 1 us after each
    wait, inside the walk: the walk still goes (before, that call's end
    took the walk's place and all of it was counted, 1,011,100), and the
    call stays, 700 ns of it (less gpuspy's record): 981,100 and 9,880 +
    0.95 x 370,700 = 362,045. That
    call carries a stack with no walk timed (as a host allocation's,
    taken inside its call): nothing is taken off after it (the mean walk
    was, 22 us more)."""
    import json
    path = wait_step_trace(tmp, stack=True)
    lines = open(path).read().splitlines()
    head = dict(json.loads(lines[0]), stacks_taken=49, stacks_ns=49 * 50_000)
    for other in (False, True):
        ev = []
        for e in map(json.loads, lines[1:]):
            ev.append(e)
            if e.get("kind") == "sync":
                e["own_ns"] = 30_000
                if other:
                    ev.append({"type": "event", "kind": "sync", "api": "cudaEventSynchronize", "tid": 8,
                               "start_ns": e["end_ns"] + 1000, "end_ns": e["end_ns"] + 2000, "result": 0,
                               "device": 0, "stream": 0, "stack": 1})  # no walk timed: none after it
        with open(path, "w") as f:
            f.write("\n".join(json.dumps(x) for x in [head] + ev) + "\n")
        o = report_json_of(path)
        step, d = o["processes"][0]["step"], o["diagnoses"]
        check(step["step_ns"] == 1_025_000 and step["replayed_step_ns"] == 980_400 + 700 * other,
              f"other thread {other}: step {step}")
        check(len(d) == 1 and d[0]["id"] == "step_waits" and d[0]["saving"]["per_step_ns"] == 361_380 + 665 * other,
              f"other thread {other}: diagnoses {d}")


@test
def a_bound_cut_to_the_step_says_so(tmp):
    """A C loop of 30 'step' phases, each a launch of a 600 us kernel
    and then the host's own work until the next: the first 10 steps 10 ms
    (the GPU idles 9.4 ms of each), the last 20 1 ms (idle 400 us). The
    GPU waits for the host 101.6 ms of the loop's 120 ms: host-bound,
    whose bound from the run's totals is that idle time over the 30
    steps, 3.39 ms a step. The step found is the phase's cycle, 29 whole
    steps of 3,892,857 ns on average (the long ones are no warm-up: no
    compilation or first call sets them apart), 600 us of it GPU work. One
    launch a step is no graph to replay: the bound stays, cut to the
    step's 3,292,857 ns beyond its GPU work, and says so; before, it was
    more than a step could give back."""
    from test_report import kernel_steps, write_jsonl
    ev = kernel_steps([10_000_000] * 10 + [1_000_000] * 20, gpu=(6000, 606_000))
    o = report_json_of(write_jsonl(os.path.join(tmp, "cut.jsonl"), ev, timing="cupti"))
    d = [x for x in o["diagnoses"] if x["id"] == "host_bound"]
    check(len(d) == 1 and d[0]["saving"]["bound"] == "upper" and d[0]["saving"]["per_step_ns"] == 3_292_857 and
          d[0]["saving"]["how"].endswith("; at most the step's 3.3 ms beyond its GPU work"),
          f"{o['processes'][0].get('step')} {o['diagnoses']}")


@test
def pinning_a_pageable_copy_is_replayed_exactly(tmp):
    """A pageable 16 MiB copy every step, on a timeline known to the
    nanosecond: each 3 ms step launches a 1 ms kernel (a 10 us call, the
    kernel 20 us after it began), then copies its next batch from pageable
    memory (2.5 ms: it waits for the kernel, then 1.49 ms of DMA), then
    485 us of the host's own work. Replayed (docs/design.md#replay), a step
    is 2,981,400 ns (the launch's 5.7 us after tracing's cost, 5 us, the
    wait to the kernel's end, the copy's own 1,490.7 us, 485 us); pinned,
    the copy is an asynchronous 671,088 ns at 25 GB/s (no pinned copy or
    link to measure, said so) after the kernel, so the GPU sets the pace at
    1,671,088 ns a step: it saves (40 x 2,981,400 - (5,700 + 40 x
    1,671,088)) / 40 = 1,310,169 ns a step, first among the diagnoses."""
    from test_report import write_jsonl
    path = write_jsonl(os.path.join(tmp, "pin.jsonl"), pin_steps(), timing="cupti")
    o = report_json_of(path)
    step = o["processes"][0]["step"]
    check(step["steps"] == 49 and step["step_ns"] == 3_000_000 and step["replayed_step_ns"] == 2_981_400
          and step["pinned_bytes_per_s"] == 25e9, f"step {step}")
    d = o["diagnoses"]
    check(d and d[0]["id"] == "pageable_copies" and d[0]["saving"]["per_step_ns"] == 1_310_169
          and d[0]["saving"]["bound"] == "estimate" and "25.0 GB/s (PCIe gen4 x16's usual 25 GB/s"
          in d[0]["saving"]["how"], f"diagnoses {d}")


def pin_steps():
    """pinning_a_pageable_copy_is_replayed_exactly's events."""
    ev = []
    for k in range(50):
        t = 1_000_000 + k * 3_000_000
        ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 10_000,
                   "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0,
                   "corr": 2 * k + 1})
        ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": t + 20_000,
                   "end_ns": t + 1_020_000, "result": 0, "device": 0, "stream": 7, "corr": 2 * k + 1, "name": "k"})
        ev.append({"kind": "copy", "api": "cudaMemcpyAsync", "tid": 7, "start_ns": t + 15_000,
                   "end_ns": t + 2_515_000, "result": 0, "bytes": 16 << 20, "dir": "h2d", "host_mem": "pageable",
                   "device": 0, "stream": 0, "async": True, "corr": 2 * k + 2})
        ev.append({"kind": "gpu_copy", "api": "cupti_memcpy", "tid": 200, "start_ns": t + 1_020_000,
                   "end_ns": t + 2_510_000, "result": 0, "bytes": 16 << 20, "dir": "h2d", "device": 0, "stream": 7,
                   "corr": 2 * k + 2})
    return ev


@test
def gpu_work_on_overlapping_streams_counts_once(tmp):
    """Each 2 ms step launches a 1 ms kernel on one stream and, beside it,
    an 800 us pinned copy on another that runs inside the kernel's time,
    then waits for both: the GPU works 1 ms a step (50%), not the 1.8 ms
    (90%) a sum of the two said; with the copy half after the kernel's
    end, 1.4 ms (70%)."""
    from test_report import write_jsonl
    for copy_at, busy in ((100_000, 1_000_000), (620_000, 1_400_000)):
        ev = []
        for k in range(50):
            t = 1_000_000 + k * 2_000_000
            ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 10_000,
                       "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1],
                       "stream": 1, "corr": 2 * k + 1})
            ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": t + 20_000,
                       "end_ns": t + 1_020_000, "result": 0, "device": 0, "stream": 1, "corr": 2 * k + 1,
                       "name": "k"})
            ev.append({"kind": "copy", "api": "cudaMemcpyAsync", "tid": 7, "start_ns": t + 12_000,
                       "end_ns": t + 18_000, "result": 0, "bytes": 8 << 20, "dir": "h2d", "host_mem": "pinned",
                       "device": 0, "stream": 2, "async": True, "corr": 2 * k + 2})
            ev.append({"kind": "gpu_copy", "api": "cupti_memcpy", "tid": 200, "start_ns": t + copy_at,
                       "end_ns": t + copy_at + 800_000, "result": 0, "bytes": 8 << 20, "dir": "h2d", "host_mem": "pinned",
                       "device": 0, "stream": 2, "corr": 2 * k + 2})
            ev.append({"kind": "sync", "api": "cudaDeviceSynchronize", "tid": 7, "start_ns": t + 20_000,
                       "end_ns": t + max(1_020_000, copy_at + 800_000) + 5_000, "result": 0, "device": 0})
        path = write_jsonl(os.path.join(tmp, f"overlap{copy_at}.jsonl"), ev, timing="cupti")
        step = report_json_of(path)["processes"][0]["step"]
        check(step["found"] and step["step_ns"] == 2_000_000 and step["gpu_ns"] == busy,
              f"copy at {copy_at}: step {step}")


@test
def the_replayed_step_is_the_run_on_the_doubles(tmp):
    """prog_train (the demo) under the CUPTI double: the step replayed as it
    ran is the run's step within 10%. The doubles' synchronizing calls wait
    for the GPU work their records say is still running, as a real GPU's
    do; when they returned at once, the replay (which makes a synchronize
    wait for its stream) said 4.6 ms for a run of 3.3 ms, and every saving
    was measured against a step that never ran. A real run's times: on a
    loaded machine one run replayed at 0.897 of its step, so a run outside
    the bound runs once more, and only two outside it fail."""
    if SANITIZED:
        raise Skip("a timing under the sanitizers: gpuspy's own cost there is not what the replay takes off")
    from test_cupti import CUPTI_ENV
    for clock in ("mono", "tsc"):
        for attempt in (1, 2):
            d = os.path.join(tmp, f"{clock}-{attempt}")
            os.makedirs(d)
            run("prog_train", tmp=d, env=dict(CUPTI_ENV, GPUSPY_CLOCK=clock))
            step = report_json_of(d)["processes"][0]["step"]
            check(step["found"] and step["steps"] == 19, f"{clock}: step {step}")
            if abs(step["replayed_step_ns"] - step["step_ns"]) <= 0.1 * step["step_ns"]:
                break
        check(abs(step["replayed_step_ns"] - step["step_ns"]) <= 0.1 * step["step_ns"],
              f"{clock}: replayed {step.get('replayed_step_ns')} ns a step, the run {step.get('step_ns')} ns, twice")


@test
def a_pool_instead_of_malloc_and_free_is_replayed_exactly(tmp):
    """empty_cache()'s shape, known to the nanosecond: each 1.5 ms step
    (a phase) allocates (200 us), launches a 1 ms kernel (a 10 us call),
    frees (the free waits for the kernel, then 5 us more) and works 270 us
    on the host. Replayed, a step is 1,485,100 ns; from a pool the
    allocation and the free cost nothing and wait for nothing, so the
    kernels run back to back from 10.7 us in: it saves (40 x 1,485,100 -
    (10,700 + 40 x 1,000,000)) / 40 = 484,832 ns a step."""
    from test_report import phase_event, write_jsonl
    ev = []
    for k in range(50):
        t = 1_000_000 + k * 1_500_000
        ev.append(phase_event(True, t, "step", k))
        ev.append({"kind": "alloc", "api": "cudaMalloc", "tid": 7, "start_ns": t, "end_ns": t + 200_000, "result": 0,
                   "bytes": 64 << 20, "mem": "device", "addr": 0x10000000 + k * (64 << 20), "device": 0})
        ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t + 205_000, "end_ns": t + 215_000,
                   "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0,
                   "corr": k + 1})
        ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": t + 225_000,
                   "end_ns": t + 1_225_000, "result": 0, "device": 0, "stream": 7, "corr": k + 1, "name": "k"})
        ev.append({"kind": "free", "api": "cudaFree", "tid": 7, "start_ns": t + 220_000, "end_ns": t + 1_230_000,
                   "result": 0, "bytes": 64 << 20, "mem": "device", "addr": 0x10000000 + k * (64 << 20),
                   "device": 0})
        ev.append(phase_event(False, t + 1_490_000, "step", k))
    path = write_jsonl(os.path.join(tmp, "pool.jsonl"), ev, timing="cupti")
    o = report_json_of(path)
    step = o["processes"][0]["step"]
    check(step["what"] == "PyTorch's optimizer steps: step" and step["replayed_step_ns"] == 1_485_100, f"step {step}")
    churn = [d for d in o["diagnoses"] if d["id"] == "allocation_churn"]
    check(len(churn) == 1 and churn[0]["saving"]["per_step_ns"] == 484_832
          and churn[0]["saving"]["how"].startswith("the allocations and frees replayed from a pool"),
          f"diagnoses {o['diagnoses']}")


def launch_loop(name=lambda i: f"k{i}", stack=lambda i: None):
    """A launch-bound loop's events: 50 steps of 340 us, each launching 20
    kernels named name(i), a 10 us call every 12 us whose 3 us kernel
    starts 5 us into it, then 102 us of the host's own work; launch i with
    the stack stack(i), if any."""
    ev, corr = [], 0
    for k in range(50):
        for i in range(20):
            t = 1_000_000 + k * 340_000 + i * 12_000
            corr += 1
            ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 10_000,
                       "result": 0, "device": 0, "name": name(i), "grid": [1, 1, 1], "block": [32, 1, 1],
                       "stream": 0, "corr": corr, **({"stack": stack(i)} if stack(i) else {})})
            ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": t + 5_000,
                       "end_ns": t + 8_000, "result": 0, "device": 0, "stream": 7, "corr": corr, "name": name(i)})
    return ev


@test
def a_graph_of_the_steps_launches_is_replayed_exactly(tmp):
    """A launch-bound loop on a timeline known to the nanosecond: each
    340 us step launches 20 different 3 us kernels, a 10 us call every
    12 us (2 us of dispatch between them), then works 102 us on the host.
    The step is the launcher's period, 20 launches, 49 whole steps. Its
    replay takes off what tracing added (each call's 300 ns record and
    CUPTI's 4 us for its one GPU record): 20 x 5.7 + 19 x 2 + 102 = 254 us
    a step. As one graph launch a step (what one takes untraced: 2.2 us
    and 0.2 us a node, 6.2 us), the dispatch gaps go (under 8 launches'
    cost) and the host's 102 us stay: 108.2 us a step, the GPU's 20 x 3 us
    + 19 x 1 us between nodes behind it. So launch_bound, first and alone,
    saves 254 - 108.2 = 145.8 us a step."""
    from test_report import write_jsonl
    path = write_jsonl(os.path.join(tmp, "graph.jsonl"), launch_loop(), timing="cupti")
    o = report_json_of(path)
    step = o["processes"][0]["step"]
    check(step["found"] and step["steps"] == 49 and step["step_ns"] == 340_000 and step["launches"] == 20 and
          step["replayed_step_ns"] == 254_000 and step["replayed_savings_ns"]["graph"] == 145_800, f"step {step}")
    d = o["diagnoses"]
    check(len(d) == 1 and d[0]["id"] == "launch_bound" and d[0]["saving"]["per_step_ns"] == 145_800 and
          d[0]["text"].startswith("Each step launches 20 kernels one by one and the GPU works 60.0 us of its "
                                  "340.0 us (18%)"), f"diagnoses {d}")


@test
def an_eager_decode_loop_is_told_to_graph_its_token(tmp):
    """The launch-bound timeline of a_graph_of_the_steps_launches_is_replayed_
    exactly, as PyTorch's eager decode loop: 20 of PyTorch's kernels a
    token, no optimizer (inference). The replay is the same, 145.8 us of a
    340 us step, and the change is said in decoding's terms: the token's
    forward as a CUDA graph with a static KV cache (generate's
    cache_implementation="static", torch.compile's reduce-overhead)."""
    from test_report import write_jsonl
    ev = launch_loop(name=lambda i: f"void at::native::elementwise_kernel_{i}<128, 4>(int)")
    path = write_jsonl(os.path.join(tmp, "decode.jsonl"), ev, timing="cupti")
    o = report_json_of(path)
    check(o["processes"][0]["framework"] == "PyTorch", o["processes"][0].get("framework"))
    step = o["processes"][0]["step"]
    check(step["steps"] == 49 and step["step_ns"] == 340_000 and step["replayed_savings_ns"]["graph"] == 145_800,
          f"step {step}")
    d = o["diagnoses"]
    check(len(d) == 1 and d[0]["id"] == "launch_bound" and d[0]["saving"]["per_step_ns"] == 145_800 and
          "capture the decode step in a CUDA graph (torch.cuda.graphs with a static KV cache, "
          "torch.compile(mode=\"reduce-overhead\"), generate(..., cache_implementation=\"static\"))"
          in d[0]["text"], f"diagnoses {d}")


def set_cpus(path, n):
    """The JSON Lines trace at path, as if its process could run on n CPUs."""
    import json
    lines = open(path).read().splitlines()
    head = json.loads(lines[0])
    head["cpus"] = n
    with open(path, "w") as f:
        f.write("\n".join([json.dumps(head)] + lines[1:]) + "\n")


def jax_loop(tmp, second_at, frames=None, kernels=2, kernel_ns=15_000, period=100_000, extra=None):
    """A host-bound JAX loop's report: 50 steps of 100 us (period), each a run of
    the jitted step (XLA's range "XlaModule:#hlo_module=jit_step"), whose
    20.3 us dispatch at 20 us launches its graph: 2 kernels (kernels) of
    15 us (kernel_ns) on the GPU, each second_at ns after the one before
    starts; each launch with the stack frames, if given; extra(k, t): more
    events of step k, begun at t."""
    from test_report import write_jsonl
    ev = []
    name = "XlaModule:#hlo_module=jit_step,program_id=9#"
    for k in range(50):
        t = 1_000_000 + k * period
        ev.append({"kind": "phase_begin", "api": "nvtxRangePush", "tid": 7, "start_ns": t, "end_ns": t,
                   "result": 0, "device": 0, "name": name})
        ev.append({"kind": "launch", "api": "cuGraphLaunch", "tid": 7, "start_ns": t + 20_000,
                   "end_ns": t + 40_300, "result": 0, "device": 0, "name": "(graph)", "graph": 17476,
                   "stream": 0, "corr": k + 1, **({"stack": 1} if frames else {})})
        for i in range(kernels):
            g = t + 41_000 + i * second_at
            ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": g, "end_ns": g + kernel_ns,
                       "result": 0, "device": 0, "stream": 7, "corr": k + 1, "name": f"fusion_{i}", "graph_id": 5})
        ev.append({"kind": "phase_end", "api": "nvtxRangePop", "tid": 7, "start_ns": t + 41_000,
                   "end_ns": t + 41_000, "result": 0, "device": 0, "name": name})
        ev += extra(k, t) if extra else []
    return report_json_of(write_jsonl(os.path.join(tmp, "jax.jsonl"), ev, timing="cupti",
                                      frames={1: frames} if frames else None))


@test
def ten_jax_steps_a_dispatch_are_replayed_exactly(tmp):
    """jax_loop's loop, known to the nanosecond, its kernels back to back;
    the host's own work fills the rest of each step. Replayed, a step is
    the host's: its graph launch, 20,300 ns under CUPTI, keeps 12% of it,
    2,436 ns, and the 79.7 us gap before it loses 30% of the 17,864 ns
    the launch lost, 5,359 ns (replay.c's untraced() and cupti_beyond()):
    74,341 + 2,436 = 76,777 ns, the GPU's 30 us inside it. With ten steps
    a dispatch (lax.scan) the host's part is a tenth, and the GPU sets
    the pace: the 40 steps take the first dispatch's tenth, (20,000 -
    5,359) / 10 + 2,436 / 10 = 1,464 + 243 ns, then 40 x 30 us back to
    back: 1,201,707 ns, 30,042.7 ns a step. So host_bound, first, saves
    76,777 - 30,042.7 = 46,734 ns a step, in JAX's terms; it
    says the GPU idled 49 x 70 us = 3.43 ms of the loop's 5.0 ms (69%). No
    CUDA graph is proposed (XLA launches graphs already)."""
    o = jax_loop(tmp, 15_000)
    check(o["processes"][0]["framework"] == "JAX", o["processes"][0].get("framework"))
    step = o["processes"][0]["step"]
    check(step["what"] == "the cycle of phases jit_step" and step["step_ns"] == 100_000 and
          step["replayed_step_ns"] == 76_777 and step["gpu_ns"] == 30_000 and
          step["replayed_savings_ns"]["fuse"] == 46_734, f"step {step}")
    d = o["diagnoses"]
    check(d and d[0]["id"] == "host_bound" and d[0]["saving"]["per_step_ns"] == 46_734 and
          d[0]["text"].startswith("In the loop (5.0 ms, from the first 'jit_step' on), the GPU sat idle 3.4 ms "
                                  "(69%) waiting for the host")
          and "several steps in one jitted call (lax.scan or lax.fori_loop over the steps)" in d[0]["text"]
          and "launch_bound" not in [x["id"] for x in d], f"diagnoses {d}")


@test
def kernels_started_before_the_last_ends_are_replayed_as_they_ran(tmp):
    """jax_loop's loop, its second kernel started 3 us before the first ends (a programmatic
    dependent launch, as XLA's kernels: about a tenth of the what-if
    suite's JAX loop's GPU time). The GPU is busy 27 us a step, not 30;
    the step as it ran replays the same, 76,777 ns. With ten steps a
    dispatch the GPU sets the pace at 27 us a step, each second kernel
    again 3 us early: the 40 steps take 1,464 + 243 + 40 x 27,000 =
    1,081,707 ns, 27,042.7 a step, and the saving is 76,777 - 27,042.7 =
    49,734 ns. Run back to back, as the replay had it, the kernels gave
    30 us a step and 46,734 ns: the what-if suite's JAX fix replayed 6-8
    us a step over the 51 us it ran, and within 1 us with the overlap
    kept (whatif_changes_replay_close_to_the_fixed_programs)."""
    o = jax_loop(tmp, 12_000)
    step = o["processes"][0]["step"]
    check(step["step_ns"] == 100_000 and step["replayed_step_ns"] == 76_777 and step["gpu_ns"] == 27_000 and
          step["replayed_savings_ns"]["fuse"] == 49_734, f"step {step}")
    d = o["diagnoses"]
    check(d and d[0]["id"] == "host_bound" and d[0]["saving"]["per_step_ns"] == 49_734, f"diagnoses {d}")


@test
def an_upload_before_a_healthy_loop_is_no_finding(tmp):
    """A 64 MiB pageable upload (50 ms), then a GPU-bound loop: 60 steps
    (a phase each) of a 10 us launch whose 2 ms kernel runs back to back
    with the last, the host far ahead. The upload is a one-time cost
    before the steady state, said with its size and time; the loop gets no
    diagnosis at all: nothing a step would save."""
    from test_report import phase_event, write_jsonl
    ev = [{"kind": "copy", "api": "cudaMemcpy", "tid": 7, "start_ns": 1_000_000, "end_ns": 51_000_000, "result": 0,
           "bytes": 64 << 20, "dir": "h2d", "host_mem": "pageable", "device": 0, "stream": 0, "corr": 1000},
          {"kind": "gpu_copy", "api": "cupti_memcpy", "tid": 200, "start_ns": 1_100_000, "end_ns": 50_900_000,
           "result": 0, "bytes": 64 << 20, "dir": "h2d", "device": 0, "stream": 7, "corr": 1000}]
    for k in range(60):
        t = 60_000_000 + k * 20_000
        g = 60_100_000 + k * 2_000_000
        ev.append(phase_event(True, t, "step", k))
        ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t + 1000, "end_ns": t + 11_000,
                   "result": 0, "device": 0, "name": "gemm", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0,
                   "corr": k + 1})
        ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": g, "end_ns": g + 2_000_000,
                   "result": 0, "device": 0, "stream": 7, "corr": k + 1, "name": "gemm"})
        ev.append(phase_event(False, t + 12_000, "step", k))
    path = write_jsonl(os.path.join(tmp, "healthy.jsonl"), sorted(ev, key=lambda e: e["start_ns"]), timing="cupti")
    o = report_json_of(path)
    once = o["processes"][0]["step"]["one_time"]
    check(once["h2d_copies"] == 1 and once["h2d_bytes"] == 64 << 20 and once["h2d_ns"] == 50_000_000, f"{once}")
    check(o["diagnoses"] == [], f"diagnoses {o['diagnoses']}")


@test
def a_bound_without_gpu_records_is_cut_to_the_steady_steps(tmp):
    """Without GPU records (CUPTI off) nothing is replayed and the
    diagnoses keep their bounds from the run's totals, but with a step
    found none claims more a step than the steady steps' own calls of its
    kind (docs/commands.md, Savings): 8 occurrences of phase 'step', each
    a 10 us launch and a synchronize of 50 us in a 100 us step, the
    first's synchronize 10 ms. The step is the cycle of phases, 7 steps of
    100 us, whose waits take 50 us each (steady_host_ns; its launches
    10 us, with the 40 us before each but the replay window's first, a
    framework's dispatch to the replay); sync_stalls'
    bound, the waits' 10.35 ms over the 8 occurrences (1,293,750 ns a
    step, more than the step), is cut to them: 50,000 ns a step, 350 us
    over the 7 steps (the step's count, not the phase's), and says so
    (cut only to the step, 100 us, it counted the
    first step's warm-up wait twice over). Then 4 such phases whose
    synchronize takes 10 ms, before 59 steps of three launches and no wait:
    the step is the launches, its waits none, and the waits' bound, all
    of it warm-up, goes: no diagnosis (it said "up to 600 us a step" of a
    loop that never waits)."""
    from test_report import phase_event, write_jsonl

    def launch(t, name="k"):
        return {"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 10_000,
                "result": 0, "device": 0, "name": name, "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0}

    def sync(t, w):
        return {"kind": "sync", "api": "cudaStreamSynchronize", "tid": 7, "start_ns": t, "end_ns": t + w,
                "result": 0, "device": 0, "stream": 0}
    ev, t = [], 1_000_000
    for k in range(8):
        w = 10_000_000 if k == 0 else 50_000
        ev += [phase_event(True, t, "step", k), launch(t + 10_000), sync(t + 20_000, w),
               phase_event(False, t + 50_000 + w, "step", k)]
        t += 50_000 + w
    o = report_json_of(write_jsonl(os.path.join(tmp, "sync.jsonl"), ev))
    step = o["processes"][0]["step"]
    check(step["found"] and step["steps"] == 7 and step["step_ns"] == 100_000 and step["gpu_ns"] == 0 and
          step["steady_host_ns"] == {"waits": 50_000, "pageable_h2d": 0, "pageable_d2h": 0, "allocs": 0, "data": 0,
                                     "launches": (6 * 10_000 + 5 * 40_000) // 6}, f"{step}")
    d = o["diagnoses"]
    check(len(d) == 1 and d[0]["id"] == "sync_stalls" and d[0]["saving"]["ns"] == 350_000 and
          d[0]["saving"]["steps"] == 7 and d[0]["saving"]["per_step_ns"] == 50_000 and
          d[0]["saving"]["how"].endswith("; at most the steady steps' own, 50.0 us a step"), f"diagnoses {d}")
    ev, t = [], 1_000_000
    for k in range(4):
        ev += [phase_event(True, t, "step", k), launch(t), sync(t + 10_000, 10_000_000),
               phase_event(False, t + 10_010_000, "step", k)]
        t += 10_010_000
    for _ in range(59):
        for name in ("a", "b", "c"):
            ev.append(launch(t, name))
            t += 33_333
    o = report_json_of(write_jsonl(os.path.join(tmp, "warmup.jsonl"), ev))
    step = o["processes"][0]["step"]
    check(step["found"] and step["gpu_ns"] == 0 and step["steady_host_ns"]["waits"] == 0 and
          step["warmup_ns"] >= 40_040_000, f"{step}")
    check(o["diagnoses"] == [], f"diagnoses {o['diagnoses']}")


@test
def a_data_bound_without_gpu_records_is_cut_to_the_steady_data_phases(tmp):
    """Without GPU records, data_starvation's bound (the shorter of the
    data phases and the rest of the loop, over the run) is cut to the
    steady steps' data phases: 8 steps, each a phase 'data' of 60 us with
    no GPU work then a phase 'train' of a 10 us launch in 40 us, the first
    of each 10 ms (a loader's and a model's warm-up). The totals' bound,
    10.28 ms over 8 (1.285 ms a step), is cut to 60 us a step, 420 us over
    the 7 steps after warm-up, and says so (cut only to the step, it said
    100 us a step: the
    warm-up's data counted into the loop's)."""
    from test_report import phase_event, write_jsonl
    ev, t = [], 1_000_000
    for k in range(8):
        dd, tt = (10_000_000, 10_000_000) if k == 0 else (60_000, 40_000)
        ev += [phase_event(True, t, "data", k), phase_event(False, t + dd, "data", k),
               phase_event(True, t + dd, "train", k),
               {"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t + dd, "end_ns": t + dd + 10_000,
                "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0},
               phase_event(False, t + dd + tt, "train", k)]
        t += dd + tt
    o = report_json_of(write_jsonl(os.path.join(tmp, "data.jsonl"), ev))
    step = o["processes"][0]["step"]
    check(step["found"] and step["step_ns"] == 100_000 and step["gpu_ns"] == 0 and
          step["steady_host_ns"]["data"] == 60_000, f"{step}")
    d = [x for x in o["diagnoses"] if x["id"] == "data_starvation"]
    check(len(d) == 1 and d[0]["saving"]["ns"] == 420_000 and d[0]["saving"]["steps"] == 7 and
          d[0]["saving"]["per_step_ns"] == 60_000 and
          d[0]["saving"]["how"].endswith("; at most the steady steps' own, 60.0 us a step"), f"diagnoses {d}")
