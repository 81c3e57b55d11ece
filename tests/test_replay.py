# SPDX-License-Identifier: MIT
"""The step and its replay at their edges, on made-up traces whose times
are known to the nanosecond: a period a call short of the step; where the
replay cannot be the run (threads that call CUDA at once,
on its one host clock), what a change leaves as it was (the host's own
allocations beside a pool), the data phase with the user's ranges in
it, and a training run's optimizer steps beside its evaluation
(docs/design.md#replay, docs/limitations.md)."""
import os

from harness import check, report_json, report_text, test
from test_report import phase_event, write_jsonl


def call(kind, api, t0, t1, tid=7, device=0, **kw):
    """A call of thread tid from t0 to t1 ns, for write_jsonl."""
    return dict(kind=kind, api=api, tid=tid, start_ns=t0, end_ns=t1, result=0, device=device, **kw)


def two_threads(tmp, name, b_off, period, copy=False):
    """Threads 7 and 8 (b_off ns later), a GPU each, every period ns: a 1 ms
    kernel (10 us after its 5 us call) and a synchronize to 1 us after it;
    with copy, thread 7 then copies from pageable memory."""
    from test_report import gpu_record
    ev, corr = [], 0
    for k in range(60):
        for tid, dev, t in ((7, 0, 1_000_000 + k * period), (8, 1, 1_000_000 + k * period + b_off)):
            corr += 1
            ev += [call("launch", "cuLaunchKernel", t, t + 5_000, tid, dev, name=f"k{dev}", grid=[1, 1, 1],
                        block=[32, 1, 1], stream=0, corr=corr),
                   dict(gpu_record("gpu_kernel", t + 10_000, 1_000_000, corr, name=f"k{dev}"), device=dev),
                   call("sync", "cudaStreamSynchronize", t + 6_000, t + 1_011_000, tid, dev, stream=0)]
            if copy and tid == 7:  # 8 MiB from pageable memory, 300 us on the host, 200 on the GPU
                corr += 1
                ev += [call("copy", "cudaMemcpy", t + 1_100_000, t + 1_400_000, bytes=8 << 20, dir="h2d",
                            host_mem="pageable", stream=0, corr=corr),
                       gpu_record("gpu_copy", t + 1_150_000, 200_000, corr, bytes=8 << 20, dir="h2d")]
    ev.sort(key=lambda e: e["start_ns"])
    return write_jsonl(os.path.join(tmp, name), ev, timing="cupti", threads=2)


@test
def a_replay_slower_than_the_run_gives_no_replayed_saving(tmp):
    """One host clock replays a call made during another thread's wait after
    it (docs/limitations.md): thread 8's kernel a wait late, 2.5 ms a step of
    a 1.5 ms run, dropping the waits "saved" 1.4 ms of a possible 0.5. Over
    the run by a tenth, the replay is not it: said, and no saving replayed
    (a pageable copy's bound from the run's totals, 300 us a step, is kept).
    Thread 8 in turn (every 2.5 ms): the run (2,484,400 ns), a saving."""
    o = report_json(two_threads(tmp, "at-once.jsonl", 10_000, 1_500_000))
    step = o["processes"][0]["step"]
    check(step["step_ns"] == 1_500_000 and step["replayed_step_ns"] > 2_000_000 and not step["replay_is_the_run"]
          and o["diagnoses"] == [], f"step {step}, diagnoses {o['diagnoses']}")
    text = report_text(os.path.join(tmp, "at-once.jsonl"))
    check("the model does not fit it (threads that call CUDA at once?), and the\n  savings below are bounds from "
          "the run's totals, not replays\n" in text and "replayed_savings_ns" not in step, text)
    d = report_json(two_threads(tmp, "copy.jsonl", 10_000, 1_500_000, copy=True))["diagnoses"]
    check([(x["id"], x["saving"]["bound"], x["saving"]["per_step_ns"]) for x in d] == [("pageable_copies", "upper",
                                                                                       300_000)], f"a bound kept: {d}")
    o = report_json(two_threads(tmp, "in-turn.jsonl", 1_012_000, 2_500_000))
    step, waits = o["processes"][0]["step"], [d for d in o["diagnoses"] if d["id"] == "step_waits"]
    check(step["replay_is_the_run"] and step["replayed_step_ns"] == 2_484_400, f"step {step}")
    check(len(waits) == 1 and waits[0]["saving"]["how"].startswith("the waits replayed as not waiting"),
          f"diagnoses {o['diagnoses']}")


@test
def a_pool_is_no_change_for_the_hosts_own_allocations(tmp):
    """--host-alloc's calls (mem "host": malloc 300 us, free 200 us a step) are no device memory a pool
    would serve: no allocation_churn from them (it took their 500 us a step). A cudaMalloc and a
    cudaFree of 200 us each are: 400 us a step, less tracing's cost."""
    from test_report import gpu_record
    for device in (False, True):
        ev = []
        for k in range(60):
            t, host, dev = 1_000_000 + k * 2_000_000, 0x7f0000000000 + k * (16 << 20), 0x10000000 + k * (64 << 20)
            ev += [call("alloc", "malloc", t, t + 300_000, bytes=8 << 20, mem="host", addr=host),
                   call("launch", "cuLaunchKernel", t + 310_000, t + 315_000, name="k", grid=[1, 1, 1],
                        block=[32, 1, 1], stream=0, corr=k + 1),
                   gpu_record("gpu_kernel", t + 320_000, 1_000_000, k + 1),
                   call("sync", "cudaStreamSynchronize", t + 316_000, t + 1_321_000, stream=0),
                   call("free", "free", t + 1_330_000, t + 1_530_000, bytes=8 << 20, mem="host", addr=host)]
            ev += [call("alloc", "cudaMalloc", t + 1_540_000, t + 1_740_000, bytes=64 << 20, mem="device", addr=dev),
                   call("free", "cudaFree", t + 1_750_000, t + 1_950_000, bytes=64 << 20, mem="device",
                        addr=dev)] if device else []
        o = report_json(write_jsonl(os.path.join(tmp, f"host-{device}.jsonl"), ev, timing="cupti"))
        churn = [d for d in o["diagnoses"] if d["id"] == "allocation_churn"]
        check(len(churn) == device, f"device allocations {device}: diagnoses {o['diagnoses']}")
        sv = churn[0]["saving"] if churn else {}
        check(not device or (churn[0]["text"].startswith("48 device allocations") and 390_000 < sv["per_step_ns"]
                             <= 400_000 and sv["how"].startswith("the allocations and frees replayed from a pool")),
              f"{churn}")


@test
def a_range_inside_the_data_phase_is_the_data_phases(tmp):
    """test_loaders' starved loader (loader_steps(**HEAVY): 'data' works
    3.79 ms on the host, then copies its batch; its DataLoader marked)
    with the copy inside a range of the user's, 'augment', from 3.7 ms: its
    calls are still the data phase's, and the workers' change still takes
    the 3.79 ms of loading off each step but the batch's handoff (750 us),
    and the loop is diagnosed starved (when a call took its innermost phase, the change
    took nothing off, and the loop got no diagnosis)."""
    from test_loaders import HANDOFF, HEAVY, loader_steps
    ev = []
    for e in loader_steps(**HEAVY, mark=True):
        if e["kind"] == "copy":
            t = e["start_ns"] - 90_000
            ev += [dict(phase_event(True, t, "augment", 0)), e, dict(phase_event(False, e["end_ns"], "augment", 0))]
        else:
            ev.append(e)
    ev.sort(key=lambda e: e["start_ns"])
    o = report_json(write_jsonl(os.path.join(tmp, "augment.jsonl"), ev, timing="cupti"))
    step = o["processes"][0]["step"]
    check(step["what"] == "PyTorch's optimizer steps: data, forward"
          and step["replayed_savings_ns"]["workers"] == 3_790_000 - HANDOFF,
          f"{step}")
    d = o["diagnoses"]
    check(d and d[0]["id"] == "data_starvation" and d[0]["saving"]["per_step_ns"] == 3_040_000, f"diagnoses {d}")


@test
def a_period_a_call_short_of_the_step_is_not_taken(tmp):
    """A C loop's step: two pinned uploads, 30 kernels (k0-k29), a
    synchronize and 60 us on the host, 194 us in all. The period search
    allows p/16 calls of slack either way (2 for 32), so 32 calls (the second
    upload is 32 before the next step's first) also matched and, the smaller, was taken:
    206 steps of 188.2 us, whose waits fell in fewer than all, and the
    step's wait went unsaid. The length that recurs exactly is the step."""
    from test_report import gpu_record
    ev, t, corr = [], 1_000_000, 0
    for _ in range(200):
        for k in range(32):
            corr += 1
            if k < 2:
                ev += [call("copy", "cudaMemcpyAsync", t, t + 3_000, bytes=4096, dir="h2d", host_mem="pinned",
                            stream=0, corr=corr, **{"async": True}),
                       gpu_record("gpu_copy", t + 1_000, 1_000, corr, bytes=4096, dir="h2d")]
            else:
                ev += [call("launch", "cuLaunchKernel", t, t + 3_000, name=f"k{k - 2}", grid=[1, 1, 1],
                            block=[32, 1, 1], stream=0, corr=corr),
                       gpu_record("gpu_kernel", t + 1_000, 2_000, corr, name=f"k{k - 2}")]
            t += 4_000
        ev.append(call("sync", "cudaStreamSynchronize", t, t + 5_000, stream=0))
        t += 66_000
    o = report_json(write_jsonl(os.path.join(tmp, "c-loop.jsonl"), ev, timing="cupti"))
    step = o["processes"][0]["step"]
    check(step["what"].startswith("the 33 calls that repeat on thread 7") and step["steps"] == 199
          and step["step_ns"] == 194_000, f"{step}")
    check("step_waits" in [d["id"] for d in o["diagnoses"]], f"diagnoses {o['diagnoses']}")


@test
def pinning_is_said_of_the_direction_it_saves_in(tmp):
    """Each 1.2 ms step uploads from pageable memory (20 us), launches 20
    kernels and copies 8 MiB back into pageable memory (1 ms, 300 us of it
    staged before its GPU record). Pinning replays the copies of 1 MiB or
    more: with an upload of 64 KiB, the copy back alone, and its saving,
    644 us a step (the host still waits for the copied bytes: 745 us when
    it ran on without them), is the copy back's diagnosis's (the upload's,
    first, took it, and the copy back's went unsaid). With an upload of 2
    MiB, both ways (a pinned buffer serves both), and the first diagnosis
    says so."""
    from test_report import gpu_record

    def copy(t, d, size, way, off, gd, corr):
        return [call("copy", "cudaMemcpy", t, t + d, bytes=size, dir=way, host_mem="pageable", stream=0, corr=corr),
                gpu_record("gpu_copy", t + off, gd, corr, bytes=size, dir=way)]
    for up in (64 << 10, 2 << 20):
        ev, t, corr = [], 1_000_000, 0
        for _ in range(200):
            ev += copy(t, 20_000, up, "h2d", 5_000, 10_000, corr := corr + 1)
            t += 21_000
            for k in range(20):
                ev += [call("launch", "cuLaunchKernel", t, t + 4_000, name=f"k{k}", grid=[1, 1, 1], block=[32, 1, 1],
                            stream=0, corr=(corr := corr + 1)), gpu_record("gpu_kernel", t + 1_000, 20_000, corr,
                                                                           name=f"k{k}")]
                t += 5_000
            ev += copy(t, 1_000_000, 8 << 20, "d2h", 300_000, 650_000, corr := corr + 1)
            t += 1_101_000
        o = report_json(write_jsonl(os.path.join(tmp, f"both-ways-{up}.jsonl"), ev, timing="cupti"))
        pin = [(x["id"], x["saving"]["per_step_ns"], "the uploads and the copies back alike" in x["saving"]["how"])
               for x in o["diagnoses"] if x["id"].startswith("pageable_copies")]
        saved = o["processes"][0]["step"]["replayed_savings_ns"]["pin"]
        want = [("pageable_copies_d2h", 644_156, False)] if up < 1 << 20 else [("pageable_copies", saved, True)]
        check(pin == want, f"upload of {up} B: {pin}, {saved}")


@test
def a_bound_in_a_program_without_phases_is_a_steps(tmp):
    """CUPTI off, no phases: a C program uploads 20 x 8 MiB from pageable
    memory once (2 ms each), then loops 300 steps of 20 launches and a
    synchronize. Its bounds from the run's totals had no steps to count
    and were left uncut: "saves up to 40.0 ms in all" of an upload the loop
    never makes. Over the step's steps, cut to the steady steps' own copies
    (none), it goes; the same upload every step stays, 2 ms a step."""
    for every in (False, True):
        ev, t = [], 1_000_000
        for k in range(300):
            for _ in range(20 if k == 0 else 1 if every else 0):
                ev.append(call("copy", "cudaMemcpy", t, t + 2_000_000, bytes=8 << 20, dir="h2d", host_mem="pageable",
                               stream=0))
                t += 2_001_000
            for j in range(20):
                ev.append(call("launch", "cuLaunchKernel", t, t + 4_000, name=f"k{j}", grid=[1, 1, 1], block=[32, 1, 1],
                               stream=0))
                t += 5_000
            ev.append(call("sync", "cudaStreamSynchronize", t, t + 80_000, stream=0))
            t += 100_000
        d = report_json(write_jsonl(os.path.join(tmp, f"c-{every}.jsonl"), ev))["diagnoses"]
        pin = [x["saving"]["per_step_ns"] for x in d if x["id"] == "pageable_copies"]
        check(pin == ([2_000_000] if every else []), f"every step {every}: {d}")


@test
def a_wait_on_another_thread_keeps_the_step_whole(tmp):
    """No phases: the main thread (7) launches 6 forward kernels, autograd's
    (8) 12 backward ones, the main thread 4 optimizer kernels and copies the
    loss back (.item()), then 40 us of Python: 225 us a step. Thread 8
    launches most, and its 12 calls repeat with no wait of its own, so a
    period of under 16 launches was grouped into two: 149 steps of 450 us,
    "waits for the GPU 2 times". Another thread's wait in the period keeps
    it whole: 299 steps of 225 us, 22 launches, one wait."""
    from test_report import gpu_record
    ev, t, corr = [], 1_000_000, 0
    for _ in range(300):
        calls = [(7, "fwd", k) for k in range(6)] + [(8, "bwd", k) for k in range(12)]
        for tid, name, k in calls + [(7, "opt", k) for k in range(4)]:
            corr += 1
            ev += [call("launch", "cuLaunchKernel", t, t + 5_000, tid, name=f"{name}{k}", grid=[1, 1, 1],
                        block=[32, 1, 1], stream=0, corr=corr), gpu_record("gpu_kernel", t + 1_000, 9_000, corr,
                                                                           name=f"{name}{k}")]
            t += 8_000
        corr += 1
        ev += [call("copy", "cudaMemcpyAsync", t, t + 8_000, bytes=4, dir="d2h", host_mem="pageable", stream=0,
                    corr=corr), gpu_record("gpu_copy", t + 6_000, 1_000, corr, bytes=4, dir="d2h")]
        t += 49_000
    ev.sort(key=lambda e: e["start_ns"])
    o = report_json(write_jsonl(os.path.join(tmp, "two-threads.jsonl"), ev, timing="cupti", threads=2))
    step, d = o["processes"][0]["step"], o["diagnoses"]
    check(step["steps"] == 299 and step["launches"] == 22 and abs(step["step_ns"] - 225_000) <= 10, f"{step}")
    check(d and d[0]["id"] == "step_waits" and d[0]["text"].startswith("Each step waits for the GPU once"), f"{d}")


class HelperLoop:
    """helper_loop's events as they are made: the time, the correlation
    ids and the optimizer steps done so far."""

    def __init__(self, critic, slow, skips, item_in_forward):
        self.ev, self.t, self.corr, self.step, self.n = [], 1_000_000, 0, 0, 0
        self.critic, self.slow, self.skips, self.item_in_forward = critic, slow, skips, item_in_forward

    def launch(self, name):
        from test_report import gpu_record
        self.corr += 1
        self.ev.extend([call("launch", "cuLaunchKernel", self.t, self.t + 5_000, name=name, grid=[1, 1, 1],
                             block=[32, 1, 1], stream=0, corr=self.corr),
                        gpu_record("gpu_kernel", self.t + 8_000, 30_000, self.corr, name=name)])
        self.t += 20_000

    def phase(self, name, work, item=False):
        from test_report import phase_event
        self.ev.append(phase_event(True, self.t, name, self.step))
        self.t += work
        for _ in range(5 if name in ("forward", "backward") else 2 if name == "optimizer" and not work else 0):
            self.launch(f"{name}{(self.corr + 1) % 5}")
        if item:
            self.wait(self.t, 0)
        self.ev.append(phase_event(False, self.t, name, self.step))

    def wait(self, t0, period):
        """.item(): a copy back of 4 bytes, then the step's time to t0 + period."""
        from test_report import gpu_record
        self.corr += 1
        self.ev.extend([call("copy", "cudaMemcpyAsync", self.t, self.t + 50_000, bytes=4, dir="d2h",
                             host_mem="pageable", stream=0, corr=self.corr),
                        gpu_record("gpu_copy", self.t + 45_000, 2_000, self.corr, bytes=4, dir="d2h")])
        self.t = max(self.t + 50_000, t0 + period)

    def end(self, t0, period):
        """The step's end: its .item(), unless in forward."""
        if self.item_in_forward:
            self.t = max(self.t, t0 + period)
        else:
            self.wait(t0, period)

    def train(self):
        t0, first, fwd = self.t, self.n < self.slow, self.item_in_forward
        self.n += 1
        if self.n - 1 in self.skips:
            self.phase("data", 200_000), self.phase("optimizer", 10_000), self.phase("forward", 0, fwd)
            return self.end(t0, 500_000)
        for _ in range(self.critic or 1):
            self.phase("data", 200_000), self.phase("optimizer", 10_000)
            self.phase("forward", 50_000_000 if first else 0, fwd)
            self.phase("backward", 20_000_000 if first else 0), self.phase("optimizer", 0)
            self.step += 1
        if self.critic:
            self.phase("optimizer", 10_000), self.phase("forward", 0), self.phase("backward", 0)
            self.phase("optimizer", 0)
            self.step += 1
        self.end(t0, (self.critic + 1) * 1_000_000)

    def evaluate(self):
        t0 = self.t
        self.phase("data", 100_000), self.phase("forward", 0, self.item_in_forward)
        self.end(t0, 400_000)

    def replayed(self):
        """A step of a CUDA graph replayed, its count staying: data, 10 launches, .item()."""
        t0 = self.t
        self.phase("data", 200_000)
        for _ in range(10):
            self.launch(f"g{(self.corr + 1) % 10}")
        self.wait(t0, 700_000)

    def user_range(self, name, begin):
        """The user's range: no step count."""
        from test_report import phase_event
        self.ev.append({k: v for k, v in phase_event(begin, self.t, name, 0).items() if k != "step"})


def helper_loop(path, epochs, steps, evals, every, critic=0, wrap=None, tail=0, frozen=0, slow=0, skips=(),
                item_in_forward=False):
    """The PyTorch helper's phases (their step: the optimizer steps done) of
    a training loop, 1 ms a step: data 200 us, zero_grad (an "optimizer"
    phase too), forward and backward launching 5 kernels each, the
    optimizer's 2, then .item(), a 50 us copy back. An evaluation batch,
    400 us: data 100 us, forward, .item(). `evals` batches after the last
    epoch, or after every one, inside the user's range 'validation' where
    wrap is "validation" (each epoch in 'epoch' where it is "epoch");
    `tail` steps more after the last. critic: that many steps of a first
    optimizer, each with its batch, then a second's zero_grad, forward,
    backward and step, all in (critic + 1) ms. frozen: then that many
    steps of 700 us whose count stays (a CUDA graph of the step replayed):
    data, 10 launches, .item(). slow: the first steps compile (forward and
    backward 50 and 20 ms more on the host). skips: the steps (from 0) that
    skip backward and the optimizer's step (a loss not finite), 500 us.
    item_in_forward: the .item() in forward, before backward."""
    loop = HelperLoop(critic, slow, skips, item_in_forward)
    for e in range(epochs):
        if wrap == "epoch":
            loop.user_range("epoch", True)
        for _ in range(steps):
            loop.train()
        if every or e == epochs - 1:
            if wrap == "validation":
                loop.user_range("validation", True)
            for _ in range(evals):
                loop.evaluate()
            if wrap == "validation":
                loop.user_range("validation", False)
        if wrap == "epoch":
            loop.user_range("epoch", False)
    for _ in range(tail):
        loop.train()
    for _ in range(frozen):
        loop.replayed()
    loop.ev.sort(key=lambda x: x["start_ns"])
    return write_jsonl(path, loop.ev, timing="cupti")


@test
def an_evaluation_is_not_taken_for_the_training_step(tmp):
    """The helper's phases, 60 training steps of 1 ms then 30 evaluation
    batches of 400 us: the cycle of phases took the evaluation's (data,
    forward) for the loop, 29 steps of 400 us, the training for warm-up.
    Its step count marks PyTorch's optimizer steps: 60 steps of 1 ms, the
    .item() wait replayed as without the evaluation (61,940 ns a step).
    With 10 evaluation batches after each of 4 epochs of 20 steps, the
    step was the epoch (4 of 22 ms, "waits 26.5 times"): now 80 steps of
    1 ms, the 3 that hold an evaluation left out of the replay, which is
    the last epoch's 19 after its first. Two optimizers taking turns (a
    GAN's) count two steps an iteration: a step of the two."""
    def step_of(path):
        o = report_json(path)
        return o["processes"][0]["step"], [(d["id"], d["saving"]["per_step_ns"]) for d in o["diagnoses"]]
    plain = step_of(helper_loop(os.path.join(tmp, "plain.jsonl"), 1, 60, 0, False))
    check(plain[0]["steps"] == 59 and plain[1] == [("step_waits", 61_940)], f"no evaluation: {plain}")
    step, d = step_of(helper_loop(os.path.join(tmp, "end.jsonl"), 1, 60, 30, False))
    check(step["what"] == "PyTorch's optimizer steps: data, optimizer, forward, backward, optimizer"
          and step["steps"] == 60
          and step["step_ns"] == 1_000_000 and d == plain[1], f"evaluation at the end: {step}, {d}")
    path = helper_loop(os.path.join(tmp, "every.jsonl"), 4, 20, 10, True)
    step, d = step_of(path)
    check((step["steps"], step["step_ns"], step["replayed_steps"], step["steps_with_other_phases"])
          == (80, 1_000_000, 19, 3) and [x for x, _ in d] == ["step_waits"] and abs(d[0][1] - 61_940) < 500,
          f"an evaluation every epoch: {step}, {d}")
    step, d = step_of(helper_loop(os.path.join(tmp, "gan.jsonl"), 1, 60, 0, False, critic=1))
    check((step["steps"], step["step_ns"], step["launches"]) == (59, 2_000_000, 24) and step["what"].startswith(
        "PyTorch's optimizer steps, 2 counted a step: data, optimizer, forward, backward, optimizer, ..."),
        f"two optimizers: {step}")
    text = report_text(path)
    check("  80 steps, steady from the start\n  3 of them with other phases too (an evaluation?) are left out of "
          "the replay\n" in text and "Each step waits for the GPU once," in text, text)


@test
def counted_steps_at_their_edges(tmp):
    """The optimizer steps the helper counted, where the evaluation is in
    the user's range 'validation' (the helper's phases inside it were left
    out: no step at all), where the run stops 3 steps after an evaluation
    (the last stretch of steps without one too short: the one before it is
    replayed), where one comes every 4 steps (no stretch is long enough:
    the window keeps them, replayed but left out of the figures a step,
    and says so), where a critic steps 5 times to a generator's once (no
    group: 985 us "steps", the generator's .item() unsaid), and where the
    count stops while steps go on (a CUDA graph of the step replayed: its
    300 steps of 700 us, not the 12 counted before them)."""
    def step_of(name, *args, **kw):
        o = report_json(helper_loop(os.path.join(tmp, name), *args, **kw))
        return o["processes"][0]["step"], [(d["id"], d["saving"]["per_step_ns"]) for d in o["diagnoses"]]
    step, d = step_of("range.jsonl", 4, 20, 10, True, wrap="validation")
    check((step["steps"], step["step_ns"], step["replayed_steps"]) == (80, 1_000_000, 18) and
          [x for x, _ in d] == ["step_waits"] and abs(d[0][1] - 61_940) < 500, f"in a range: {step} {d}")
    step, d = step_of("range-end.jsonl", 1, 60, 30, False, wrap="validation")
    check((step["steps"], step["step_ns"]) == (60, 1_000_000) and d == [("step_waits", 61_940)], f"{step} {d}")
    step, d = step_of("stopped.jsonl", 4, 20, 10, True, tail=3)
    check((step["steps"], step["step_ns"], step["replayed_steps"], step["steps_with_other_phases"]) ==
          (82, 1_000_000, 19, 4) and d == [("step_waits", 61_768)], f"stopped after an evaluation: {step} {d}")
    check(step["replayed_steps_with_other_phases"] == 0, f"stopped: {step}")
    # An evaluation every 4 steps: no stretch without one holds six. The
    # window keeps them, 13 among its 53 steps (40 without), and says so:
    # replayed in order, but in no figure a step, which are those of the
    # loop without them: the step, its replay, GPU work and launches, and
    # the .item() wait's saving (its waits kept in the 20th and 40th
    # training steps) and several steps a dispatch's, to the nanosecond.
    path = helper_loop(os.path.join(tmp, "often.jsonl"), 20, 4, 10, True)
    plain = report_json(helper_loop(os.path.join(tmp, "plain.jsonl"), 1, 60, 30, False))["processes"][0]["step"]
    o = report_json(path)
    step = o["processes"][0]["step"]
    check((step["steps"], step["step_ns"], step["replayed_steps"], step["steps_with_other_phases"],
           step["replayed_steps_with_other_phases"], step["replayed_step_ns"], step["gpu_ns"], step["launches"])
          == (80, 1_000_000, 40, 0, 13, 990_200, 252_000, 12), f"often: {step}")
    check(plain["replayed_savings_ns"] == step["replayed_savings_ns"] and plain["replayed_steps"] == 40 and
          step["replayed_savings_ns"]["no_wait"] == 61_940 and step["replayed_savings_ns"]["fuse"] == 666_180,
          f"often: {step['replayed_savings_ns']} against {plain['replayed_savings_ns']}")
    check([(x["id"], x["saving"]["per_step_ns"]) for x in o["diagnoses"]] == [("step_waits", 61_940)],
          f"often: {o['diagnoses']}")
    text = report_text(path)
    check("\n  13 more steps among them hold other phases too (an evaluation every few steps?): replayed,\n"
          "  but left out of every figure a step\n" in text and
          "  replayed: 990.2 us a step over 40 among the last 53 (the run: 1.0 ms)" in text, "often: unsaid")
    step, d = step_of("critic.jsonl", 1, 60, 0, False, critic=5)
    check(step["what"].startswith("PyTorch's optimizer steps, 6 counted a step: data, optimizer, forward,") and
          (step["steps"], step["step_ns"]) == (59, 6_000_000) and [x for x, _ in d] == ["step_waits"],
          f"a critic: {step} {d}")
    step, d = step_of("frozen.jsonl", 1, 12, 0, False, frozen=300)
    check((step["what"], step["steps"], step["step_ns"]) == ("the cycle of phases data", 299, 700_000),
          f"a count that stops: {step} {d}")


@test
def counted_steps_beside_compilation_skips_and_evaluations(tmp):
    """More of the helper's counted steps: the first 3 steps compile (70 ms
    more each) before 6 epochs of 20 steps and an evaluation (the replay
    took the longest stretch without one, the first epoch's, compilation
    and all: 8.3 ms "steps"); 60 steps then 160 evaluation batches, longer
    than the training (taken for the loop: 400 us steps); 300 steps of
    which 5% skip backward and the optimizer's step, at random (seed 3:
    grouped "2 counted a step", 2 ms); the .item() inside forward, each
    epoch in the user's range (the phase's sync_stalls dropped for a
    step_waits); an evaluation every 8 steps (grouped 8 a step, its
    waits the step's: 79.5 us an optimizer step, 28% over the loop's)."""
    import random
    def step_of(name, *args, **kw):
        o = report_json(helper_loop(os.path.join(tmp, name), *args, **kw))
        return o["processes"][0]["step"], [(d["id"], d["saving"]["per_step_ns"]) for d in o["diagnoses"]]
    step, d = step_of("compile.jsonl", 6, 20, 10, True, slow=3)
    check((step["steps"], step["step_ns"], step["replayed_steps"]) == (120, 1_000_000, 19) and
          ("step_waits", 61_768) in d, f"compilation first: {step} {d}")
    step, d = step_of("long.jsonl", 1, 60, 160, False)
    check((step["steps"], step["step_ns"]) == (60, 1_000_000) and d == [("step_waits", 61_940)], f"{step} {d}")
    rnd = random.Random(3)
    step, d = step_of("skips.jsonl", 1, 300, 0, False, skips={i for i in range(300) if rnd.random() < 0.05})
    check(step["what"].startswith("PyTorch's optimizer steps: data,") and step["step_ns"] == 1_000_000 and
          d == [("step_waits", 61_577)], f"steps skipped: {step} {d}")
    step, d = step_of("forward.jsonl", 4, 20, 10, True, wrap="epoch", item_in_forward=True)
    check(step["steps"] == 80 and d == [("sync_stalls", 45_189)], f".item() in forward: {step} {d}")
    step, d = step_of("every8.jsonl", 25, 8, 3, True)
    check(step["what"].startswith("PyTorch's optimizer steps: data, optimizer,") and
          (step["steps"], step["step_ns"], step["replayed_steps"]) == (200, 1_000_000, 7) and
          d == [("step_waits", 65_200)], f"an evaluation every 8 steps: {step} {d}")


@test
def a_pinned_copy_back_still_waits_for_its_bytes(tmp):
    """Each step of a C loop runs a 5 ms kernel, then copies 4 MiB back with
    cudaMemcpy into pageable memory (its GPU copy 400 us, after the kernel),
    then works 2 ms on the host, which reads what it copied. Pinned, the
    copy is faster (4 MiB at PCIe gen4's 25 GB/s: 168 us) but the host still
    waits for the kernel and the copy: about 232 us a step (237,928 ns with
    tracing's cost taken off). The replay had the host run on without its
    bytes, overlapping its 2 ms with the next kernel: 2.24 ms "saved", the
    wait's saving, not pinning's."""
    from test_report import gpu_record
    ev, corr = [], 0
    for k in range(50):
        t = 1_000_000 + k * 7_420_000
        ev += [call("launch", "cuLaunchKernel", t, t + 10_000, name="solve", grid=[1, 1, 1], block=[32, 1, 1],
                    stream=0, corr=(corr := corr + 1)), gpu_record("gpu_kernel", t + 10_000, 5_000_000, corr),
               call("copy", "cudaMemcpy", t + 12_000, t + 5_420_000, bytes=4 << 20, dir="d2h", host_mem="pageable",
                    stream=0, corr=(corr := corr + 1)),
               gpu_record("gpu_copy", t + 5_010_000, 400_000, corr, bytes=4 << 20, dir="d2h")]
    o = report_json(write_jsonl(os.path.join(tmp, "back.jsonl"), ev, timing="cupti"))
    d = [(x["id"], x["saving"]["per_step_ns"]) for x in o["diagnoses"]]
    check(d[:1] == [("pageable_copies_d2h", 237_928)] and "(a copy back that blocked still waits for its bytes)"
          in o["diagnoses"][0]["saving"]["how"], f"{o['diagnoses']}")


@test
def a_scalar_copied_back_without_gpu_records_is_a_wait(tmp):
    """CUPTI off: each 1.015 ms step of a C loop launches two kernels, then
    copies 4 bytes back with cudaMemcpy (703 us, nearly all of it waiting
    for the kernels), then works 300 us on the host. It was told to pin
    the copies back, "up to 703 us a step" (4 bytes; the GPU's work stays
    whatever the memory). A copy back under 1 MiB is a wait: dropping it
    overlaps the 300 us after it with the GPU's work, at most the shorter
    of the two, said at its line."""
    ev = []
    for k in range(50):
        t = 1_000_000 + k * 1_015_000
        ev += [call("launch", "cuLaunchKernel", t, t + 5_000, name="kA", grid=[1, 1, 1], block=[32, 1, 1], stream=0),
               call("launch", "cuLaunchKernel", t + 6_000, t + 11_000, name="kB", grid=[1, 1, 1], block=[32, 1, 1],
                    stream=0),
               call("copy", "cudaMemcpy", t + 12_000, t + 715_000, bytes=4, dir="d2h", host_mem="pageable", stream=0,
                    stack=1)]
    frames = {1: ["cudaMemcpy (libcudart.so.12+0x1)", "read_loss (solver.c:88)", "main (solver.c:140)"]}
    o = report_json(write_jsonl(os.path.join(tmp, "scalar.jsonl"), ev, frames=frames))
    d = [(x["id"], x["saving"]["per_step_ns"], x["saving"]["bound"]) for x in o["diagnoses"]]
    check(d == [("step_waits", 300_000, "upper")] and "once at read_loss (solver.c:88)" in o["diagnoses"][0]["text"],
          f"{o['diagnoses']}")


@test
def a_batched_generate_is_told_in_decode_terms(tmp):
    """The PyTorch helper's phases of a batched generate: each batch 'data'
    (200 us) then 'forward' over 40 tokens of 30 small kernels and a 4-byte
    copy back with a synchronize; no backward nor optimizer phase. Its
    phases repeat, which took it for training ("capture the step in a CUDA
    graph"); it is a loop of forwards: the decode step, a static KV cache
    for generate. The saving is the replay's, as before: 2.036 ms a step."""
    from test_report import gpu_record, phase_event
    ev, corr, t = [], 0, 1_000_000
    for _ in range(12):
        ev += [phase_event(True, t, "data", 0), phase_event(False, t + 200_000, "data", 0)]
        t += 200_000
        ev.append(phase_event(True, t, "forward", 0))
        for _ in range(40):
            for i in range(30):
                name = f"elementwise_kernel_{i}"
                ev += [call("launch", "cuLaunchKernel", t + i * 10_000, t + i * 10_000 + 8_000, name=name,
                            grid=[1, 1, 1], block=[32, 1, 1], stream=0, corr=(corr := corr + 1)),
                       gpu_record("gpu_kernel", t + i * 10_000 + 5_000, 4_000, corr, name=name)]
            tc = t + 300_000
            ev += [call("copy", "cudaMemcpyAsync", tc, tc + 10_000, bytes=4, dir="d2h", host_mem="pageable",
                        stream=0, corr=(corr := corr + 1), **{"async": True}),
                   gpu_record("gpu_copy", tc + 6_000, 2_000, corr, bytes=4, dir="d2h"),
                   call("sync", "cudaStreamSynchronize", tc + 10_500, tc + 15_000, stream=0)]
            t += 370_000
        ev.append(phase_event(False, t, "forward", 0))
    ev.sort(key=lambda e: e["start_ns"])
    o = report_json(write_jsonl(os.path.join(tmp, "generate.jsonl"), ev, timing="cupti"))
    d = o["diagnoses"]
    check(d and d[0]["id"] == "launch_bound" and d[0]["saving"]["per_step_ns"] == 2_036_000 and
          "capture the decode step in a CUDA graph" in d[0]["text"] and 'cache_implementation="static"' in d[0]["text"],
          f"{d}")
