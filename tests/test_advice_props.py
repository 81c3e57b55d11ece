# SPDX-License-Identifier: MIT
"""The report's advice checked against its promises on many random but
plausible traces (a seeded generator, so every run makes the same ones):
host threads and streams, steps of launches, copies (pageable, pinned,
synchronous, a scalar back), waits (a stream's, the context's, an
event's), allocations, memsets and phases, their GPU records placed by
CUDA's ordering rules on overlapping streams, warm-up steps that differ,
jitter, runs of 1 or 2 steps and runs with no repetition, empty steps,
zero-length events and huge durations. Each is reported with --json and
as text, and every report must keep what docs/commands.md and
docs/design.md promise: a saving a step is never negative nor more than
the step (nor, for host- and launch-bound bounds, than the step beyond its
GPU work), a replayed one never more than the replayed step less the
kernels' work that stays; a run with no step gives totals only; the text
and the JSON say the same diagnoses in the same order with the same
figures; no number is NaN, infinite or negative where it is a time; the
phases' wall times add up to the run."""
import json
import math
import os
import random
import re
import subprocess

from harness import GPUSPY, ROOT, SANITIZED, TIMEOUT, Fail, check, test
from test_diagnoses import fmt_ns

KERNELS = ["gemm", "void at::native::elementwise_kernel<128, 4>(int)", "softmax", "layernorm_fwd", "reduce",
           "fusion_1", "attn", "adam_step"]
PHASE_SETS = [["data", "forward", "backward", "optimizer"], ["forward", "backward", "optimizer"], ["step"],
              ["train"], ["XlaModule:#hlo_module=jit_step,program_id=9#"], ["data", "forward"]]
MIB = 1 << 20
FAULTS = []  # the failing trace of the last check, for a message


class Tl:
    """A process's timeline being made: the host clocks of its threads,
    each CUPTI stream's free time, the events so far."""

    def __init__(self, rng, cupti):
        self.rng, self.cupti, self.ev, self.corr = rng, cupti, [], 0
        self.free = {}  # CUPTI stream id -> when its queued work ends
        self.addr = 0x10000000
        self.live = []  # device allocations not yet freed
        self.work = {}  # the main thread's kernels' GPU time on each stream, since the last step began

    def j(self, ns, jitter):
        """ns with jitter (a fraction either way), never negative."""
        return max(0, int(ns * (1 + self.rng.uniform(-jitter, jitter))))

    def gpu(self, kind, api, stream, t, dur, corr, **kw):
        """A GPU record of stream (a call's handle; CUPTI's id is 7 + handle)
        queued at t: it starts when the stream is free."""
        sid = 7 + stream
        st = max(t, self.free.get(sid, 0))
        self.free[sid] = st + dur
        if self.cupti:
            self.ev.append(dict(kind=kind, api=api, tid=200, start_ns=st, end_ns=st + dur, result=0, device=0,
                                stream=sid, corr=corr, **kw))
        return st + dur

    def call(self, tid, h, dur, kind, api, **kw):
        if self.rng.random() < 0.2:  # a call stack taken (walked after the call: in the gap after it)
            kw["stack"] = 1
        self.ev.append(dict(kind=kind, api=api, tid=tid, start_ns=h, end_ns=h + dur, result=0, device=0, **kw))
        return h + dur

    def op(self, tid, h, o, jitter):
        """Op o made by thread tid at host time h: the host time after it."""
        rng, k = self.rng, o[0]
        if k == "host":
            return h + self.j(o[1], jitter)
        if k == "phase":
            self.ev.append(dict(kind="phase_begin" if o[1] else "phase_end",
                                api="nvtxRangePush" if o[1] else "nvtxRangePop", tid=tid, start_ns=h, end_ns=h,
                                result=0, device=0, name=o[2]))
            return h
        self.corr += 1
        c = self.corr
        if k == "launch":
            _, name, stream, kdur, ldur = o
            ld, kd = self.j(ldur, jitter), self.j(kdur, jitter)
            self.work[stream] = self.work.get(stream, 0) + kd
            self.gpu("gpu_kernel", "cupti_kernel", stream, h + min(ld, 5000) + 2000, kd, c, name=name)
            return self.call(tid, h, ld, "launch", "cuLaunchKernel", name=name, grid=[1, 1, 1], block=[32, 1, 1],
                             stream=stream, corr=c)
        if k == "memset":
            _, stream, nbytes = o
            self.gpu("gpu_memset", "cupti_memset", stream, h + 3000, self.j(2000 + nbytes // 500_000, jitter), c,
                     bytes=nbytes)
            return self.call(tid, h, self.j(4000, jitter), "memset", "cuMemsetD8Async", bytes=nbytes,
                             stream=stream, corr=c)
        if k == "copy":
            _, d, mem, nbytes, asyn, stream = o
            gdur = self.j(1000 + nbytes * (40 if mem == "pinned" else 90) // 1_000_000, jitter)
            if asyn and mem == "pinned":
                self.gpu("gpu_copy", "cupti_memcpy", stream, h + 3000, gdur, c, bytes=nbytes, dir=d)
                return self.call(tid, h, self.j(6000, jitter), "copy", "cudaMemcpyAsync", bytes=nbytes, dir=d,
                                 host_mem=mem, stream=stream, corr=c, **{"async": True})
            # Blocking: the copy waits for its stream, the call for the copy.
            end = self.gpu("gpu_copy", "cupti_memcpy", stream, h + 4000, gdur, c, bytes=nbytes, dir=d)
            if not self.cupti:
                end = max(end, h + gdur)
            return self.call(tid, h, end + self.j(3000, jitter) - h, "copy",
                             "cudaMemcpyAsync" if asyn else "cudaMemcpy", bytes=nbytes, dir=d, host_mem=mem,
                             stream=stream, corr=c, **({"async": True} if asyn else {}))
        if k in ("sync", "ctxsync", "eventsync", "free"):
            ends = [self.free.get(7 + o[1], 0)] if k == "sync" else list(self.free.values())
            own = self.j(4000, jitter)
            end = max([h + own] + [e + 2000 for e in ends])
            if k == "free":
                if not self.live:
                    return h
                return self.call(tid, h, end - h, "free", "cudaFree", mem="device", addr=self.live.pop(0),
                                 bytes=0)
            api = {"sync": "cudaStreamSynchronize", "ctxsync": "cuCtxSynchronize",
                   "eventsync": "cudaEventSynchronize"}[k]
            kw = {"stream": o[1]} if k == "sync" else {}
            return self.call(tid, h, end - h, "sync", api, **kw)
        if k == "malloc":
            self.addr += o[1]
            self.live.append(self.addr)
            return self.call(tid, h, self.j(30_000, jitter), "alloc", "cudaMalloc", bytes=o[1], mem="device",
                             addr=self.addr)
        raise AssertionError(k)


def random_step(rng, streams, variant=0):
    """A step's ops (phases aside): a random mix, kernels named so that
    variant (a warm-up step's) differs."""
    ops = []
    if rng.random() < 0.15:  # a launch-bound step: many small kernels, a little dispatch between them
        for i in range(rng.choice([10, 20, 40])):
            ops += [("launch", f"small_{i}_{variant}", streams[0], 3000, 10_000), ("host", 2000)]
    for _ in range(rng.choice([0, 1, 2, 3, 5, 12, 24])):
        r = rng.random()
        s = rng.choice(streams)
        if r < 0.55:
            name = rng.choice(KERNELS) + (f"_warm{variant}" if variant else "")
            kdur = rng.choice([0, 1000, 3000, 20_000, 200_000, 2_000_000])
            ops.append(("launch", name, s, kdur, rng.choice([0, 3000, 8000, 12_000])))
        elif r < 0.62:
            ops.append(("memset", s, rng.choice([4, 4096, 8 * MIB])))
        elif r < 0.75:
            ops.append(("copy", rng.choice(["h2d", "h2d", "d2h"]), rng.choice(["pageable", "pinned"]),
                        rng.choice([4, 4096, MIB, 16 * MIB]), rng.random() < 0.5, s))
        elif r < 0.8:
            ops.append(("copy", "d2h", "pageable", 4, False, s))  # .item()
        elif r < 0.86:
            ops.append(("sync", s))
        elif r < 0.88:
            ops.append((rng.choice(["ctxsync", "eventsync"]), 0))
        elif r < 0.93:
            ops += [("malloc", rng.choice([512, MIB, 64 * MIB])), ("host", 1000), ("free", 0)]
        else:
            ops.append(("host", rng.choice([0, 1000, 50_000, 400_000])))
    if rng.random() < 0.5:
        ops.append(("host", rng.choice([10_000, 100_000, 800_000])))
    return ops


def with_phases(rng, ops, names):
    """ops cut into the phases names, in order (some may be left empty)."""
    if not names:
        return ops
    cuts = sorted(rng.randint(0, len(ops)) for _ in names[1:])
    out, prev = [], 0
    for name, cut in zip(names, cuts + [len(ops)]):
        out += [("phase", True, name)] + ops[prev:cut] + [("host", rng.choice([0, 500]))] + [("phase", False, name)]
        prev = cut
    return out


def make_trace(path, seed):
    """The random trace of seed at path; what was made (for the checks)."""
    rng = random.Random(seed)
    cupti = rng.random() < 0.8
    tl = Tl(rng, cupti)
    streams = rng.choice([[0], [0], [0, 1], [0, 1, 2]])
    shape = rng.choice(["loop"] * 6 + ["norep", "empty", "few"])
    jitter = rng.choice([0, 0, 0.02, 0.1, 0.3])
    names = rng.choice(PHASE_SETS + [[]] * 3)
    nsteps = {"loop": rng.choice([3, 4, 5, 8, 12, 30, 60]), "few": rng.choice([1, 2]),
              "empty": rng.choice([5, 20]), "norep": 0}[shape]
    warm = rng.choice([0, 0, 1, 2, 3]) if shape != "norep" else 0
    step = random_step(rng, streams)
    log_every = rng.choice([0, 0, 0, 5, 10])
    helper = rng.random() < 0.25  # a second thread launching on its own stream
    h, h2, made = 1_000_000, 1_000_000, {"threads": 1 + helper, "cupti": cupti, "steps": nsteps, "warm": warm, "shape": shape,
                                         "kernel_min": None}
    if rng.random() < 0.2:  # a one-time upload first
        h = tl.op(7, h, ("copy", "h2d", rng.choice(["pageable", "pinned"]), 64 * MIB, False, 0), 0)
    work = []  # each step's kernel time on each stream (warm-up steps too)
    for w in range(warm):
        tl.work = {}
        h = run_ops(tl, 7, h, with_phases(rng, random_step(rng, streams, w + 1) + step, names), 0.5)
        work.append(tl.work)
    if shape == "norep":
        for i in range(rng.randint(1, 30)):
            name = f"kernel_{i}"
            h = tl.op(7, h, ("launch", name, rng.choice(streams), rng.randint(0, 100_000), 5000), 0)
            h = tl.op(7, h, ("host", rng.randint(0, 200_000)), 0)
            if rng.random() < 0.3:
                h = tl.op(7, h, ("sync", 0), 0)
    for k in range(nsteps):
        ops = step if shape != "empty" else []
        if log_every and k % log_every == log_every - 1:
            ops = ops + [("copy", "d2h", "pageable", 4, False, 0), ("host", 30_000)]
        if rng.random() < 0.02:  # a huge duration now and then
            ops = ops + [rng.choice([("host", 20_000_000_000), ("launch", "huge", 0, 5_000_000_000, 5000)])]
        tl.work = {}
        h = run_ops(tl, 7, h, with_phases(random.Random(seed), ops, names), jitter)
        work.append(tl.work)
        if helper:
            h2 = max(h2, h - 200_000)
            h2 = run_ops(tl, 8, h2, [("launch", "helper_k", 3, 50_000, 6000), ("host", 20_000)], jitter)
    # The kernels' work a step that no change takes away, at least: on
    # the stream where the least of it in any step is the most.
    if shape == "loop" and work:
        made["kernel_min"] = max(min(w.get(st, 0) for w in work) for st in streams)
    if rng.random() < 0.3:  # a final synchronize and teardown
        h = tl.op(7, h, ("ctxsync", 0), 0)
    ev = sorted(tl.ev, key=lambda e: e["start_ns"])
    if rng.random() < 0.1 and ev:  # a zero-length event
        e = rng.choice(ev)
        e["end_ns"] = e["start_ns"]
    proc = {"type": "process", "format_version": 2, "pid": 7, "ppid": 1, "host": "vm", "rank": -1,
            "local_rank": -1, "command": "t", "events": len(ev), "dropped": 0, "mode": "drop", "overwritten": 0,
            "clean_exit": True, "state": "exited", "truncated": False, "record_bytes": 0, "used_bytes": 0,
            "threads": 2 if helper else 1, "start_realtime_ns": 1, "start_ns": 1000,
            "gpu_timing": "cupti" if cupti else "none", "device_mem": [80 << 30], "clock": "tsc"}
    if rng.random() < 0.5:
        proc["cpus"] = rng.choice([1, 2, 8])
    if rng.random() < 0.3:
        proc["stacks_taken"], proc["stacks_ns"] = 100, rng.choice([0, 100_000, 5_000_000, 60_000_000])
    lines = [json.dumps(proc), json.dumps({"type": "stack", "id": 1, "frames": ["sync (libcudart.so+0x1)",
                                                                                 "train (loop.py:42)"]})]
    lines += [json.dumps(dict(type="event", **e)) for e in ev]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return made


def run_ops(tl, tid, h, ops, jitter):
    for o in ops:
        h = tl.op(tid, h, o, jitter)
    return h


def saving_sentence(s):
    """tools/report/diag.c's gs_diag_saving, from the JSON's saving."""
    q = "about" if s["bound"] == "estimate" else "up to"
    if s["steps"]:
        return (f"Saves {q} {fmt_ns(s['per_step_ns'])} a step ({fmt_ns(s['ns'])} over {s['steps']} steps): "
                f"{s['how']}.")
    return f"Saves {q} {fmt_ns(s['ns'])} in all: {s['how']}."


def text_diagnoses(text):
    """The text report's diagnoses (and context), each as [first line,
    advice, saving], wrapped lines joined."""
    out, part = [], None
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if l == "Diagnoses"), len(lines))
    for l in lines[start + 1:]:
        if l.startswith("  * "):
            out.append(["", "", ""])
            part = 0
            l = l[4:]
        elif l.startswith("    -> "):
            part = 1
            l = l[7:]
        elif l.startswith("       Saves ") and part is not None:
            part = 2
        elif not l.startswith("    ") or part is None:
            part = None
            continue
        out[-1][part] = (out[-1][part] + " " + l.strip()).strip()
    return out


def numbers(o, path=""):
    """Every number in the JSON o, with its path."""
    if isinstance(o, dict):
        for k, v in o.items():
            yield from numbers(v, f"{path}.{k}")
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from numbers(v, f"{path}[{i}]")
    elif isinstance(o, (int, float)) and not isinstance(o, bool):
        yield path, o


def norm(s):
    return " ".join(s.split())


def check_report(j, text, made):
    """The promises, on one trace's report (j: --json, text: the text)."""
    dur = j["duration_ns"]
    for path, v in numbers(j):
        check(math.isfinite(v), f"{path} = {v}")
        if path.endswith("_ns") and "replayed_savings_ns" not in path:
            check(0 <= v <= 64 * dur + 10**9, f"{path} = {v} (duration {dur})")
    check(not re.search(r"\b(nan|inf)\b|-\d[\d.]* (ns|us|ms|s)\b", text, re.I), "NaN, inf or a negative time in "
          "the text")
    p = j["processes"][0]
    # The phases' wall times: top-level phases (none nest here) and the
    # time no phase covers add up to the run.
    walls = sum(x["wall_ns"] for x in p["phases"])
    check(walls == p["duration_ns"], f"phases' walls {walls} != duration {p['duration_ns']}")
    for x in p["phases"]:
        check(x["gpu_idle_ns"] is None or x["gpu_idle_ns"] <= x["wall_ns"], f"phase {x}")
    step = p["step"]
    diags = j["diagnoses"] + j.get("context", [])
    # Text and JSON: the same diagnoses, in the same order, the same figures.
    td = text_diagnoses(text)
    check(len(td) == len(diags), f"{len(td)} diagnoses in the text, {len(diags)} in the JSON")
    for t, d in zip(td, diags):
        first, _, advice = d["text"].partition("\n")
        check(norm(t[0]) == norm(first) and norm(t[1]) == norm(advice), f"text {t} against JSON {d['text']!r}")
        want = saving_sentence(d["saving"]) if "saving" in d else ""
        check(norm(t[2]) == norm(want), f"text's saving {t[2]!r}, JSON's {want!r}")
    if not step["found"]:
        for d in diags:
            s = d.get("saving")
            check(not s or (s["steps"] == 0 and s["per_step_ns"] == 0), f"no step, yet {d['id']}: {s}")
        # (host_bound's advice, "no host work between a step's launches",
        # is how to write a loop, not a figure a step.)
        check(not re.search(r"(?<![\w/])a step\b(?!'s launches)", norm(text)), "no step, yet the text says 'a step'")
        check("replayed_savings_ns" not in step, f"{step}")
        return
    check(step["steps"] >= 3 and step["replayed_steps"] <= step["steps"], f"{step}")
    check(step["warmup_ns"] == step["steady_from_ns"] and step["warmup_ns"] < dur, f"{step}")
    m = re.match(r"the (\d+) calls", step["what"])
    check(not m or made["threads"] > 1 or step["launches"] <= int(m.group(1)), f"{step}")
    for ch, v in step.get("replayed_savings_ns", {}).items():  # a changed replay is never negative
        check(v <= step["replayed_step_ns"] + 1, f"{ch} saves {v} of a replayed step of {step['replayed_step_ns']}")
    for d in diags:
        s = d.get("saving")
        if not s or not s["steps"]:
            continue
        ps, what = s["per_step_ns"], f"{d['id']}: {s} in a step of {step}"
        check(s["ns"] // s["steps"] == ps, what)
        # A bound over fewer steps than the step's (a phase's few
        # occurrences around a loop of a shorter step) is cut in all.
        n = max(s["steps"], step["steps"]) if s["bound"] == "upper" else s["steps"]
        check(ps >= 0 and s["ns"] <= step["step_ns"] * n, f"saving a step beyond the step: {what}")
        if s["bound"] == "upper" and d["id"] in ("host_bound", "launch_bound"):
            check(s["ns"] <= max(step["step_ns"] - step["gpu_ns"], 0) * n,
                  f"beyond the step's time past its GPU work: {what}")
        if "replayed over the last" in s["how"]:
            check(s["steps"] == step["steps"] and ps in step["replayed_savings_ns"].values(), what)
            # A window of W steps as the generator made them (shifted, at
            # worst) holds W - 1 whole ones: their kernels stay.
            k, w = made["kernel_min"], step["replayed_steps"]
            if k is not None and step["steps"] in (made["steps"] + made["warm"], made["steps"] + made["warm"] - 1,
                                                   made["steps"], made["steps"] - 1):
                stays = k * (w - 1) // w
                check(ps <= step["replayed_step_ns"] - stays + 1, f"saves kernels' work that stays ({stays}): {what}")


def report(path):
    j = subprocess.run([GPUSPY, "report", "--json", path], capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
    t = subprocess.run([GPUSPY, "report", "--color", "never", path], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=ROOT)
    check(j.returncode == 0 and t.returncode == 0, f"report exited {j.returncode}, {t.returncode}: {j.stderr}")
    return json.loads(j.stdout, parse_constant=lambda c: (_ for _ in ()).throw(Fail(f"JSON has {c}"))), t.stdout


def sweep(tmp, seeds):
    """The failures of the seeds' traces: {seed: message}."""
    bad = {}
    for seed in seeds:
        path = os.path.join(tmp, f"t{seed}.jsonl")
        made = make_trace(path, seed)
        try:
            check_report(*report(path), made)
            os.unlink(path)
        except Fail as e:
            bad[seed] = str(e)[:600]
    return bad


@test
def advice_keeps_its_promises_on_random_traces(tmp):
    """400 random traces (seeds 1-400, tests/test_advice_props.py's
    generator) each keep every promise check_report checks; a failing
    seed's trace is left in the test's directory. Under the sanitizers,
    which look for memory errors on the same paths, seeds 1-100 (CI's
    time: 105 s there for 400)."""
    bad = sweep(tmp, range(1, 101 if SANITIZED else 401))
    check(not bad, f"{len(bad)} traces break a promise: " + "\n".join(f"seed {k}: {v}" for k, v in
                                                                       sorted(bad.items())[:5]))


@test
def a_forged_call_end_saves_no_more_than_the_step(tmp):
    """One wait of wait_step_trace's 50 steps (the 46th, in the replayed
    window) forged to end 2^62 ns after it began: no call outlasts the
    window, so the replay stays near the run (its unchanged step within
    10% of the measured 1,025 us, where it took the forged end whole,
    1.2e17 ns a step) and every change saves a step no more than the step; the
    diagnosis's total is its saving a step times the steps, not wrapped."""
    from test_advice import report_json_of, wait_step_trace
    path = wait_step_trace(tmp)
    ev = [json.loads(line) for line in open(path).read().splitlines()]
    syncs = [i for i, e in enumerate(ev) if e.get("api") == "cudaStreamSynchronize"]
    ev[syncs[45]]["end_ns"] = ev[syncs[45]]["start_ns"] + 2 ** 62
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(e) for e in ev) + "\n")
    o = report_json_of(path)
    step = o["processes"][0]["step"]
    check(step["steps"] == 49 and step["step_ns"] == 1_025_000
          and abs(step["replayed_step_ns"] - 1_025_000) < 102_500, f"step {step}")
    saves = step["replayed_savings_ns"]
    check(all(0 <= v <= step["step_ns"] for v in saves.values()), f"{saves}")
    d = o["diagnoses"]
    check(d and d[0]["id"] == "step_waits" and 0 < d[0]["saving"]["per_step_ns"] <= step["step_ns"]
          and d[0]["saving"]["ns"] == d[0]["saving"]["per_step_ns"] * 49, f"diagnoses {d}")


@test
def one_cpu_gets_no_loader_workers_saving(tmp):
    """The starved loader of loader_workers_are_replayed_exactly (3.79 ms
    of loading a 4 ms step, 3.04 ms saved with workers), in a process that
    may use one CPU (the trace's header): no worker can load beside the
    step, so moving the loading to workers saves nothing, and no
    diagnosis tells it to (with 2 CPUs, 201.9 us a step: test_loaders.py)."""
    from test_advice import report_json_of, set_cpus
    from test_loaders import HEAVY, loader_steps
    from test_report import write_jsonl
    path = write_jsonl(os.path.join(tmp, "data.jsonl"), loader_steps(**HEAVY), timing="cupti")
    set_cpus(path, 1)
    o = report_json_of(path)
    step = o["processes"][0]["step"]
    check(step["replayed_savings_ns"]["workers"] == 0, f"{step}")
    check(not any(x["id"] == "data_starvation" for x in o["diagnoses"]), f"{o['diagnoses']}")


@test
def one_forged_pinned_copy_sets_no_bandwidth(tmp):
    """The bandwidth a pinned copy is replayed at is the run's own pinned
    copies' bytes over their time: wait_step_trace with two pinned uploads
    before its loop, 16 MiB in 838,861 ns and 1 MiB forged to take 1 ns,
    gives 17 MiB over 838,862 ns, not the forged record's 1 MiB a
    nanosecond (1.05e15 bytes a second, which made every pinned copy
    free)."""
    from test_advice import report_json_of, wait_step_trace
    path = wait_step_trace(tmp)
    lines = open(path).read().splitlines()
    ev = []
    for k, (size, ns) in enumerate(((16 << 20, 838_861), (1 << 20, 1))):
        t = 100_000 + k * 400_000
        copy = {"type": "event", "result": 0, "bytes": size, "dir": "h2d", "host_mem": "pinned", "device": 0,
                "corr": 1000 + k}
        ev.append(dict(copy, kind="copy", api="cudaMemcpyAsync", tid=7, start_ns=t, end_ns=t + 5_000, stream=0,
                       **{"async": True}))
        ev.append(dict(copy, kind="gpu_copy", api="cupti_memcpy", tid=200, start_ns=t + 10_000,
                       end_ns=t + 10_000 + ns, stream=7))
    head = json.loads(lines[0])
    head["events"] += len(ev)
    with open(path, "w") as f:
        f.write("\n".join([json.dumps(head)] + [json.dumps(e) for e in ev] + lines[1:]) + "\n")
    step = report_json_of(path)["processes"][0]["step"]
    check(step["pinned_bytes_per_s"] == (17 << 20) * 1e9 / 838_862, f"{step}")


@test
def fused_steps_still_copy_their_data(tmp):
    """jax_loop's loop with a blocking 1 MiB upload each step, after the
    graph launch: a 40 us call whose copy (38 us, on a stream of its own)
    runs beside the kernels. Replayed as it ran, a step is the 32,641 ns
    gap before the launch (ten_jax_steps_a_dispatch_are_replayed_exactly),
    the launch's 2,436, the 1,700 gap after it and the copy untraced,
    40,000 less its record (300) and CUPTI's (4,000): 72,477 ns. With ten
    steps a dispatch the host's own work is a tenth, 3,264 + 243 + 170 ns,
    but the data still moves every step (a dispatch of ten steps copies
    ten steps' data): the copy keeps its 35,700 ns, and the host, not the
    GPU's 30 us, sets the pace: 39,377 ns a step. Divided by ten too, the
    copy gave the GPU's pace, 30.0 us, and 9.3 us a step more saved."""
    from test_advice import jax_loop

    def upload(k, t):
        c = {"result": 0, "device": 0, "bytes": 1 << 20, "dir": "h2d", "corr": 1000 + k}
        return [dict(c, kind="copy", api="cudaMemcpy", tid=7, start_ns=t + 42_000, end_ns=t + 82_000, stream=1,
                     host_mem="pageable"),
                dict(c, kind="gpu_copy", api="cupti_memcpy", tid=200, start_ns=t + 43_000, end_ns=t + 81_000,
                     stream=8)]
    step = jax_loop(tmp, 15_000, extra=upload)["processes"][0]["step"]
    fused = step["replayed_step_ns"] - step["replayed_savings_ns"]["fuse"]
    check(step["step_ns"] == 100_000 and step["replayed_step_ns"] == 72_477 and fused == 39_377,
          f"fused step {fused}: {step}")


@test
def two_devices_default_streams_are_kept_apart(tmp):
    """One thread, 50 steps of 1 ms: an 800 us kernel on device 0's
    default stream, a 10 us kernel on device 1's, and a wait that returns
    when the small kernel ends: a synchronize of device 1's default
    stream, cudaDeviceSynchronize on device 1, or (one device, the two
    kernels on streams 0x100 and 0x200, or 0x100 and the default stream)
    a synchronize of the small kernel's stream made with no current
    device (-1). Both default streams have the handle 0 and
    CUPTI's id 7, each in its own context: keyed without the device, the
    replay queued device 1's kernel after device 0's, and each step's
    wait waited for it (1.77 ms a step replayed, and dropping the wait
    saved 0.76 ms of it); a device's synchronize waited for the other's
    too; a stream's handle named with no device matched no stream, and
    its wait became one for all; a default stream's with no device is the
    one stream of that handle seen. Kept apart, each step replays as it
    ran, within 2%."""
    from test_advice import report_json_of
    from test_report import write_jsonl
    cases = (("stream", (0, 1), (0, 0), dict(api="cudaStreamSynchronize", device=1, stream=0)),
             ("device", (0, 1), (0, 0), dict(api="cudaDeviceSynchronize", device=1)),
             ("handle", (0, 0), (0x100, 0x200), dict(api="cudaStreamSynchronize", device=-1, stream=0x200)),
             ("default", (0, 0), (0x100, 0), dict(api="cudaStreamSynchronize", device=-1, stream=0)))
    for name, devs, handles, sync in cases:
        ev = []
        for k in range(50):
            t = 1_000_000 + k * 1_000_000
            for i, (at, dur) in enumerate(((0, 800_000), (15_000, 10_000))):
                corr, sid = 2 * k + i + 1, 7 + (handles[i] != 0) * (i + 1)
                ev.append(dict(kind="launch", api="cuLaunchKernel", tid=7, start_ns=t + at, end_ns=t + at + 10_000,
                               result=0, device=devs[i], name=f"k{i}", grid=[1, 1, 1], block=[32, 1, 1],
                               stream=handles[i], corr=corr))
                ev.append(dict(kind="gpu_kernel", api="cupti_kernel", tid=200, start_ns=t + at + 15_000,
                               end_ns=t + at + 15_000 + dur, result=0, device=devs[i], stream=sid, corr=corr,
                               name=f"k{i}"))
            ev.append(dict(kind="sync", tid=7, start_ns=t + 26_000, end_ns=t + 45_000, result=0, **sync))
        path = write_jsonl(os.path.join(tmp, f"{name}.jsonl"), ev, timing="cupti")
        step = report_json_of(path)["processes"][0]["step"]
        check(step["found"] and step["step_ns"] == 1_000_000 and
              abs(step["replayed_step_ns"] - 1_000_000) <= 20_000, f"{name}: {step}")


@test
def a_wait_on_work_without_its_record_is_not_dropped(tmp):
    """wait_step_trace's .item() loop (389,880 ns a step saved with the
    waits dropped: a_wait_every_step_is_replayed_exactly) with the GPU
    records of its 21st to 30th kernels missing, as when CUPTI drops a
    buffer: the replay cannot see what those steps' waits wait for, so it
    keeps them (297,765 ns a step saved: a saving missed). Dropped as if
    the GPU had nothing to do, each of those steps saved its whole 600 us
    kernel: 484,362 ns a step, a quarter more than with every record.
    With ten steps a dispatch, such a wait's own part is not divided
    either (it may be the wait): 370,327 ns a step, where every record
    gave 369,360 and the divided wait 507,510."""
    from test_advice import report_json_of, wait_step_trace
    whole = report_json_of(wait_step_trace(tmp))["processes"][0]["step"]["replayed_savings_ns"]["no_wait"]
    path = wait_step_trace(tmp)
    ev = [json.loads(line) for line in open(path).read().splitlines()]
    gone = [i for i, e in enumerate(ev) if e.get("kind") == "gpu_kernel"][20:30]
    ev = [e for i, e in enumerate(ev) if i not in gone]
    ev[0]["events"] -= len(gone)
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(e) for e in ev) + "\n")
    step = report_json_of(path)["processes"][0]["step"]
    check(whole == 389_880 and step["steps"] == 49 and step["replayed_savings_ns"]["no_wait"] == 297_765 and
          step["replayed_savings_ns"]["fuse"] == 370_327, f"{whole}: {step}")


@test
def a_pageable_copy_without_its_record_is_not_pinned(tmp):
    """pinning_a_pageable_copy_is_replayed_exactly's loop (1,310,169 ns a
    step saved by pinning) with the GPU records of its 21st to 30th copies
    missing: those copies' DMA is not seen, so pinning them is not
    replayed (982,591 ns a step: a saving missed). Pinned, each had cost
    a launch and no GPU time at all: 1,478,941 ns a step."""
    from test_advice import pin_steps, report_json_of
    from test_report import write_jsonl
    ev = pin_steps()
    gone = [i for i, e in enumerate(ev) if e["kind"] == "gpu_copy"][20:30]
    ev = [e for i, e in enumerate(ev) if i not in gone]
    step = report_json_of(write_jsonl(os.path.join(tmp, "pin.jsonl"), ev, timing="cupti"))["processes"][0]["step"]
    check(step["steps"] == 49 and step["replayed_savings_ns"]["pin"] == 982_591, f"{step}")


@test
def a_host_function_is_no_lost_record(tmp):
    """wait_step_trace's .item() loop with a cudaLaunchHostFunc after each
    step's launch (1 us after the kernel's call, for 1 us): a host
    function has a correlation id but no GPU record ever, so it leaves no
    stream unknown, and dropping the waits saves the 389,880 ns a step of
    a_wait_every_step_is_replayed_exactly (taken for a lost record, it
    kept every wait: nothing saved)."""
    from test_advice import report_json_of, wait_step_trace
    path = wait_step_trace(tmp)
    ev, out = [json.loads(line) for line in open(path).read().splitlines()], []
    for e in ev:
        out.append(e)
        if e.get("kind") == "launch":
            out.append({k: v for k, v in e.items() if k not in ("name", "grid", "block")})
            out[-1].update(api="cudaLaunchHostFunc", start_ns=e["end_ns"] + 1_000, end_ns=e["end_ns"] + 2_000,
                           corr=1000 + e["corr"])
    out[0]["events"] += len(out) - len(ev)
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(e) for e in out) + "\n")
    step = report_json_of(path)["processes"][0]["step"]
    check(len(out) - len(ev) == 50 and step["replayed_savings_ns"]["no_wait"] == 389_880, f"{step}")


@test
def an_events_wait_covers_every_device(tmp):
    """wait_step_trace's .item() loop, its wait a cudaEventSynchronize
    made while device 1 is current, its kernels on device 0 and the
    records of the 21st to 30th missing: the event's device is not
    recorded, so the wait covers every device's streams, and those steps
    keep their waits (297,765 ns a step saved, as with a stream's wait:
    a_wait_on_work_without_its_record_is_not_dropped). Taken for device
    1's, it covered none of the lost work and dropped them all: 484,362."""
    from test_advice import report_json_of, wait_step_trace
    path = wait_step_trace(tmp)
    ev = [json.loads(line) for line in open(path).read().splitlines()]
    gone = [i for i, e in enumerate(ev) if e.get("kind") == "gpu_kernel"][20:30]
    ev = [e for i, e in enumerate(ev) if i not in gone]
    for e in ev:
        if e.get("api") == "cudaStreamSynchronize":
            e.update(api="cudaEventSynchronize", device=1)
            e.pop("stream")
    ev[0]["events"] -= len(gone)
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(e) for e in ev) + "\n")
    step = report_json_of(path)["processes"][0]["step"]
    check(step["steps"] == 49 and step["replayed_savings_ns"]["no_wait"] == 297_765, f"{step}")


@test
def a_step_on_eighty_streams_waits_for_its_own(tmp):
    """One thread, 50 steps of 1 ms, each on 80 streams: an 800 us kernel
    on the first, a 5 us one on each of the 79 others (a launch every
    2 us), then a synchronize of the last stream, which returns when its
    kernel ends. Past 64 streams the replay's table once gave every later
    stream the first one's slot, and the synchronize waited for the
    800 us kernel: 1,714,250 ns a step replayed. Grown as streams come,
    each step replays as it ran less tracing's cost: 939,200 ns (each
    1.5 us launch untraced at half, its record and CUPTI's 4.3 us being
    more than half of it: 60,000; the synchronize's record, 300; its
    kernel started as its launch returned, 500 sooner)."""
    from test_advice import report_json_of
    from test_report import write_jsonl
    ev = []
    for k in range(50):
        t = 1_000_000 + k * 1_000_000
        for i in range(80):
            corr, at, dur = 80 * k + i + 1, 2_000 * i, 800_000 if i == 0 else 5_000
            ev.append(dict(kind="launch", api="cuLaunchKernel", tid=7, start_ns=t + at, end_ns=t + at + 1_500,
                           result=0, device=0, name=f"k{i}", grid=[1, 1, 1], block=[32, 1, 1],
                           stream=0x1000 + i, corr=corr))
            ev.append(dict(kind="gpu_kernel", api="cupti_kernel", tid=200, start_ns=t + at + 2_000,
                           end_ns=t + at + 2_000 + dur, result=0, device=0, stream=100 + i, corr=corr,
                           name=f"k{i}"))
        ev.append(dict(kind="sync", api="cudaStreamSynchronize", tid=7, start_ns=t + 160_000, end_ns=t + 166_500,
                       result=0, device=0, stream=0x1000 + 79))
    step = report_json_of(write_jsonl(os.path.join(tmp, "streams.jsonl"), ev, timing="cupti"))["processes"][0]["step"]
    check(step["found"] and step["steps"] == 49 and step["step_ns"] == 1_000_000 and
          step["replayed_step_ns"] == 939_200, f"{step}")
