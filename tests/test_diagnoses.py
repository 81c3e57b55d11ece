# SPDX-License-Identifier: MIT
"""The diagnoses, on made-up traces whose times are known to the
nanosecond: launch-bound judged in the steady steps (not with one graph
launch a step), pageable copies made once, waits right after pageable
copies, counts of one, the churn's time; what each change saves; JAX's
jitted steps and compilations."""
import json
import os

from harness import ROOT, SANITIZED, Skip, check, have_torch, only_trace, report_json, report_text, run_py, test
from test_report import kernel_steps, phase_event, write_jsonl


@test
def launch_bound_judged_in_phases(tmp):
    """The launch-bound diagnosis is judged on the steady steps, not on a
    run whose start-up (10 s here, before the loop) dilutes them: 1000
    kernels of 3.9 us, each shorter than its 4 us launch, one every 5 us,
    keep the GPU busy 78%: not launch-bound (over the whole run it would
    be 0.04%). At 1 us each it is: the same kernel launched over and over
    is grouped into steps of 16 launches (62 of them, the 10 s before the
    first left out as warm-up), of which the GPU works 16 us of 80 (20%),
    and the replay of the last 40 as one graph launch each saves 27,147 ns
    a step: 40 steps of 16 launches, each launch's 4 us less what tracing
    added (docs/design.md#replay: half of it, as 4.3 us is more than half),
    and the 1 us of dispatch between them, 48,000 ns a step, against a
    graph launch of what one takes untraced (2.2 us and 0.2 us a node),
    after which the GPU's 16 kernels of 1 us back to back 0.3 us apart set
    the pace: 20,853 ns a step (26,512 ns saved with a 20 us graph launch,
    15,525 ns with kernels 1 us apart: the H200's graphs run their kernels
    closer, docs/design.md#replay). With host timing only,
    launches taking 80% of the time in phases are launch-bound, from the
    run's totals. One launch every 40 us is not: the launches and the
    dispatch between them are 10% of the step; the host does something
    else."""
    T = 10_000_000_000

    def trace(kernel_ns, timing, every=5000):
        ev = [{"kind": "alloc", "api": "cudaMalloc", "tid": 7, "start_ns": 1000, "end_ns": 2000, "result": 0,
               "bytes": 4096, "mem": "device", "addr": 4096, "device": 0},
              phase_event(True, T, "step", 0)]
        for i in range(1000):
            t = T + i * every
            ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 4000,
                       "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0,
                       "corr": i + 1})
            if timing == "cupti":
                ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": t + 500,
                           "end_ns": t + 500 + kernel_ns, "result": 0, "device": 0, "stream": 7, "corr": i + 1,
                           "name": "k"})
        ev.append(phase_event(False, T + 1000 * every, "step", 0))
        return write_jsonl(os.path.join(tmp, f"{timing}-{kernel_ns}-{every}.jsonl"), ev, timing=timing)

    busy = report_json(trace(3900, "cupti"))
    check([d["id"] for d in busy["diagnoses"] if d["id"] in ("launch_bound", "host_bound")] == [],
          f"a GPU busy 78% of the time in phases called launch- or host-bound: {busy['diagnoses']}")
    idle = report_json(trace(1000, "cupti"))
    lb = [d for d in idle["diagnoses"] if d["id"] == "launch_bound"]
    check(len(lb) == 1 and lb[0]["text"].startswith(
        "Each step launches 16 kernels one by one and the GPU works 16.0 us of its 80.0 us (20%)")
        and lb[0]["saving"]["per_step_ns"] == 27_147 and lb[0]["saving"]["steps"] == 62
        and lb[0]["saving"]["bound"] == "estimate", f"no launch-bound diagnosis of the steps: {lb}")
    step = idle["processes"][0]["step"]
    check(step["steady_from_ns"] == T - 1000 and step["step_ns"] == 80_000, f"step {step}")
    host = report_text(trace(0, "none"))
    check("1000 kernel launches take 80% of the host's time in phases (mean 4.0 us each) while it waits "
          "for the GPU only 0%" in " ".join(host.split()), f"host-side: {host[-900:]}")
    # One launch every 40 us: short kernels on an idle GPU, but the launch
    # calls take 10% of the host's time, so something else sets its pace.
    slow = report_json(trace(1000, "cupti", every=40_000))
    ids = [d["id"] for d in slow["diagnoses"]]
    check("launch_bound" not in ids, f"launches 10% of the host's time called launch-bound: {ids}")


@test
def one_graph_launch_a_step_is_not_launch_bound(tmp):
    """A JAX-like step: one 12 us graph launch running ten 400 ns kernels,
    then a host function launched outside the step, 2000 steps of 20 us.
    Every kernel is shorter than a launch call and the GPU is busy a third
    of the steps, but each step launches once: there is nothing to fold
    (the old report said launch-bound, "capture the step in a CUDA graph",
    saving 0 ns), so no launch-bound diagnosis: the host sets the pace,
    and no change the replay can make gives that time back (the host's
    own work stays; a JAX program's several steps a call would), so the
    diagnosis keeps its bound from the totals. The steps ran 20000 kernels
    (the GPU's records), and a host function is not a kernel: '(no phase)'
    ran none, with CUPTI or without."""
    def trace(timing):
        ev = []
        for i in range(2000):
            t = 1_000_000 + i * 20_000
            ev.append(phase_event(True, t, "jit_step", i))
            ev.append({"kind": "launch", "api": "cuGraphLaunch", "tid": 7, "start_ns": t + 100,
                       "end_ns": t + 12_100, "result": 0, "device": 0, "name": "(graph)", "graph": 17476,
                       "stream": 0, "corr": 2 * i + 1})
            if timing == "cupti":
                for k in range(10):
                    g = t + 12_200 + k * 500
                    ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": g,
                               "end_ns": g + 400, "result": 0, "device": 0, "stream": 7, "corr": 2 * i + 1,
                               "name": f"fusion_{k}", "graph_id": 5})
            ev.append(phase_event(False, t + 12_150, "jit_step", i))
            ev.append({"kind": "launch", "api": "cuLaunchHostFunc", "tid": 7, "start_ns": t + 12_200,
                       "end_ns": t + 14_200, "result": 0, "device": 0, "name": "(host function)", "stream": 0,
                       "corr": 2 * i + 2})
        return write_jsonl(os.path.join(tmp, f"graph-{timing}.jsonl"), ev, timing=timing)

    for timing in ("cupti", "none"):
        path = trace(timing)
        o = report_json(path)
        check([d["id"] for d in o["diagnoses"] if d["id"] == "launch_bound"] == [],
              f"{timing}: a step of one graph launch called launch-bound: {o['diagnoses']}")
        # What holds the GPU back is the host: between a step's last kernel
        # and the next step's first, 15.1 us idle, 1999 times, the next
        # work launched after the GPU went idle (CUPTI only).
        host = [d for d in o["diagnoses"] if d["id"] == "host_bound"]
        if timing == "cupti":
            check(len(host) == 1 and host[0]["text"].startswith(
                "In the loop (40.0 ms, from the first 'jit_step' on), the GPU sat idle 30.2 ms (75%) waiting for "
                "the host")
                and host[0]["saving"]["ns"] == 1999 * 15_100 and host[0]["saving"]["steps"] == 1999
                and host[0]["saving"]["bound"] == "upper",
                f"host-bound: {host}")
        else:
            check(host == [], f"host-bound without GPU timing: {host}")
        rows = {l.split()[0]: l.split() for l in report_text(path).splitlines()
                if l.startswith("  (no phase) ") or l.startswith("  jit_step ")}
        # name, count, wall (number and unit), kernels
        check(rows["(no"][5] == "0", f"{timing}: host functions counted as kernels: {rows}")
        if timing == "cupti":
            check(rows["jit_step"][4] == "20000", f"kernels the steps ran: {rows}")


@test
def one_off_pageable_copies_not_diagnosed(tmp):
    """Pageable host-to-device copies made only before a loop's warm-up (the
    first occurrence of a repeated phase: weights uploaded at start-up)
    that took under 1% of the run get no diagnosis: six of 10 us in a 1 s
    run. One more copy in the second step, or the six taking 20 ms (2%),
    and all of them are diagnosed."""
    def trace(name, copy_ns, in_loop):
        copy = {"kind": "copy", "api": "cudaMemcpy", "tid": 7, "result": 0, "bytes": 1 << 20, "dir": "h2d",
                "host_mem": "pageable", "device": 0}
        ev = [dict(copy, start_ns=1000 + i * 100_000, end_ns=1000 + i * 100_000 + copy_ns) for i in range(6)]
        for step in range(3):
            t = 100_000_000 + step * 300_000_000
            ev.append(phase_event(True, t, "step", step))
            if in_loop and step == 1:
                ev.append(dict(copy, start_ns=t + 1000, end_ns=t + 11_000))
            ev.append(phase_event(False, t + 200_000_000, "step", step))
        path = write_jsonl(os.path.join(tmp, name + ".jsonl"), ev)
        return [d["text"] for d in report_json(path)["diagnoses"] if d["id"] == "pageable_copies"]

    check(trace("startup", 10_000, False) == [], "one-off start-up copies diagnosed")
    got = trace("loop", 10_000, True)
    check(len(got) == 1 and got[0].startswith("7 host-to-device copies (7.0 MiB, 70.0 us on the host)"),
          f"a copy in the loop: {got}")
    got = trace("slow", 20_000_000 // 6, False)
    check(len(got) == 1 and got[0].startswith("6 host-to-device copies (6.0 MiB, 20.0 ms on the host)"),
          f"start-up copies taking 2% of the run: {got}")


@test
def waits_after_pageable_copies_named(tmp):
    """A sync-stall diagnosis says how many of a phase's waits came right
    after the same thread's pageable copy (PyTorch waits for each): three
    steps of phase 'data', each a pageable copy then a wait on thread 7,
    are "each right after a pageable copy" with the advice to pin; with a
    launch between copy and wait in one step, or the wait of another
    thread right after thread 7's copy, 2 of 3, and the general advice;
    --json has the count per phase and in the totals."""
    def trace(name, between, other_tid):
        ev = []
        for step in range(3):
            t = 1_000_000 + step * 1_000_000
            ev.append(phase_event(True, t, "data", step))
            ev.append({"kind": "copy", "api": "cudaMemcpyAsync", "tid": 7, "start_ns": t + 1000,
                       "end_ns": t + 2000, "result": 0, "bytes": 4096, "dir": "h2d", "host_mem": "pageable",
                       "device": 0, "async": True})
            if between and step == 1:
                ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t + 2500,
                           "end_ns": t + 2600, "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1],
                           "block": [32, 1, 1], "stream": 0})
            tid = 8 if other_tid and step == 2 else 7
            ev.append({"kind": "sync", "api": "cudaStreamSynchronize", "tid": tid, "start_ns": t + 3000,
                       "end_ns": t + 4000, "result": 0, "device": 0, "stream": 0})
            ev.append(phase_event(False, t + 500_000, "data", step))
        o = report_json(write_jsonl(os.path.join(tmp, name + ".jsonl"), ev, threads=2))
        data = [p for p in o["phases"] if p["name"] == "data"][0]
        n = 3 if name == "each" else 2
        check(data["sync_after_pageable"]["count"] == n and data["sync_after_pageable"]["host_ns"] == 1000 * n
              and o["totals"]["sync_after_pageable"]["count"] == n, f"{name}: --json {data['sync_after_pageable']}")
        return [d["text"] for d in o["diagnoses"] if d["id"] == "sync_stalls"]

    got = trace("each", False, False)
    check(len(got) == 1 and got[0].startswith(
        "Phase 'data' (3 occurrences) synchronizes 3 times (3.0 us waiting; each right after a pageable "
        "copy): ") and "\nCopy from pinned memory (DataLoader(pin_memory=True)" in got[0], f"each: {got}")
    for name, between, other in (("launch", True, False), ("thread", False, True)):
        got = trace(name, between, other)
        check(len(got) == 1 and got[0].startswith(
            "Phase 'data' (3 occurrences) synchronizes 3 times (3.0 us waiting; 2 right after a pageable "
            "copy): ") and "\nRemove per-step .item()" in got[0], f"{name}: {got}")


@test
def counts_of_one_are_singular(tmp):
    """A report's counts of one take the singular: two steps of phase
    'data', one with a synchronous pageable copy of 100 us, the other with
    a wait of 50 us that carries a stack, give "1 host-to-device copy ...
    stages it ... it cannot overlap", "synchronizes 1 time ... and makes 1
    synchronous copy" and, among the call sites, "1 wait"."""
    ev = []
    for step in range(2):
        t = 1_000_000 * (step + 1)
        ev.append(phase_event(True, t, "data", step))
        if step == 0:
            ev.append({"kind": "copy", "api": "cudaMemcpy", "tid": 7, "start_ns": t + 1000, "end_ns": t + 101_000,
                       "result": 0, "bytes": 4096, "dir": "h2d", "host_mem": "pageable", "device": 0,
                       "async": False})
        else:
            ev.append({"kind": "sync", "api": "cudaStreamSynchronize", "tid": 7, "start_ns": t + 1000,
                       "end_ns": t + 51_000, "result": 0, "device": 0, "stream": 0, "stack": 1})
        ev.append(phase_event(False, t + 500_000, "data", step))
    path = write_jsonl(os.path.join(tmp, "one.jsonl"), ev, frames={1: ["wait_here (w.c:3)", "main (w.c:9)"]})
    said = {d["id"]: d["text"] for d in report_json(path)["diagnoses"]}
    check(said.get("pageable_copies", "").startswith(
        "1 host-to-device copy (4.0 KiB, 100.0 us on the host) read pageable memory: the driver stages it "
        "through a bounce buffer and it cannot overlap compute."), f"pageable copies: {said}")
    check(said.get("sync_stalls", "").startswith(
        "Phase 'data' (2 occurrences) synchronizes 1 time (50.0 us waiting; each right after a pageable copy) "
        "and makes 1 synchronous copy: "), f"sync stalls: {said}")
    out = report_text(path)
    check("\n    1 wait, 50.0 us in phase 'data':\n      at wait_here (w.c:3)\n      from main (w.c:9)\n" in out,
          f"waits list:\n{out}")


@test
def churn_says_its_time(tmp):
    """The allocation-churn diagnosis says how long the allocations and
    frees after warm-up took and what share of the time after it: six
    200 us steps, each a 10 us cudaMalloc of 1 MiB and a 6 us cudaFree; the
    five after the first step make 5 allocations (5.0 MiB) and 5 frees,
    80.0 us, 8% of the 1.0 ms from the second step's start to the end. The
    first step's pair is not counted, nor a 50 ms pair made before the loop
    (outside phases, like a context's creation in the first cudaMalloc).
    With call stacks it names where the most frees were made."""
    def alloc(api, t, dur, addr, size=None):
        return {"kind": "alloc" if size else "free", "api": api, "tid": 7, "start_ns": t, "end_ns": t + dur,
                "result": 0, "mem": "device", "addr": addr, "device": 0, "bytes": size or (1 << 20)}
    ev = [alloc("cudaMalloc", 100_000, 50_000_000, 1 << 40, 1 << 30), alloc("cudaFree", 50_200_000, 20_000, 1 << 40)]
    for step in range(6):
        t = 51_000_000 + step * 200_000
        ev += [phase_event(True, t, "step", step), alloc("cudaMalloc", t + 1000, 10_000, 4096, 1 << 20),
               alloc("cudaFree", t + 20_000, 6_000, 4096), phase_event(False, t + 200_000, "step", step)]
    said = {d["id"]: d["text"] for d in report_json(write_jsonl(os.path.join(tmp, "churn.jsonl"), ev))["diagnoses"]}
    check(said.get("allocation_churn", "").startswith(
        "5 device allocations (5.0 MiB) and 5 frees after warm-up (after the first occurrence of a repeated "
        "phase) took 80.0 us in the calls, 8% of the time after it: each cudaMalloc/cudaFree synchronizes "
        "the device."), f"diagnoses: {said}")
    # Without phases, warm-up is the first fifth of the events (3 of 14):
    # every step's pair counts, 96.0 us of the 1.025 ms from the third event.
    flat = [e for e in ev if not e["kind"].startswith("phase_")]
    said = {d["id"]: d["text"] for d in report_json(write_jsonl(os.path.join(tmp, "flat.jsonl"), flat))["diagnoses"]}
    check(said.get("allocation_churn", "").startswith(
        "6 device allocations (6.0 MiB) and 6 frees after warm-up (after the first fifth of the events) took "
        "96.0 us in the calls, 9% of the time after it: "), f"without phases: {said}")
    # With call stacks, the place that made the most of those frees is
    # named (a cache emptied every step is a line of the program's):
    # train.py:23 freed in steps 1-3; train.py:30 before the loop, in
    # step 0 (warm-up, both) and in steps 4 and 5: the most of the run's
    # frees, but 2 of the 5 after warm-up.
    frames = {1: ["step (/w/train.py:23)", "<module> (/w/train.py:40)"], 2: ["step (/w/train.py:30)"]}
    frees = [e for e in ev if e["kind"] == "free"]
    for k, e in enumerate(frees):
        e["stack"] = 1 if k in (2, 3, 4) else 2
    said = {d["id"]: d["text"] for d in report_json(write_jsonl(os.path.join(tmp, "st.jsonl"), ev, frames=frames))[
        "diagnoses"]}
    check("synchronizes the device. The most of those frees from one place, 3, were at step (/w/train.py:23).\n"
          in said.get("allocation_churn", ""), f"with stacks: {said}")


def fmt_ns(ns):
    """tools/util/units.c gs_fmt_ns."""
    if ns < 1000:
        return f"{ns} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.1f} us"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e9:.2f} s"


@test
def savings_come_from_the_timeline(tmp):
    """Each diagnosis of time says what its change saves, as an upper bound
    from the trace (tests/golden/train.jsonl, 20 steps, 19 after warm-up,
    the count every saving is over, as the step's section): pinning, the
    pageable copies' host time; removing the data phase's waits, their
    time (prog_train's copies there are synchronous cudaMemcpy); loading
    ahead, the shorter of the data phase and the rest of the loop; reusing
    buffers, the churn's time in the calls. With no GPU records, the
    waits', copies' and churn's bounds (totals, warm-up included) are cut
    to the steady steps' own calls of their kind (steady_host_ns): the
    first step's copies and waits took longer, so all three are, and say
    so. Per step is that over the steps, and the text says both."""
    path = os.path.join(ROOT, "tests", "golden", "train.jsonl")
    o = report_json(path)
    ph = {p["name"]: p for p in o["phases"]}
    data = ph["data"]
    loop = o["duration_ns"] - ph["(no phase)"]["wall_ns"]
    pageable = o["totals"]["copy"]["h2d"]["pageable"]["host_ns"]
    own = o["processes"][0]["step"]["steady_host_ns"]
    n = o["processes"][0]["step"]["steps"]
    check(n == 19, f"the golden's steps after warm-up: {n}")
    got = {(d["id"], d["saving"]["ns"]) for d in o["diagnoses"] if d.get("saving")}
    want_data = data["sync"]["host_ns"] + data["copy"]["h2d"]["pageable"]["host_ns"]
    check(own["pageable_h2d"] * n < pageable and own["waits"] * n < want_data and own["allocs"] > 0,
          f"the golden's steady steps: {own}")
    check(("pageable_copies", own["pageable_h2d"] * n) in got and ("sync_stalls", own["waits"] * n) in got and
          ("allocation_churn", own["allocs"] * n) in got and
          ("data_starvation", min(data["wall_ns"], loop - data["wall_ns"])) in got, f"savings {got}")
    for d in o["diagnoses"]:
        s = d.get("saving")
        if d["id"] == "oom_risk":
            check(s is None, f"a saving for a memory diagnosis: {s}")
            continue
        check(s["steps"] == n and s["per_step_ns"] == s["ns"] // n and s["bound"] == "upper",
              f"{d['id']}: {s}")
    churn = next(d for d in o["diagnoses"] if d["id"] == "allocation_churn")
    check("took 2.0 ms in the calls" in churn["text"] and churn["saving"]["how"].endswith(
        f"at most the steady steps' own, {fmt_ns(own['allocs'])} a step"), f"churn {churn}")
    text = " ".join(report_text(path).split())
    s = next(d["saving"] for d in o["diagnoses"] if d["id"] == "pageable_copies")
    want = (f"Saves up to {fmt_ns(s['ns'] // n)} a step ({fmt_ns(s['ns'])} over 19 steps): the copies' host "
            "time, as a copy from pinned memory returns at once (no pinned copy here measured the bandwidth); "
            f"at most the steady steps' own, {fmt_ns(own['pageable_h2d'])} a step.")
    check(want in text, f"{want!r} not in the report")


@test
def pinning_saving_at_the_measured_pinned_bandwidth(tmp):
    """With a pinned copy timed on the GPU (CUPTI), pinning saves about the
    pageable copies' host time less their bytes at that bandwidth: the two
    1 MiB pageable copies of tests/golden/gpu.jsonl took 20 us on the host;
    a 4 MiB pinned copy ran 10 us on the GPU, so their 2 MiB take 5 us
    there: about 15 us, an estimate. A slow pinned copy (4 MiB in 100 us)
    leaves no saving."""
    lines = open(os.path.join(ROOT, "tests", "golden", "gpu.jsonl")).read().splitlines()

    def with_pinned(gpu_ns):
        pinned = [{"type": "event", "kind": "copy", "api": "cudaMemcpyAsync", "tid": 100, "start_ns": 1_000_001_000,
                   "end_ns": 1_000_002_000, "result": 0, "device": 0, "bytes": 4 << 20, "dir": "h2d",
                   "host_mem": "pinned", "stream": 0, "corr": 900, "async": True},
                  {"type": "event", "kind": "gpu_copy", "api": "cupti_memcpy", "tid": 200, "start_ns": 1_000_003_000,
                   "end_ns": 1_000_003_000 + gpu_ns, "result": 0, "device": 0, "stream": 7, "corr": 900,
                   "bytes": 4 << 20, "dir": "h2d", "host_mem": "pinned"}]
        path = os.path.join(tmp, f"pinned{gpu_ns}.jsonl")
        with open(path, "w") as f:
            f.write("\n".join(lines[:1] + [json.dumps(e) for e in pinned] + lines[1:]) + "\n")
        o = report_json(path)
        check(o["totals"]["copy"]["h2d"]["pageable"]["host_ns"] == 20_000, "the golden's pageable copies changed")
        return next(d for d in o["diagnoses"] if d["id"] == "pageable_copies")

    d = with_pinned(10_000)
    s = d["saving"]
    check(s["ns"] == 15_000 and s["bound"] == "estimate" and s["how"].startswith(
        "the copies' host time, 20.0 us, less the same bytes at the pinned bandwidth measured here, 419.43 GB/s"),
          f"saving {s}")
    check(with_pinned(100_000)["saving"]["ns"] == 0, "a saving although pinned copies are slower")


@test
def graph_saving_keeps_one_launch_a_step(tmp):
    """Launch-bound: folding a step's launches into one graph launch saves
    at most the launch calls' host time less one launch a step: 4 phases
    of 1000 launches of 4 us each (16 ms). Four phases are too few to
    repeat: the report's step is 16 of the launches (249 steps), and the
    bound, over fewer steps than that, is over the step's steps
    (docs/commands.md, Savings), which keep 249 x 4 us (4 x 4 us, one a
    phase, said a launch a step too many)."""
    ev = []
    for step in range(4):
        t0 = 1_000_000 + step * 10_000_000
        ev.append(phase_event(True, t0, "step", step))
        for i in range(1000):
            t = t0 + 1000 + i * 5000
            ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 4000,
                       "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1],
                       "stream": 0, "corr": step * 1000 + i + 1})
        ev.append(phase_event(False, t0 + 6_000_000, "step", step))
    o = report_json(write_jsonl(os.path.join(tmp, "launches.jsonl"), ev))
    d = [x for x in o["diagnoses"] if x["id"] == "launch_bound"]
    check(o["processes"][0]["step"]["steps"] == 249, f"step {o['processes'][0]['step']}")
    check(len(d) == 1 and d[0]["saving"]["ns"] == 16_000_000 - 249 * 4000 and d[0]["saving"]["steps"] == 249 and
          d[0]["saving"]["how"] == "the 4000 launch calls' host time, 16.0 ms, less one launch (4.0 us) per step",
          f"launch-bound saving {d}")


def xla_range(begin, t, name):
    """An NVTX range's push or pop at t, as XLA's are recorded."""
    return {"kind": "phase_begin" if begin else "phase_end", "api": "nvtxRangePush" if begin else "nvtxRangePop",
            "tid": 7, "start_ns": t, "end_ns": t, "result": 0, "device": 0, "name": name}


def alloc_mib(t, addr):
    """A 1 MiB device allocation at t."""
    return {"kind": "alloc", "api": "cuMemAlloc_v2", "tid": 7, "start_ns": t, "end_ns": t + 1000, "result": 0,
            "bytes": 1 << 20, "mem": "device", "addr": addr, "device": 0}


@test
def jax_runs_of_the_jitted_step_are_the_phases(tmp):
    """XLA's NVTX ranges of a JAX process: each run of a jitted function
    ("XlaModule:#hlo_module=jit_step,program_id=9#") is a phase named after
    it, and its compilations ("XlaCompile:#module=...#") the phase "XLA
    compile"; the step is the jitted function run most often (jit_step, 12
    runs), not jit__normal, whose 4 runs came first; a leak of 1 MiB a run
    is growth per jit_step; compilation over 20% of the run is said, with
    the step's runs, in JAX's terms: over 23 ms from the first to the last
    (a run every 2 ms), 12 ms inside their ranges (which had been said
    as the loop's time)."""
    ms = 1_000_000
    ev = [xla_range(True, 1 * ms, "XlaCompile:#module=jit__normal#"), xla_range(False, 101 * ms, "XlaCompile:#module=jit__normal#")]
    t = 110 * ms
    for k in range(4):
        name = f"XlaModule:#hlo_module=jit__normal,program_id={k}#"
        ev += [xla_range(True, t, name), xla_range(False, t + ms, name)]
        t += 2 * ms
    ev += [xla_range(True, t, "XlaCompile:#module=jit_step#"), xla_range(False, t + 200 * ms, "XlaCompile:#module=jit_step#")]
    t += 201 * ms
    for k in range(12):
        name = "XlaModule:#prefix=args[0],hlo_module=jit_step,program_id=9#"
        ev += [xla_range(True, t, name), alloc_mib(t + 1000, (k + 1) << 24), xla_range(False, t + ms, name)]
        t += 2 * ms
    o = report_json(write_jsonl(os.path.join(tmp, "jax.jsonl"), ev))
    ph = {p["name"]: (p["count"], p["wall_ns"], bool(p.get("library"))) for p in o["phases"][1:]}
    check(ph == {"XLA compile": (2, 300 * ms, False),
                 "jit__normal": (4, 4 * ms, False), "jit_step": (12, 12 * ms, False)}, f"phases {ph}")
    check(o["processes"][0]["framework"] == "JAX", o["processes"][0].get("framework"))
    d = {x["id"]: x for x in o["diagnoses"]}
    share = round(100 * 300 * ms / o["duration_ns"])
    check(d["xla_compile"]["text"].startswith(
        f"XLA compiled 2 times for 300.0 ms, {share}% of the run; the step, jit_step, then ran 12 times in the 23.0 ms "
        "from its first run to its last, 12.0 ms of it inside its ranges.\n"
        "Compile less: keep shapes, dtypes and static arguments the same") and
          d["xla_compile"]["saving"] == {"ns": 300 * ms, "steps": 0, "per_step_ns": 0, "bound": "upper",
                                         "how": "the compilations' time, which a run that finds its programs in "
                                                "the persistent cache does not spend"}, f"{d.get('xla_compile')}")
    check(d["memory_growth"]["text"].startswith("Device memory grows every jit_step phase and is never returned: "
                                                "1.0 MiB more per jit_step phase over "), d["memory_growth"]["text"])


@test
def the_replayed_window_spans_2_s_in_the_later_half_of_the_steps(tmp):
    """Steps of one phase, each a 5 us launch of a 5 us kernel, replayed
    (docs/design.md#replay) over the last 40 steps, or more until they
    span 2 s while they are the later half of the steps, 32768 at most.
    Each replayed step is its length less the launch's tracing cost (4 us
    a GPU record, capped at half the 5 us call: 2.5 us).
    * 400 steps of 300 us (120 ms), then 600 of 100 us (60 ms): 999
      whole steps. The half rule stops the window at 499 steps, all of
      them of the fast part, 97,500 ns a step; reaching 2 s back would
      have taken in every slow step.
    * 4000 steps of 200 us (0.8 s): the later half, 1999 of them.
    * 25000 steps of 200 us (5 s): 2 s is 10,000 of them, fewer than half.
    * 70000 steps of 20 us: 2 s is all of them, half is 34,999: the cap,
      32768."""
    def steps(n, step_ns, warm=0):
        ev = kernel_steps([3 * step_ns] * warm + [step_ns] * (n - warm), gpu=(7000, 12_000))
        path = write_jsonl(os.path.join(tmp, f"w{n}.jsonl"), ev, timing="cupti")
        s = report_json(path)["processes"][0]["step"]
        return s["steps"], s["replayed_steps"], s["step_ns"], s["replayed_step_ns"]
    got = steps(1000, 100_000, warm=400)
    check(got == (999, 499, 100_000, 97_500), f"after a slow start: {got}")
    got = steps(4000, 200_000)
    check(got == (3999, 1999, 200_000, 197_500), f"the later half: {got}")
    got = steps(25000, 200_000)
    check(got == (24999, 10000, 200_000, 197_500), f"2 s of steps: {got}")
    got = steps(70000, 20_000)
    check(got == (69999, 32768, 20_000, 17_500), f"the cap: {got}")


def epochs(tmp, times):
    """A C loop, no GPU records, in 4 occurrences of phase 'epoch', each
    256 launches of kernel k, times(epoch) = (a launch's ns, from one
    launch to the next): the trace's path and report. Four phase begins
    are too few to repeat, so the step must be the launcher's 16 launches,
    63 steps of 160 us."""
    ev, t = [], 1_000_000
    for e in range(4):
        d, every = times(e)
        ev.append(phase_event(True, t, "epoch", e))
        for _ in range(256):
            ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + d,
                       "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0})
            t += every
        ev.append(phase_event(False, t, "epoch", e))
    path = write_jsonl(os.path.join(tmp, "epochs.jsonl"), ev)
    o = report_json(path)
    step = o["processes"][0]["step"]
    check(step["found"] and step["steps"] == 63 and step["step_ns"] == 160_000 and step["gpu_ns"] == 0 and
          step["launches"] == 16, f"step {step}")
    return path, o


@test
def a_bound_over_fewer_steps_than_the_steps_is_cut_in_all(tmp):
    """A bound counted over fewer steps than the step's (docs/commands.md,
    Savings): a C loop, no GPU records, in 4 occurrences of phase 'epoch'
    (the bound's steps), each 256 kernel launches back to back, 30 us
    each in the first epoch, 10 us after. Four phase begins are too few to
    repeat, so the step is the launcher's: 16 launches (no wait: grouped),
    63 whole steps, the last 40 of 160 us. launch_bound's bound, the
    launches' 15.36 ms less one launch (15 us) for each of the 63 steps,
    14.4 ms, is more than 63 steps of 160 us give back (no GPU work; the
    steady steps' own launches take all of it): it is cut in all to 63 x
    160,000 = 10,080,000 ns, and is then over the step's 63 steps: 160,000
    ns a step, the step's own time. Cut per step
    of its own instead (4 x 160 us), it mixed the two units; cut in all
    but kept over its 4 steps, it said "2.5 ms a step" of a 160 us step
    (and 1.5 ms a step of a 100 us one when the 4 phases were a warm-up
    before the loop)."""
    path, o = epochs(tmp, lambda e: (30_000, 30_000) if e == 0 else (10_000, 10_000))
    d = o["diagnoses"]
    check(len(d) == 1 and d[0]["id"] == "launch_bound" and d[0]["saving"] == {
        "ns": 63 * 160_000, "steps": 63, "per_step_ns": 160_000, "bound": "upper",
        "how": "the 1024 launch calls' host time, 15.4 ms, less one launch (15.0 us) per step; at most the "
               "steady steps' own, 160.0 us a step"}, f"diagnoses {d}")
    text = report_text(path)
    check("Saves up to 160.0 us a step (10.1 ms over 63 steps): the 1024 launch calls' host time, 15.4 ms, less "
          "one launch (15.0 us) per step; at most the steady steps' own, 160.0 us a step."
          in " ".join(text.split()), text)


@test
def a_bound_over_fewer_steps_than_the_steps_is_over_them_uncut(tmp):
    """A bound over fewer steps than the step's that needs no cut is over
    the step's steps all the same (docs/commands.md, Savings): a C loop,
    no GPU records, in 4 occurrences of phase 'epoch', each 256 kernel
    launches of 5 us, 5 us apart. The step is the launcher's 16 launches,
    63 steps of 160 us. launch_bound's bound, the launches' 5.12 ms less
    one launch (5 us) for each of the 63 steps it is over, 4,805,000 ns, is
    under 63 steps of 160 us: not cut, 76,269 ns a step. Kept over its 4
    epochs, it said "1.3 ms a step" of a 160 us step; less one launch an
    epoch but over 63 steps, 80,952 ns (a launch a step too many)."""
    path, o = epochs(tmp, lambda e: (5_000, 10_000))
    d = o["diagnoses"]
    check(len(d) == 1 and d[0]["id"] == "launch_bound" and d[0]["saving"] == {
        "ns": 4_805_000, "steps": 63, "per_step_ns": 76_269, "bound": "upper",
        "how": "the 1024 launch calls' host time, 5.1 ms, less one launch (5.0 us) per step"}, f"diagnoses {d}")
    text = report_text(path)
    check("Saves up to 76.3 us a step (4.8 ms over 63 steps): the 1024 launch calls' host time, 5.1 ms, less "
          "one launch (5.0 us) per step." in " ".join(text.split()), text)


def graph_loop(tmp, launch_ns, period_ns, kernel_ns, data_ns=0, xla=True, torch=False, eager=()):
    """A JAX loop of 50 steps of period_ns, each one graph launch of
    launch_ns under CUPTI at the step's start, its 2 kernels of kernel_ns
    back to back 500 ns after it; with data_ns, a phase "data" from
    data_ns before the launch to its end instead of XLA's module (which
    then runs once, before the loop); without xla, a C program's loop of
    phases "step" (with torch, PyTorch's: its kernels at::native's); the
    steps in eager launch a kernel (cuLaunchKernel) instead of the graph."""
    from test_advice import report_json_of
    xla_name = "XlaModule:#hlo_module=jit_step,program_id=9#"
    ev = [{"kind": k, "api": a, "tid": 7, "start_ns": t, "end_ns": t, "result": 0, "device": 0, "name": xla_name}
          for k, a, t in (("phase_begin", "nvtxRangePush", 400_000), ("phase_end", "nvtxRangePop", 500_000))
          if data_ns and xla]
    name = "data" if data_ns else xla_name if xla else "step"
    for k in range(50):
        t = 1_000_000 + k * period_ns
        ev += [{"kind": "phase_begin", "api": "nvtxRangePush", "tid": 7, "start_ns": t - data_ns,
                "end_ns": t - data_ns, "result": 0, "device": 0, "name": name},
               {"kind": "launch", "api": "cuGraphLaunch", "tid": 7, "start_ns": t, "end_ns": t + launch_ns,
                "result": 0, "device": 0, "name": "(graph)", "graph": 17476, "stream": 0, "corr": k + 1}
               if k not in eager else
               {"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + launch_ns,
                "result": 0, "device": 0, "name": "void at::native::kernel_0", "stream": 0, "corr": k + 1}]
        g = t + launch_ns + 500
        ev += [{"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": g + i * kernel_ns,
                "end_ns": g + (i + 1) * kernel_ns, "result": 0, "device": 0, "stream": 7, "corr": k + 1,
                "name": f"void at::native::kernel_{i}" if torch else f"fusion_{i}",
                **({} if k in eager else {"graph_id": 5})} for i in range(2)]
        ev.append({"kind": "phase_end", "api": "nvtxRangePop", "tid": 7, "start_ns": t + launch_ns,
                   "end_ns": t + launch_ns, "result": 0, "device": 0, "name": name})
    return report_json_of(write_jsonl(os.path.join(tmp, f"jax-{launch_ns}.jsonl"), ev, timing="cupti"))


@test
def cuptis_part_before_a_graph_launch_is_no_more_than_the_gap(tmp):
    """graph_loop: steps of 205 us whose graph launch took 200 us under
    CUPTI, 5 us after the last one ended, its 2 kernels 10 us each.
    Replayed, the launch keeps 12%, 24,000 ns, and the gap before it
    would lose 30% of the 176,000 the launch lost, 52,800 ns, more than
    its 5,000: it loses all of it, no more. The host sets the pace at
    24,000 ns a step, the last step's kernels 20,000 after it: (40 x
    24,000 + 20,000) / 40 = 24,500 ns a step. Ten steps a dispatch:
    2,400 ns, then the GPU's 40 x 20,000, 20,060 a step; it saves 4,440
    ns a step. Then a small graph: a 10 us launch in 15 us steps, its
    kernels 1 us: 12% would be 1,200 ns, under a launch's base, 2,200,
    which it keeps; the gap loses 30% of 7,800, 2,340 of its 5,000. The
    host: 2,660 + 2,200 = 4,860 ns a step, but the window's first, with
    no gap before its launch, and its 5,000 after the last launch (the
    kernels end within it): (2,200 + 39 x 4,860 + 5,000) / 40 = 4,918.5
    ns a step."""
    o = graph_loop(tmp, 200_000, 205_000, 10_000)
    step = o["processes"][0]["step"]
    check(step["step_ns"] == 205_000 and step["replayed_step_ns"] == 24_500 and step["gpu_ns"] == 20_000 and
          step["replayed_savings_ns"]["fuse"] == 4_440, f"step {step}")
    d = o["diagnoses"]
    check(d and d[0]["id"] == "host_bound" and d[0]["saving"]["per_step_ns"] == 4_440, f"diagnoses {d}")
    step = graph_loop(tmp, 10_000, 15_000, 1_000)["processes"][0]["step"]
    check(step["step_ns"] == 15_000 and step["replayed_step_ns"] == 4_918, f"a small graph: step {step}")
    # Its launch in a data phase begun 3,000 ns before it: loader workers
    # take the gap's part in the phase, less CUPTI's part already taken
    # off, 3,000 - 2,340 = 660 ns a step (taken twice, it was 2,610).
    step = graph_loop(tmp, 10_000, 15_000, 1_000, data_ns=3_000)["processes"][0]["step"]
    check(step["replayed_step_ns"] == 4_860 and step["replayed_savings_ns"]["workers"] == 660, f"data: step {step}")
    # Not XLA's (a C program's graph): the launch takes what one takes
    # without CUPTI, 2,200 + 2 x 200 = 2,600 ns, the gap stays: (2,600 +
    # 39 x 7,600 + 5,000) / 40 = 7,600 ns a step.
    step = graph_loop(tmp, 10_000, 15_000, 1_000, xla=False)["processes"][0]["step"]
    check(step["replayed_step_ns"] == 7_600, f"not XLA's: step {step}")


@test
def a_host_bound_step_that_replays_a_graph_is_not_told_to_capture_one(tmp):
    """graph_loop, PyTorch's (torch.compile's reduce-overhead): each 15 us
    step one graph launch of 10 us and 2 us of kernels, the GPU idle 85%
    of the loop waiting for the host. host_bound says the step already
    replays a graph, and names no CUDA graph nor reduce-overhead as the
    change; the step counts 1 graph launch and no kernel launch. One step
    of the window eager (1 of 40) still counts a graph a step (rounded).
    Every step eager, the step is told to take Python out with graphs; the
    C program's loop keeps the advice to launch less."""
    graphed = "\nThe step already replays a CUDA graph: what is left is the host's work around it. Give the GPU " \
              "more per step (a larger batch), bring more of the step into the graph"
    for eager in ((), (45,)):
        o = graph_loop(tmp, 10_000, 15_000, 1_000, xla=False, torch=True, eager=eager)
        step = o["processes"][0]["step"]
        check(step["graph_launches"] == 1 and step["launches"] == 0, f"eager {eager}: step {step}")
        d = [x for x in o["diagnoses"] if x["id"] == "host_bound"]
        check(len(d) == 1 and graphed in d[0]["text"] and "reduce-overhead" not in d[0]["text"]
              and "CUDA graphs" not in d[0]["text"], f"eager {eager}: diagnoses {d}")
    o = graph_loop(tmp, 10_000, 15_000, 1_000, xla=False, torch=True, eager=range(50))
    step = o["processes"][0]["step"]
    d = [x for x in o["diagnoses"] if x["id"] == "host_bound"]
    check(step["graph_launches"] == 0 and step["launches"] == 1 and len(d) == 1 and "\nGive the GPU more per step "
          "(a larger batch), take Python out of the step (torch.compile, CUDA graphs with mode=\"reduce-overhead\")"
          in d[0]["text"], f"eager: {step} {d}")
    c = [x for x in graph_loop(tmp, 10_000, 15_000, 1_000, xla=False)["diagnoses"] if x["id"] == "host_bound"]
    check(len(c) == 1 and "\nGive the GPU more per launch (larger batches, fused kernels)" in c[0]["text"],
          f"the C program's: {c}")


@test
def torch_loader_workers_are_marked(tmp):
    """A DataLoader with 2 workers iterated twice, one with none, a subclass
    whose __init__ (its self named `me`) calls super's, wrapped as
    Lightning does: the helper marks each pass with its workers (a data
    phase then waits for them: loader_behind) and where it was made (past
    the __init__s and their wrappers), which the data diagnoses name.
    DataLoader's signature is still its own."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    code = ("import functools, inspect, torch\n"
            "data = torch.utils.data.TensorDataset(torch.randn(32, 8))\n"
            "class Mine(torch.utils.data.DataLoader):\n"
            "    def __init__(me, d, **kw):\n"
            "        super().__init__(d, batch_size=8, **kw)\n"
            "def wrap(init):\n"
            "    @functools.wraps(init)\n"
            "    def wrapper(obj, *a, **kw):\n"
            "        init(obj, *a, **kw)\n"
            "    return wrapper\n"
            "Mine.__init__ = wrap(Mine.__init__)\n"
            "for w in (2, 2, 0):\n"
            "    for (x,) in torch.utils.data.DataLoader(data, batch_size=8, num_workers=w):\n"
            "        pass\n"
            "for (x,) in Mine(data):\n"
            "    pass\n"
            "print(list(inspect.signature(torch.utils.data.DataLoader).parameters)[:2])\n")
    p = run_py(["-c", code], tmp)
    check(p.returncode == 0 and p.stdout == "['dataset', 'batch_size']\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-300:]}")
    _, ev = only_trace(tmp)
    marks = [e["name"] for e in ev if e["kind"] == "mark"]
    at = " made at <module> (<string>:%d)"
    check(marks == ["DataLoader num_workers=2" + at % 13] * 2 + ["DataLoader num_workers=0" + at % 13,
                                                                "DataLoader num_workers=0" + at % 15], f"marks {marks}")


@test
def malformed_loader_marks_are_passed_over(tmp):
    """test_loaders.py's starved loader, its one well-formed mark (no
    workers, made at train.py:12) followed, before the loop, by marks the
    helper never writes: no number, a number run into letters, -1, 99,999
    workers, "made at" with nothing after it, a site of 300 characters.
    Each is left out (else, iterated last, it would be the one named): the
    diagnosis names train.py:12, data_starvation first."""
    from test_loaders import loader_steps
    bad = ["DataLoader num_workers=0 made at <module> (/w/train.py:12)",
           "DataLoader num_workers=", "DataLoader num_workers=5x", "DataLoader num_workers=-1 made at f (/w/a.py:1)",
           "DataLoader num_workers=99999 made at f (/w/a.py:2)", "DataLoader num_workers=0 made at ",
           "DataLoader num_workers=0 made at f (/w/" + "x" * 300 + ".py:3)"]
    ev = [{"kind": "mark", "api": "gpuspy_mark", "tid": 7, "start_ns": 100_000 + 1000 * i, "end_ns": 100_000 + 1000 * i,
           "result": 0, "device": 0, "name": n} for i, n in enumerate(bad)] + loader_steps()
    d = report_json(write_jsonl(os.path.join(tmp, "marks.jsonl"), ev, timing="cupti"))["diagnoses"]
    check(d and d[0]["id"] == "data_starvation" and "the GPU waits for data, from the DataLoader made at <module> "
          "(/w/train.py:12).\n" in d[0]["text"], f"{d}")


@test
def a_blocking_copys_time_before_its_gpu_record_is_its_own(tmp):
    """A synchronous 4 MiB copy back from pageable memory on the legacy
    default stream, each 1 ms step: its call from 50 to 500 us; its stream's
    kernel ends at 145 us, another stream's (launched at 10 us, started at
    25) at 425 us, and the copy's GPU record runs from 430 to 490 us. The
    copy waits for the other stream's kernel (the legacy stream's rule),
    then holds the host 70 us of its own: the run replayed as it was keeps
    the step, 986.4 us (1 ms less tracing's cost in the side kernel's
    launch and in the copy, 4.3 us each: 0.3 us for gpuspy's record and 4
    us for CUPTI's of its GPU record, and that kernel's 5 us from launch to
    start, which the replay does not keep). Counting the part before the
    copy's GPU record as waiting for its own stream alone dropped 289.3 us
    (697.1 us). Pinned, the copy back still holds the host until its bytes
    are in (the host reads what it copied), and its GPU work still follows
    the side kernel: pinning saves nothing (-97.1 us, the copy at PCIe
    gen4's 25 GB/s slower than the 60 us it ran; the host running on
    without its bytes had "saved" 433.2 us). With a cudaStreamSynchronize
    after the copy the same, where the program is not PyTorch's. In
    PyTorch's (its phases carry steps), a synchronize of the copy's stream
    right after a host-to-device copy, on its thread, is its blocking
    copy's own (copy_ with non_blocking=False: cudaMemcpyAsync, then
    cudaStreamSynchronize); the advice's non_blocking=True drops it with
    the block: 433.2 us, its 1 us taken as an async call's. After a copy
    back it stays (-97.1 us): the host reads what it copied; and with a
    call of its thread between them (an event wait), it is the program's
    own and stays too (-97.0 us)."""
    from test_report import gpu_record as gpu, host_call as call

    def step_of(sync, torch=False, way="d2h"):
        ev = []
        for k in range(20):
            t, c = 1_000_000 + k * 1_000_000, 3 * k
            ev += [phase_event(True, t, "load", k),
                   call("launch", "cuLaunchKernel", t + 10_000, 10_000, name="side", grid=[1, 1, 1], block=[32, 1, 1],
                        stream=0x22, corr=c + 1),
                   gpu("gpu_kernel", t + 25_000, 400_000, c + 1, 8, name="side"),
                   call("launch", "cuLaunchKernel", t + 30_000, 10_000, name="main", grid=[1, 1, 1], block=[32, 1, 1],
                        stream=0, corr=c + 2),
                   gpu("gpu_kernel", t + 45_000, 100_000, c + 2, 7, name="main"),
                   call("copy", "cudaMemcpyAsync" if torch else "cudaMemcpy", t + 50_000, 450_000, bytes=4 << 20,
                        dir=way, host_mem="pageable", stream=0, corr=c + 3, **{"async": torch}),
                   gpu("gpu_copy", t + 430_000, 60_000, c + 3, 7, bytes=4 << 20, dir=way),
                   phase_event(False, t + 500_000, "load", k), phase_event(True, t + 500_000, "compute", k),
                   phase_event(False, t + 1_000_000, "compute", k)]
            if sync:  # the program waits for the copy's stream after it: a pinned copy then saves nothing
                ev.insert(len(ev) - 3, call("sync", "cudaStreamSynchronize", t + 500_000 + 200 * (sync == "between"),
                                            1_000 - 200 * (sync == "between"), stream=0))
            if sync == "between":  # another call of its thread first: the program's own synchronize
                ev.insert(len(ev) - 4, call("sync", "cudaStreamWaitEvent", t + 500_000, 200, stream=0))
        for e in ev if not torch else []:  # a phase's step is the PyTorch helper's
            e.pop("step", None)
        o = report_json(write_jsonl(os.path.join(tmp, f"copy{sync}{torch}{way}.jsonl"), ev, timing="cupti"))
        check(o["processes"][0]["framework"] == ("PyTorch" if torch else "CUDA"), o["processes"][0]["framework"])
        return o["processes"][0]["step"]
    step, synced, torch_synced = step_of(False), step_of(True), step_of(True, torch=True, way="h2d")
    check(step["what"] == "the cycle of phases load, compute" and step["step_ns"] == 1_000_000 and
          step["replayed_step_ns"] == 986_400 and step["replayed_savings_ns"]["pin"] == -97_072, f"{step}")
    check(synced["replayed_savings_ns"]["pin"] == -97_072, f"{synced}")
    check(torch_synced["replayed_savings_ns"]["pin"] == 433_201, f"{torch_synced}")
    torch_back, torch_own = step_of(True, torch=True), step_of("between", torch=True, way="h2d")
    check(torch_back["replayed_savings_ns"]["pin"] == -97_072, f"{torch_back}")
    check(torch_own["replayed_savings_ns"]["pin"] == -96_972, f"{torch_own}")


@test
def xla_compile_keeps_a_long_step_name_whole(tmp):
    """A jitted step of a 400-character name (its phase keeps the first
    128): xla_compile's sentence of its runs, and the advice after it,
    are whole (the sentence had been cut at 200 bytes, mid-word: "inside
    its r.")."""
    ms, step = 1_000_000, "jit_" + "long" * 99
    ev, t = [xla_range(True, ms, f"XlaCompile:#module={step}#"), xla_range(False, 301 * ms, f"XlaCompile:#module={step}#")], 302 * ms
    for k in range(12):
        name = f"XlaModule:#hlo_module={step},program_id=9#"
        ev += [xla_range(True, t, name), alloc_mib(t + 1000, (k + 1) << 24), xla_range(False, t + ms, name)]
        t += 2 * ms
    d = {x["id"]: x["text"] for x in report_json(write_jsonl(os.path.join(tmp, "jax.jsonl"), ev))["diagnoses"]}
    check("the step, jit_longlonglong" in d.get("xla_compile", "") and ", then ran 12 times in the 23.0 ms from its "
          "first run to its last, 12.0 ms of it inside its ranges.\nCompile less: keep shapes" in d["xla_compile"] and
          d["xla_compile"].endswith(")."), f"{d.get('xla_compile')!r}")
