# SPDX-License-Identifier: MIT
"""The report: goldens, phases, diagnoses on the programs, GPU timing arithmetic, hostile input, the examples
(the diagnoses on made-up traces, their wording and what each change saves, are test_diagnoses.py's); write_jsonl,
the made-up traces' writer that other topics use."""
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)


def phase_event(begin, t, name, step):
    """A phase_begin or phase_end event of thread 7 at t, for write_jsonl."""
    return {"kind": "phase_begin" if begin else "phase_end", "api": "gpuspy_phase_push" if begin
            else "gpuspy_phase_pop", "tid": 7, "start_ns": t, "end_ns": t, "result": 0, "device": 0,
            "name": name, "step": step}


def host_call(kind, api, t, d, stream=0, **kw):
    """A call of thread 7 from t for d ns, for write_jsonl."""
    return dict(kind=kind, api=api, tid=7, start_ns=t, end_ns=t + d, result=0, device=0, stream=stream, **kw)


def gpu_record(kind, t, d, corr, stream=7, **kw):
    """CUPTI's record of a kernel (gpu_kernel) or a copy run from t for d
    ns on stream, launched by the call of corr, for write_jsonl."""
    return dict(kind=kind, api="cupti_kernel" if kind == "gpu_kernel" else "cupti_memcpy", tid=200, start_ns=t,
                end_ns=t + d, result=0, device=0, stream=stream, corr=corr, **kw)


def kernel_steps(periods, gpu):
    """Phase 'step' once a period (ns, one each): each launches at 1 us a
    5 us kernel call, whose kernel runs gpu = (from, to) ns into the step;
    the phase ends 1 us before the next begins. Events for write_jsonl."""
    ev, t = [], 1_000_000
    for k, period in enumerate(periods):
        ev.append(phase_event(True, t, "step", k))
        ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t + 1000, "end_ns": t + 6000,
                   "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0,
                   "corr": k + 1})
        ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": t + gpu[0],
                   "end_ns": t + gpu[1], "result": 0, "device": 0, "stream": 7, "corr": k + 1, "name": "k"})
        ev.append(phase_event(False, t + period - 1000, "step", k))
        t += period
    return ev


def write_jsonl(path, events, timing="none", threads=1, frames=None):
    """A made-up trace in the dump's JSON Lines form: a process (pid 7)
    with GPU timing `timing`, its stacks ({id: [frames]}) and its events
    (dicts without "type")."""
    proc = {"type": "process", "format_version": 2, "pid": 7, "ppid": 1, "host": "vm", "rank": -1,
            "local_rank": -1, "command": "t", "events": len(events), "dropped": 0, "mode": "drop",
            "overwritten": 0, "clean_exit": True, "state": "exited", "truncated": False, "record_bytes": 0,
            "used_bytes": 0, "threads": threads, "start_realtime_ns": 1, "start_ns": 1000, "gpu_timing": timing,
            "device_mem": [1 << 30], "clock": "tsc"}
    lines = [json.dumps(proc)]
    lines += [json.dumps({"type": "stack", "id": k, "frames": v}) for k, v in (frames or {}).items()]
    lines += [json.dumps(dict(type="event", **e)) for e in events]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


@test
def golden_reports(tmp):
    gold = os.path.join(ROOT, "tests", "golden")
    for f in sorted(os.listdir(gold)):
        if not f.endswith(".jsonl"):
            continue
        rel = os.path.join("tests", "golden", f)
        for args, ext in ((["--color", "never"], ".report.txt"), (["--json"], ".report.json")):
            p = subprocess.run([GPUSPY, "report", *args, rel], capture_output=True, text=True,
                               timeout=TIMEOUT, cwd=ROOT)
            check(p.returncode == 0, f"report {rel} failed: {p.stderr.strip()}")
            want = os.path.join(gold, f[:-len(".jsonl")] + ext)
            got = os.path.join(tmp, "got" + ext)
            with open(got, "w") as g:
                g.write(p.stdout)
            d = subprocess.run(["diff", "-u", want, got], capture_output=True, text=True)
            check(d.returncode == 0, f"{rel} {' '.join(args)} differs from {want}:\n{d.stdout[:3000]}")


def strip_files(o):
    for p in o["processes"]:
        p.pop("file")
    return o


@test
def call_sites_shown_apart(tmp):
    """Sites listed together that share their five innermost frames (a
    library's allocator) each show, after those five and "...", the first
    frame that tells them apart, however deep: of the five listed, two
    sharing 15, and one whose 9 frames all begin those (its hidden four
    still marked "..."); a site whose first five differ from every other's
    shows only them, and so does one that shares 7 frames only with a site
    not listed (the sixth by bytes)."""
    inner = [f"alloc_inner_{k} (lib.c:{k})" for k in range(7)]
    deep = [f"deep_{k} (d.c:{k})" for k in range(15)]
    stacks = {1: inner + ["site_a (a.c:1)", "main (a.c:9)"], 2: inner + ["site_b (b.c:2)", "main (b.c:9)"],
              3: deep + ["x (d.c:99)"], 4: deep + ["y (d.c:98)", "z (d.c:97)"], 6: deep[:9],
              5: ["own_0 (o.c:1)", "main (o.c:2)"]}
    # site k allocates 2^(20+k) bytes: by bytes, 6 5 4 3 2 (top five)
    path = write_jsonl(os.path.join(tmp, "sites.jsonl"), [
        {"kind": "alloc", "api": "cudaMalloc", "tid": 7, "start_ns": 1000 * k, "end_ns": 1000 * k + 100,
         "result": 0, "stack": k, "bytes": 1 << (20 + k), "mem": "device", "addr": 4096 * k, "device": 0}
        for k in stacks], frames=stacks)
    out = report_text(path)
    got = out[out.index("  Allocation sites by bytes\n"):]
    got = got[:got.index("  Allocation sites by count\n")].splitlines()[1:]
    five = lambda frames: [f"      {'from' if k else 'at'} {frames[k]}" for k in range(5)]
    want = (["    1 device, 64 MiB, 100 ns in the calls:"] + five(deep) + ["      ..."]
            + ["    1 device, 32 MiB, 100 ns in the calls:", "      at own_0 (o.c:1)", "      from main (o.c:2)",
               "    1 device, 16 MiB, 100 ns in the calls:"] + five(deep) + ["      ...", "      from y (d.c:98)",
                                                                             "      ..."]
            + ["    1 device, 8.0 MiB, 100 ns in the calls:"] + five(deep) + ["      ...", "      from x (d.c:99)"]
            + ["    1 device, 4.0 MiB, 100 ns in the calls:"] + five(inner) + ["      ..."])
    check(got == want, "allocation sites:\n" + "\n".join(got))


@test
def report_of_jsonl_equals_report_of_gspy(tmp):
    run("prog_train", ["5", "200"], tmp=tmp)
    g = os.path.join(tmp, traces(tmp)[0])
    j = os.path.join(tmp, "trace.jsonl")
    subprocess.run([GPUSPY, "dump", g, "-o", j], check=True, timeout=TIMEOUT)
    a, b = strip_files(report_json(g)), strip_files(report_json(j))
    check(a == b, "report --json differs between the .gspy and its JSON Lines dump")
    p = subprocess.run([GPUSPY, "report", "--color", "never", g], capture_output=True, text=True)
    q = subprocess.run([GPUSPY, "report", "--color", "never", j], capture_output=True, text=True)
    check(p.stdout == q.stdout, "human report differs between .gspy and JSON Lines")
    # A trace without a host name (an edited dump, a damaged header) says so.
    lines = open(j).read().splitlines()
    first = json.loads(lines[0])
    first["host"] = ""
    k = os.path.join(tmp, "nohost.jsonl")
    with open(k, "w") as f:
        f.write("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    r = subprocess.run([GPUSPY, "report", "--color", "never", k], capture_output=True, text=True)
    check(r.returncode == 0 and "\n   host (unknown), " in r.stdout, f"no host name: {r.stdout[:300]!r}")


@test
def report_phases_and_diagnoses(tmp):
    # 200 us of data work a step: the churn's calls stay well above 1% of
    # the time after warm-up (with 2 ms they were at 1%, and the test flaky).
    run("prog_train", ["20", "200"], tmp=tmp, env={"FAKECUDA_DEVICE_MEM_MB": "7"})
    o = report_json(tmp)
    ph = {p["name"]: p for p in o["phases"]}
    check(list(ph) == ["(no phase)", "data", "forward", "backward", "optimizer"], f"phases {list(ph)}")
    for n in ("data", "forward", "backward", "optimizer"):
        check(ph[n]["count"] == 20, f"{n} occurred {ph[n]['count']} times")
    check(ph["forward"]["launch"]["count"] == 200 and ph["backward"]["launch"]["count"] == 240
          and ph["optimizer"]["launch"]["count"] == 20 and ph["data"]["launch"]["count"] == 0,
          "launches attributed to the wrong phases")
    h2d = ph["data"]["copy"]["h2d"]["pageable"]
    check(h2d["count"] == 40 and h2d["bytes"] == 40 << 20, f"data phase copies {h2d}")
    check(ph["optimizer"]["alloc"]["device"]["count"] == 20
          and ph["optimizer"]["alloc"]["device"]["bytes"] == 80 << 20, "optimizer allocations")
    check(ph["optimizer"]["sync"]["count"] == 20, "optimizer syncs")
    check(ph["optimizer"]["copy"]["d2h"]["pageable"]["count"] == 20, "optimizer D2H")
    check(ph["(no phase)"]["alloc"]["device"]["count"] == 2, "allocations outside phases")
    t = o["totals"]
    check(t["launch"]["count"] == 460 and t["free"]["count"] == 22 and
          t["free"]["bytes"] == (80 << 20) + (2 << 20) + (512 << 10), f"totals {t['free']}")
    check(t["launch"]["gpu_ns"] is None, "gpu_ns must be null without GPU timing")
    check(o["memory"]["peak_reserved_bytes"] == (2 << 20) + (512 << 10) + (4 << 20), "peak")
    ids = {d["id"] for d in o["diagnoses"]}
    for want in ("pageable_copies", "data_starvation", "sync_stalls", "allocation_churn", "oom_risk"):
        check(want in ids, f"diagnosis {want} missing from {ids}")
    check("launch_bound" not in ids, "launch_bound on a data-bound loop")
    k = {x["name"]: x["count"] for x in o["kernels"]}
    check(k == {"fwd_gemm": 200, "bwd_gemm": 240, "sgd_update": 20}, f"kernels {k}")


@test
def report_launch_bound(tmp):
    if SANITIZED:
        raise Skip("a timing heuristic: sanitizers change the timing it measures")
    run("prog_threads", ["1", "5000"], tmp=tmp, env={"FAKECUDA_LAUNCH_NS": "3000"})
    o = report_json(tmp)
    ids = {d["id"] for d in o["diagnoses"]}
    check("launch_bound" in ids, f"no launch_bound diagnosis in {ids}")
    check(o["kernels"][0]["count"] == 5000, "kernel count")


@test
def events_busy_bound_is_of_the_time_in_phases(tmp):
    """GPUSPY_CUPTI=events: the GPU section bounds the device's busy time by
    the spans of the phases over the time in phases, and names the spans
    outside phases apart (a start-up interval spans its idle seconds): a
    4.0 ms span outside phases, then two 500 us steps of 300 us spans each,
    give 600.0 us of 1.0 ms in phases, at most 60.0%, and 4.0 ms outside."""
    def span(t, name, ns):
        return {"kind": "gpu_span", "api": "cuda_event_span", "tid": 7, "start_ns": t, "end_ns": t + 100,
                "result": 0, "name": name, "gpu_ns": ns, "device": 0, "stream": 5}
    ev = [span(1000, "", 4_000_000)]
    for step in range(2):
        t = 5_000_000 + step * 500_000
        ev += [phase_event(True, t, "step", step), span(t + 1000, "step", 300_000),
               phase_event(False, t + 500_000, "step", step)]
    path = write_jsonl(os.path.join(tmp, "spans.jsonl"), ev, timing="events")
    o = report_json(path)
    check(o["gpu"]["devices"] == [{"device": 0, "span_ns": 4_600_000, "spans": 3, "phases_span_ns": 600_000,
                                   "phases_spans": 2}], f"gpu {o['gpu']}")
    out = report_text(path)
    want = ("  device 0: GPU spans 600.0 us of 1.0 ms in phases (2 intervals): busy at most 60.0%\n"
            "    outside phases: 4.0 ms (1 interval)\n")
    check(want in out, f"GPU section:\n{out}")


@test
def kernel_names_shortened_from_the_end(tmp):
    """The kernels table shows a kernel without its return type, parameter
    list and the function's own namespaces, and without at::native::,
    std:: and anonymous namespaces in its template arguments, cut at the
    end: two reduce kernels of PyTorch stay apart (MeanOps, func_wrapper),
    a mangled name is demangled, and --json keeps every name whole."""
    mean = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, "
            "float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, "
            "float, float, float>, unsigned int, float, 4, 4>)")
    names = [mean, mean.replace("MeanOps", "func_wrapper_t"),
             "void at::native::(anonymous namespace)::fill_kernel<float>(float*, int)", "fill(float*, int, float)",
             "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_execute_kernel",
             "_Z11coop_kernelPf"]
    ev = [{"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": 1000 * (i + 1),
           "end_ns": 1000 * (i + 1) + 100 * (len(names) - i), "result": 0, "device": 0, "name": n,
           "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0} for i, n in enumerate(names)]
    path = write_jsonl(os.path.join(tmp, "k.jsonl"), ev)
    out = report_text(path)
    rows = [l[2:50].rstrip() for l in out[out.index("Top kernels"):].splitlines()[1:7]]
    check(rows == ["reduce_kernel<512, 1, ReduceOp<float, MeanOps...", "reduce_kernel<512, 1, ReduceOp<float, func_wr...",
                   "fill_kernel<float>", "fill", "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesiz...", "coop_kernel"],
          "kernels table:\n" + "\n".join(rows))
    full = sorted(k["name"] for k in report_json(path)["kernels"])
    check(full == sorted(names[:5] + ["coop_kernel(float*)"]), f"--json names {full}")


@test
def report_several_processes(tmp):
    p = run("prog_fork", tmp=tmp)
    parent, child = [int(x) for x in p.stdout.split()[1::2]]
    o = report_json(tmp)
    pids = [x["pid"] for x in o["processes"]]
    check(sorted(pids) == sorted([parent, child]), f"processes {pids}")
    check(o["totals"]["launch"]["count"] == 5 and o["totals"]["alloc"]["device"]["count"] == 3
          and o["totals"]["memset"]["count"] == 2, "whole-run totals are not the sum")
    h = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True)
    check(f"== pid {parent}" in h.stdout and f"== pid {child}" in h.stdout
          and "== all 2 processes" in h.stdout, "human report lacks a process section")
    check(all(len(l) <= 100 for l in h.stdout.splitlines()), "a line is wider than 100 columns")


@test
def report_killed_process_is_incomplete(tmp):
    run("prog_kill", ["3000"], tmp=tmp, expect_rc=-9)
    o = report_json(tmp)
    check(o["processes"][0]["incomplete"] is True and o["events"] == 3000, "killed process report")
    h = subprocess.run([GPUSPY, "report", tmp], capture_output=True, text=True)
    check("trace incomplete" in h.stdout and "\033[" not in h.stdout, "incomplete not said, or colour off a TTY")


@test
def report_rejects_hostile_input(tmp):
    run("prog_train", ["3", "10"], tmp=tmp, env={"GPUSPY_BUFFER_MB": "1"})
    good = os.path.join(tmp, traces(tmp)[0])
    data = open(good, "rb").read()
    h = header(good)
    check(h["chunk_count"] == 1 and len(data) == trimmed_size(h),
          f"file size {len(data)}: not cut to its one chunk and strings at exit")
    jl = os.path.join(tmp, "good.jsonl")
    subprocess.run([GPUSPY, "dump", good, "-o", jl], check=True)
    lines = open(jl).read().splitlines()
    cases = {
        "empty.gspy": b"",
        "random.gspy": os.urandom(5000),
        "magic.gspy": b"XXXXXXXX" + data[8:8192],
        "empty.jsonl": b"",
        "noproc.jsonl": (lines[1] + "\n").encode(),
        "newer.jsonl": lines[0].replace('"format_version":3', '"format_version":7').encode() + b"\n",
        "badline.jsonl": ("\n".join(lines[:5] + ["{not json"] + lines[5:]) + "\n").encode(),
        "twoproc.jsonl": ("\n".join(lines[:3] + [lines[0]] + lines[3:]) + "\n").encode(),
        "badevent.jsonl": ("\n".join(lines[:2] + ['{"type":"event","kind":"warp"}']) + "\n").encode(),
    }
    for name, content in cases.items():
        path = os.path.join(tmp, name)
        write(path, content)
        p = subprocess.run([GPUSPY, "report", path], capture_output=True, text=True, timeout=10)
        err = p.stderr.strip().splitlines()
        check(p.returncode == 1, f"{name}: exit {p.returncode}")
        check(len(err) == 1 and err[0].startswith(f"gpuspy: error: {path}: "), f"{name}: {err}")
    # Cut anywhere: never a crash, and every complete record up to the cut
    # (a third as many cuts under the sanitizers: CI's time).
    step = max(1, len(data) // (100 if SANITIZED else 300))
    cut = os.path.join(tmp, "cut.gspy")
    for n in list(range(0, 8192, 291 if SANITIZED else 97)) + list(range(8192, len(data), step)):
        write(cut, data[:n])
        p = subprocess.run([GPUSPY, "report", "--json", cut], capture_output=True, text=True, timeout=10)
        check(p.returncode in (0, 1), f"cut at {n}: exit {p.returncode} {p.stderr[-300:]}")
        if p.returncode == 1:
            check(len(p.stderr.strip().splitlines()) == 1, f"cut at {n}: {p.stderr}")


@test
def hostile_times_and_broken_lines_end_every_command(tmp):
    """A GPU record ending at 1.8e19 ns (a forged JSON Lines line): report
    --html, a report of two files and diff each end (the time series' bin
    edge wrapped past 2^64 to the record's start, and the loop never
    ended), diff refusing it for its steps. And diff of a trace with a
    broken line, or cut inside one, exits 2 with the line's error (it
    compared the events before it and said "no regression", exit 0).
    Times and sizes near 2^63: report and export, no overflow."""
    bad = os.path.join(tmp, "far.jsonl")
    write(bad, ('{"type":"process","format_version":3,"pid":1,"command":"x","state":"exited","gpu_timing":"cupti"}\n'
                '{"type":"event","kind":"gpu_kernel","api":"cupti_kernel","tid":1,"start_ns":1,'
                '"end_ns":18000000000000000000,"result":0,"name":"k","device":0,"stream":1}\n').encode())
    good = os.path.join(ROOT, "tests", "golden", "train.jsonl")
    for args, rc in ((["report", "--html", os.path.join(tmp, "far.html"), bad], 0), (["report", bad, bad], 0),
                     (["diff", bad, good], 2)):
        p = subprocess.run([GPUSPY, *args], capture_output=True, text=True, timeout=30)
        check(p.returncode == rc, f"{args[:2]}: exit {p.returncode}: {p.stderr[-300:]}")
    # Times and sizes near 2^63 (tests/fixtures/hostile): no signed
    # overflow in the replay's saving or the reserved memory (UBSan, under
    # make check-sanitize, fails on one).
    for name in ("huge_times.jsonl", "huge_allocs.jsonl"):
        f = os.path.join(ROOT, "tests", "fixtures", "hostile", name)
        for args in (["report", f], ["report", "--json", f], ["export", "--format", "chrome", "-o",
                                                             os.path.join(tmp, "o.json"), f]):
            p = subprocess.run([GPUSPY, *args], capture_output=True, text=True, timeout=30)
            check(p.returncode == 0 and "runtime error" not in p.stderr, f"{name} {args[:2]}: {p.stderr[-300:]}")
    lines = open(good).read().splitlines(keepends=True)
    cases = {"broken.jsonl": ("".join(lines[:200] + ['{"type":"event", garbage\n'] + lines[200:]), 201),
             "cut.jsonl": ("".join(lines)[:30000], 156)}
    for name, (text, line) in cases.items():
        path = os.path.join(tmp, name)
        write(path, text.encode())
        p = subprocess.run([GPUSPY, "diff", good, path], capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and p.stderr == f"gpuspy: error: diff: {path}: line {line}: not valid JSON\n",
              f"{name}: exit {p.returncode}: {p.stderr!r} {p.stdout[-200:]!r}")


@test
def examples_diagnoses(tmp):
    """examples/*.cu, built by nvcc with the shared runtime, on the doubles."""
    want = {"pinned_vs_pageable": "pageable_copies", "data_starved": "data_starvation",
            "alloc_churn": "allocation_churn"}
    for ex, diag in want.items():
        exe = os.path.join(BIN, "ex_" + ex)
        check(os.path.exists(exe), f"{exe} not built (make examples needs nvcc)")
        d = os.path.join(tmp, ex)
        os.makedirs(d)
        run("ex_" + ex, tmp=d)
        o = report_json(d)
        ids = [x["id"] for x in o["diagnoses"]]
        check(diag in ids, f"{ex}: expected diagnosis {diag}, got {ids}")
    o = report_json(os.path.join(tmp, "alloc_churn"))
    step = [x for x in o["phases"] if x["name"] == "step"][0]
    check(step["count"] == 100 and step["alloc"]["device"]["count"] == 100
          and step["alloc"]["device"]["bytes"] == 100 * (32 << 20) and step["launch"]["count"] == 100,
          f"alloc_churn step phase {step['alloc']['device']} {step['launch']}")


@test
def report_gpu_timing_arithmetic(tmp):
    """tests/golden/gpu.jsonl (made by make_gpu_trace.py): GPU records joined to their launches."""
    o = report_json(os.path.join(ROOT, "tests", "golden", "gpu.jsonl"))
    check(o["timing"] == "gpu", "timing")
    ph = {p["name"]: p for p in o["phases"]}
    us = 1000
    check(ph["forward"]["launch"]["gpu_ns"] == 460 * us and ph["forward"]["launch"]["gpu_count"] == 10,
          f"forward GPU time {ph['forward']['launch']}")
    h2d = ph["data"]["copy"]["h2d"]["pageable"]
    check(h2d["gpu_ns"] == 40 * us and h2d["gpu_bytes"] == 2 << 20, f"data copies {h2d}")
    check(ph["data"]["gpu_busy_ns"] == 40 * us and ph["data"]["gpu_idle_ns"] == 760 * us, "data idle")
    d = o["gpu"]["devices"][0]
    check(d["busy_ns"] == 500 * us and d["idle_host_bound_ns"] == 995 * us and d["idle_other_ns"] == 40 * us
          and d["busy_in_phases_ns"] == 500 * us, f"device busy/idle {d}")
    g = o["gpu"]
    check(g["queue_delay_mean_ns"] == 110 * us and g["queue_delay_max_ns"] == 200 * us, f"queue {g}")
    check(g["graph_kernels"] == 6 and g["graph_kernel_ns"] == 240 * us and g["matched"] == g["records"] == 12,
          f"graph/match {g}")
    k = {x["name"]: (x["gpu_count"], x["gpu_ns"]) for x in o["kernels"]}
    check(k["graph_kernel"] == (6, 240 * us) and k["gemm"] == (2, 200 * us), f"kernels {k}")
    ids = [x["id"] for x in o["diagnoses"]]
    check(ids == ["pageable_copies", "data_starvation"], f"diagnoses {ids}")
    # CUPTI hands records over late and in overlapping buffers: the same
    # trace with its GPU records delivered last, in reverse order, must give
    # the same device timeline and per-phase GPU numbers.
    lines = open(os.path.join(ROOT, "tests", "golden", "gpu.jsonl")).read().splitlines()
    gpu_lines = [l for l in lines if '"kind":"gpu_' in l]
    late = [l for l in lines if l not in gpu_lines] + gpu_lines[::-1]
    path = os.path.join(tmp, "late.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(late) + "\n")
    q = report_json(path)
    check(q["gpu"]["devices"] == o["gpu"]["devices"], f"device timeline depends on delivery order: "
          f"{q['gpu']['devices']} vs {o['gpu']['devices']}")
    for a, b in zip(q["phases"], o["phases"]):
        check(a["gpu_busy_ns"] == b["gpu_busy_ns"] and a["launch"]["gpu_ns"] == b["launch"]["gpu_ns"],
              f"phase {a['name']} GPU numbers depend on delivery order")
    # A 10 us kernel between the steps, outside phases: busy 510 us, of it
    # 500 in phases, which the text gives of the 1.8 ms in phases.
    extra = {"type": "event", "kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": 1_000_950_000,
             "end_ns": 1_000_960_000, "result": 0, "device": 0, "stream": 7, "corr": 999, "name": "between"}
    path = os.path.join(tmp, "between.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines + [json.dumps(extra)]) + "\n")
    d = report_json(path)["gpu"]["devices"][0]
    check(d["busy_ns"] == 510 * us and d["busy_in_phases_ns"] == 500 * us, f"outside phases: {d}")
    check("  device 0: busy 510.0 us of 1.9 ms (26.8%); idle gaps: " in report_text(path)
          and "\n    in phases: busy 500.0 us of 1.8 ms (27.8%)\n" in report_text(path), report_text(path))


@test
def library_ranges_nest_in_the_users_phase(tmp):
    """A library's NVTX range (CUB's, XLA's) inside the user's `backward`
    takes none of its calls: backward keeps all 3 launches; the range is
    counted apart (JSON "library": true, 2 ranges, 0 launches) and the text
    table has no row for it, only the libraries' line. Over 20 phases the
    table shows 19 by wall time and counts the rest; --all shows them."""
    def launch(t):
        return {"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 100, "result": 0,
                "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0}
    ev = [phase_event(True, 1000, "backward", 0), launch(1100),
          phase_event(True, 1200, "cub::DeviceRadixSort::SortPairs", 0), launch(1300),
          phase_event(False, 1400, "cub::DeviceRadixSort::SortPairs", 0),
          phase_event(True, 1500, "cub::DeviceRadixSort::SortPairs", 0), launch(1600),
          phase_event(False, 1700, "cub::DeviceRadixSort::SortPairs", 0),
          phase_event(False, 1800, "backward", 0)]
    path = write_jsonl(os.path.join(tmp, "lib.jsonl"), ev)
    o = report_json(path)
    ph = {p["name"]: p for p in o["processes"][0]["phases"]}
    check(ph["backward"]["launch"]["count"] == 3 and not ph["backward"].get("library"), f"backward: {ph['backward']}")
    cub = ph["cub::DeviceRadixSort::SortPairs"]
    check(cub.get("library") is True and cub["count"] == 2 and cub["launch"]["count"] == 0, f"cub: {cub}")
    text = report_text(path)
    check(not re.search(r"^  cub::", text, re.M) and
          "Libraries' own ranges, inside the phases above (which keep their time): 2 ranges" in text and
          re.search(r"^    cub::DeviceRadixSort::SortPairs +2 +400 ns$", text, re.M), text)
    # 25 user phases: 19 rows, then the rest in one line.
    ev = []
    for i in range(25):
        ev += [phase_event(True, 10_000 * i + 1, f"p{i:02d}", 0), phase_event(False, 10_000 * i + 1 + 100 * (i + 1), f"p{i:02d}", 0)]
    path = write_jsonl(os.path.join(tmp, "many.jsonl"), ev)
    text = report_text(path)
    rows = re.findall(r"^  (p\d\d) ", text, re.M)
    check(rows == [f"p{i:02d}" for i in range(6, 25)], f"rows {rows}")
    check("  ... and 6 more phases, 2.1 us of wall time in all (gpuspy report --all lists them)" in text, text)
    p = subprocess.run([GPUSPY, "report", "--all", "--color", "never", path], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(re.findall(r"^  (p\d\d) ", p.stdout, re.M) == [f"p{i:02d}" for i in range(25)], p.stdout)


@test
def sites_start_at_the_programs_own_code(tmp):
    """A site passes over the frames of PyTorch, the interpreter and Python
    packages to the program's own line: the allocation's site is
    train.py:42 (the frames above it are c10's allocator, ATen, CPython
    and torch/nn), its diagnosis says so, and a copy whose stack has no
    frame of the program's own is named by its owner."""
    lib = ["c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int)+0x10 (libc10_cuda.so)",
           "at::native::empty_cuda(long)+0x20 (libtorch_cuda.so)", "_PyEval_EvalFrameDefault+0x1 (python3.12)",
           "forward (/usr/lib/python3/dist-packages/torch/nn/modules/linear.py:125)",
           "_call_impl (/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1750)"]
    frames = {1: lib + ["train_step (train.py:42)", "<module> (train.py:50)"],
              2: ["at::native::copy_kernel_cuda(at::TensorIterator&, bool)+0x6ff (libtorch_cuda.so)",
                  "libtorch_python.so+0x5eb170", "python3.12+0x58216e"]}
    ev = []
    for i in range(3):
        ev.append({"kind": "alloc", "api": "cudaMalloc", "tid": 7, "start_ns": 1000 + 100 * i, "end_ns": 1050 + 100 * i,
                   "result": 0, "bytes": 1 << 20, "mem": "device", "addr": 4096 * (i + 1), "device": 0, "stack": 1})
    ev.append({"kind": "copy", "api": "cudaMemcpy", "tid": 7, "start_ns": 2000, "end_ns": 3000, "result": 0,
               "bytes": 1 << 20, "dir": "h2d", "host_mem": "pageable", "addr": 12345, "device": 0, "stack": 2})
    path = write_jsonl(os.path.join(tmp, "sites.jsonl"), ev, frames=frames)
    o = report_json(path)
    alloc = o["processes"][0]["alloc_sites"]
    check(len(alloc) == 1 and alloc[0]["stack"][:2] == ["train_step (train.py:42)", "<module> (train.py:50)"],
          f"allocation site: {alloc}")
    text = " ".join(report_text(path).split())
    check("All 1.0 MiB copied in PyTorch (at::native::copy_kernel_cuda(at::TensorIterator&, bool)+0x6ff "
          "(libtorch_cuda.so))." in text, text[-1500:])


@test
def ncu_line_passes_the_kernel_name_as_one_word(tmp):
    """A kernel named `a';touch pwned;#` (and one with $(...), backquotes,
    a backslash and a newline): the report's ncu line, run by sh with a
    stand-in ncu that prints its arguments, hands ncu `-k` and the regex as
    one exact word each, and runs nothing else (no file pwned)."""
    from test_tracegen import write_raw_trace
    stub = os.path.join(tmp, "bin")
    os.mkdir(stub)
    with open(os.path.join(stub, "ncu"), "w") as f:
        f.write('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > "$NCU_ARGV"\n')
    os.chmod(os.path.join(stub, "ncu"), 0o755)
    for name, regex in ((b"a';touch pwned;#", "^a';touch pwned;#$"),
                        (b"b$(touch pwned)`touch pwned`\\x'\"", "^b\\$\\(touch pwned\\)`touch pwned`\\\\x'\"$"),
                        (b"c\ntouch pwned", "^c.touch pwned$")):
        f = write_raw_trace(os.path.join(tmp, "k.jsonl"), b"prog", b"step", name)
        text = report_text(f)
        lines = [l for l in text.splitlines() if l.startswith("    ncu ")]
        check(len(lines) == 1, f"{name!r}: ncu lines {lines}\n{text}")
        argv = os.path.join(tmp, "argv")
        p = subprocess.run(["sh", "-c", lines[0]], cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT,
                           env=dict(os.environ, PATH=stub + ":" + os.environ["PATH"], NCU_ARGV=argv))
        check(not os.path.exists(os.path.join(tmp, "pwned")), f"{name!r}: the ncu line ran touch: {lines[0]}")
        got = open(argv).read().split("\n")[:-1]
        check(p.returncode == 0 and got == ["--kernel-name-base", "mangled", "-k", "regex:" + regex, "-s", "2", "-c",
                                            "1", "CMD"], f"{name!r}: {lines[0]}\n ncu got {got} {p.stderr!r}")
        os.unlink(argv)
