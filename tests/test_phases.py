# SPDX-License-Identifier: MIT
"""Phases: NVTX ranges, the phase API, GPU time from CUDA events (the PyTorch helper's phases: test_torch.py)."""
import collections  # noqa: F401
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)


@test
def nvtx_ranges_become_phases(tmp):
    p = run("prog_nvtx", tmp=tmp)
    check("levels 0 1" in p.stdout, f"NVTX push levels: {p.stdout}")
    _, ev = only_trace(tmp)
    B, N, M = "phase_begin", "phase_end", "mark"
    check(phases_of(ev) == [(B, "outer"), (B, "inner"), (N, "inner"), (N, "outer"), (M, "checkpoint"),
                            (B, "dom_range"), (N, "dom_range"), (B, "async_range"), (N, "async_range")],
          f"phases {phases_of(ev)}")
    o = report_json(tmp)
    ph = {x["name"]: x["launch"]["count"] for x in o["phases"]}
    check(ph == {"(no phase)": 1, "outer": 1, "inner": 1, "dom_range": 1, "async_range": 1},
          f"launches by phase {ph}")


@test
def nvtx_filters_and_nesting(tmp):
    B, N = "phase_begin", "phase_end"
    cases = [
        ({"GPUSPY_NVTX_NESTING": "outermost"},
         [(B, "outer"), (N, "outer"), ("mark", "checkpoint"), (B, "dom_range"), (N, "dom_range"),
          (B, "async_range"), (N, "async_range")]),
        ({"GPUSPY_NVTX_DOMAINS": "mydomain"}, [(B, "dom_range"), (N, "dom_range")]),
        ({"GPUSPY_NVTX_RANGES": "in*,async_*"}, [(B, "inner"), (N, "inner"), (B, "async_range"),
                                                (N, "async_range")]),
        ({"GPUSPY_NVTX": "0"}, []),
        ({"GPUSPY_NVTX": "off"}, []),
    ]
    for env, want in cases:
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        run("prog_nvtx", tmp=tmp, env=env)
        _, ev = only_trace(tmp)
        check(phases_of(ev) == want, f"{env}: {phases_of(ev)}")


@test
def nvtx_registered_strings_kept_once_each(tmp):
    """Registered strings (XLA registers one per kernel of every module) are
    kept once per text and up to 65536 of them: 70000 distinct ones after
    "dom_range" name their ranges up to the 65536th (x65534); the next says
    the table is full, where it used to be "(unnamed)" after 4096; the same
    text registered again is the same handle."""
    p = run("prog_nvtx", ["strings"], tmp=tmp)
    check(p.stdout == "same 1\n", f"a text registered again got another handle: {p.stdout!r}")
    _, ev = only_trace(tmp)
    got = [e["name"] for e in ev if e["kind"] == "phase_begin"]
    check(got == ["x0", "x65534", "(more than 65536 NVTX strings)"], f"range names {got}")


@test
@slow
def nvtx_long_names_kept_once(tmp):
    """A range name over 100 characters, registered (as XLA names each
    thunk) or as text, repeated 80000 times: every range keeps its name, the
    string table grows by nothing past the first (it used to append the
    name at every range and, full at 16 MiB, left later names unnamed), and
    a phase begun afterwards still has its name."""
    name = ("Thunk:#name=jit(step)/jvp()/dot_general,hlo_op=gemm_fusion_dot.2,"
            "unique_hlo_op_id=4294967311,program_id=3977#")
    sizes = {}
    for n in (1, 80000):
        d = os.path.join(tmp, str(n))
        os.makedirs(d)
        run("prog_nvtx", ["repeat", str(n)], tmp=d)
        hdr, ev = only_trace(d)
        got = collections.Counter(e["name"] for e in ev if e["kind"] == "phase_begin")
        check(got == {name: n, "text:" + name: n, "after": 1}, f"n={n}: {got}")
        sizes[n] = hdr["strings_bytes"]
    check(sizes[80000] == sizes[1], f"the string table grew with the ranges: {sizes}")


@test
def nvtx_library_ranges_inside_library_ranges(tmp):
    """XLA opens a range per thunk inside the module it runs: a library's
    range inside another library range is not recorded (GPUSPY_NVTX_LIBRARY
    =outermost, the default), so the module, the user's "step" and the
    cuBLAS range inside it are the ranges recorded, and every launch
    belongs to the module or to cuBLAS's range; with `all`, the four thunk
    ranges too, in order."""
    mod, thunk = "XlaModule:#hlo_module=jit_step,program_id=7#", "Thunk:#hlo_op=gemm_fusion_dot#"
    want = {
        None: [("phase_begin", mod), ("launch", None), ("launch", None), ("launch", None), ("phase_end", mod),
               ("phase_begin", "step"), ("phase_begin", "cublasSgemm"), ("launch", None),
               ("phase_end", "cublasSgemm"), ("phase_end", "step")],
        "all": [("phase_begin", mod)] + [("phase_begin", thunk), ("launch", None), ("phase_end", thunk)] * 2 +
               [("phase_begin", thunk), ("launch", None), ("phase_begin", thunk), ("phase_end", thunk),
                ("phase_end", thunk), ("phase_end", mod), ("phase_begin", "step"), ("phase_begin", "cublasSgemm"),
                ("launch", None), ("phase_end", "cublasSgemm"), ("phase_end", "step")],
    }
    for how, seq in want.items():
        d = os.path.join(tmp, str(how))
        os.makedirs(d)
        run("prog_nvtx", ["xla"], tmp=d, env={"GPUSPY_NVTX_LIBRARY": how} if how else {})
        _, ev = only_trace(d)
        got = [(e["kind"], e.get("name") if e["kind"] != "launch" else None) for e in ev
               if e["kind"] in ("phase_begin", "phase_end", "launch")]
        check(got == seq, f"GPUSPY_NVTX_LIBRARY={how}: {got}")


def deep_ranges(n, rounds, kept):
    """The phase events of `prog_nvtx deep n rounds` when the first `kept`
    levels are recorded: each round d0..d(kept-1) begin, a launch, and they
    end innermost first; then "after"."""
    B, N = "phase_begin", "phase_end"
    one = [(B, f"d{i}") for i in range(kept)] + [("launch", None)] + [(N, f"d{i}") for i in reversed(range(kept))]
    return one * rounds + [(B, "after"), ("launch", None), (N, "after")]


@test
def nvtx_ranges_nested_deeper_than_64_end_in_their_places(tmp):
    """Ranges nested 70 deep, three times (a third of them in a domain of
    their own): every level's begin and end are recorded, each end in its
    place, with its name (level 63 ended 21 times for 3 begins, levels
    64-69 never ended); NVTX gets each range's level back. 4100 deep: the
    first 4096 levels recorded and paired, the 4 deeper ones not recorded,
    and the report says so."""
    for n, rounds, kept in ((70, 3, 70), (4100, 1, 4096)):
        d = os.path.join(tmp, str(n))
        os.makedirs(d)
        p = run("prog_nvtx", ["deep", str(n), str(rounds)], tmp=d)
        check(p.stdout == f"deep {n} x {rounds}: 0 levels wrong\n", f"program: {p.stdout!r}")
        proc, ev = only_trace(d)
        got = [(e["kind"], e.get("name") if e["kind"] != "launch" else None) for e in ev
               if e["kind"] in ("phase_begin", "phase_end", "launch")]
        want = deep_ranges(n, rounds, kept)
        check(got == want, f"deep {n}: {len(got)} phase events and launches, {len(want)} expected; "
              f"first difference at {next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)}")
        check(proc.get("nvtx_too_deep", 0) == n - kept, f"deep {n}: process line {proc}")
        text = report_text(d)
        line = "4 NVTX ranges were not recorded: nested more than 4096 deep on their thread"
        check((line in text) == (n > kept), f"deep {n}: report:\n{text}")


@test
def nvtx_user_injection_is_respected(tmp):
    # A user's own NVTX tool keeps its place: gpuspy does not replace it.
    run("prog_nvtx", tmp=tmp, env={"NVTX_INJECTION64_PATH": "/nonexistent/libtool.so"})
    _, ev = only_trace(tmp)
    check(phases_of(ev) == [] and len(ev) == 5, f"{len(ev)} events, phases {phases_of(ev)}")


@test
def phase_api_runs_without_gpuspy(tmp):
    p = run("prog_train", ["2", "10"], tmp=tmp, preload=False)
    check(p.stdout == "trained 2 steps\n" and traces(tmp) == [], "weak phase API changed the program")



def spans(ev):
    return sorted((e["name"], e["gpu_ns"], "legacy" if e["stream"] == 0 else "stream")
                  for e in ev if e["kind"] == "gpu_span")


@test
def gpu_time_from_events(tmp):
    """GPUSPY_CUPTI=events: each phase interval's GPU time on each stream it
    used, from CUDA events at the boundaries (the double's kernels take
    grid_x us of their stream's clock); per-thread streams are not timed;
    the report and the JSON Lines round trip give the same sums."""
    p = run("prog_events", env={"GPUSPY_CUPTI": "events"}, tmp=tmp)
    check(p.stdout == "events done\n", p.stdout)
    head, ev = only_trace(tmp)
    check(head["gpu_timing"] == "events", head["gpu_timing"])
    want = sorted([("multi", 10000, "stream"), ("multi", 20000, "stream"), ("multi", 5000, "legacy"),
                   ("outer", 1000, "stream"), ("inner", 2000, "stream"), ("outer", 4000, "stream"),
                   ("threaded", 7000, "stream")])
    check(spans(ev) == want, f"spans {spans(ev)}")
    gspy = os.path.join(tmp, traces(tmp)[0])
    for path in (gspy, None):
        if path is None:
            path = os.path.join(tmp, "t.jsonl")
            with open(path, "w") as f:
                f.write(subprocess.run([GPUSPY, "dump", gspy], capture_output=True, text=True).stdout)
        o = report_json(path)
        check(o["timing"] == "events", o["timing"])
        got = {x["name"]: (x["gpu_span_ns"], x["gpu_span_intervals"]) for x in o["phases"]}
        check(got == {"(no phase)": (0, 0), "multi": (35000, 3), "outer": (5000, 2), "inner": (2000, 1),
                      "threaded": (7000, 1)}, f"{path}: {got}")
        check(o["gpu"]["devices"] == [{"device": 0, "span_ns": 49000, "spans": 7, "phases_span_ns": 49000,
                                       "phases_spans": 7}], f"gpu {o.get('gpu')}")
    p = subprocess.run([GPUSPY, "report", "--color", "never", gspy], capture_output=True, text=True)
    check("  device 0: GPU spans 49.0 us of " in p.stdout and " in phases (7 intervals): busy at most "
          in p.stdout and "outside phases" not in p.stdout and max(len(l) for l in p.stdout.splitlines()) <= 100,
          p.stdout[-600:])


@test
def gpu_time_from_events_per_training_phase(tmp):
    """The training loop under GPUSPY_CUPTI=events: forward 10 x 64 us,
    backward 12 x 64 us, optimizer 32 us per step; data's copies take no
    GPU time."""
    p = run("prog_train", ["3", "100"], env={"GPUSPY_CUPTI": "events"}, tmp=tmp)
    check(p.stdout == "trained 3 steps\n", p.stdout)
    o = report_json(os.path.join(tmp, traces(tmp)[0]))
    got = {x["name"]: (x["gpu_span_ns"], x["gpu_span_intervals"]) for x in o["phases"]}
    check(got == {"(no phase)": (0, 0), "data": (0, 3), "forward": (3 * 640000, 3),
                  "backward": (3 * 768000, 3), "optimizer": (3 * 32000, 3)}, f"prog_train {got}")


@test
def gpu_time_from_events_bounds_starvation(tmp):
    """A data-starved loop (20 ms of host work per step) under
    GPUSPY_CUPTI=events: the diagnosis adds the bound the events give, from
    the phases' spans and their time."""
    run("prog_train", ["5", "20000"], env={"GPUSPY_CUPTI": "events"}, tmp=tmp)
    o = report_json(os.path.join(tmp, traces(tmp)[0]))
    ph = {x["name"]: x for x in o["phases"]}
    spans_ns = sum(x["gpu_span_ns"] for n, x in ph.items() if n != "(no phase)")
    check(spans_ns == 5 * (640000 + 768000 + 32000), f"spans {spans_ns}")
    in_phases = o["duration_ns"] - ph["(no phase)"]["wall_ns"]
    text = [x["text"] for x in o["diagnoses"] if x["id"] == "data_starvation"]
    want = f"CUDA events: the GPU worked at most {100 * spans_ns / in_phases:.0f}% of that time"
    check(len(text) == 1 and want in text[0], f"{want!r} not in {text}")


@test
def gpu_time_from_events_read_in_batches(tmp):
    """1000 intervals on one stream are read back with a few binary searches
    of cuEventQuery (the double's GPU is one event behind), not a query or
    more per interval."""
    p = run("prog_events", ["loop", "1000"], env={"GPUSPY_CUPTI": "events", "FAKECUDA_STATS": "1"}, tmp=tmp)
    check(p.stdout == "loop done\n", p.stdout)
    check(spans(only_trace(tmp)[1]) == [("loop", 1000, "stream")] * 1000, "1000 spans of 1 us")
    queries = int(re.search(r"fakecuda: (\d+) event queries", p.stderr)[1])
    check(queries <= 250, f"{queries} event queries for 1000 intervals")


@test
def gpu_time_from_events_is_off_by_default(tmp):
    """Without GPUSPY_CUPTI=events no gpu_span record is written; gpuspy
    run --cupti events sets the variable for the command."""
    run("prog_events", tmp=tmp)
    check(spans(only_trace(tmp)[1]) == [], "gpu_span records without GPUSPY_CUPTI=events")
    if SANITIZED:
        raise Skip("gpuspy run puts libgpuspy before the sanitizer runtime")
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    p = subprocess.run([GPUSPY, "run", "--dir", os.path.join(tmp, "r"), "--cupti", "events",
                        "--no-report", "--", "sh", "-c", "echo $GPUSPY_CUPTI"], env=e,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.stdout == "events\n", f"gpuspy run --cupti events: {p.stdout!r} {p.stderr!r}")


@test
def gpu_time_from_events_failures(tmp):
    """Events that cannot be recorded: the program runs unchanged, nothing
    is timed, one warning at exit says how many intervals were not."""
    p = run("prog_events", env={"GPUSPY_CUPTI": "events", "FAKECUDA_FAIL": "cuEventRecord:999", **LOG_STDERR},
            tmp=tmp)
    check(p.stdout == "events done\n", p.stdout)
    lines = [l for l in p.stderr.splitlines() if "GPUSPY_CUPTI=events" in l]
    check(lines == ["gpuspy: GPUSPY_CUPTI=events: 7 phase intervals could not be timed on the GPU"],
          f"stderr {p.stderr!r}")
    check(spans(only_trace(tmp)[1]) == [], "spans recorded although no event could be")
    q = run("prog_events", preload=False, tmp=tmp)
    check(q.stdout == p.stdout, "output differs from the untraced run")


@test
def gpu_time_from_events_follows_64_streams(tmp):
    """More streams than gpuspy follows: the first 64 are timed, one note
    in the trace, nothing on stderr."""
    p = run("prog_events", ["many"], env={"GPUSPY_CUPTI": "events", "GPUSPY_QUIET": "0"}, tmp=tmp)
    check(p.stdout == "many done\n", p.stdout)
    check(gpuspy_lines(p.stderr) == [] and notes(tmp) == ["GPUSPY_CUPTI=events: more than 64 streams; the others are "
                                                          "not timed"], f"stderr {p.stderr!r}, notes {notes(tmp)!r}")
    check(spans(only_trace(tmp)[1]) == [("many", 1000, "stream")] * 64, "64 streams timed")


@test
def gpu_time_from_events_leaves_capturing_streams(tmp):
    """A stream being captured into a graph gets no event (s1 is 0x7010)."""
    run("prog_events", env={"GPUSPY_CUPTI": "events", "FAKECUDA_CAPTURING": "0x7010"}, tmp=tmp)
    got = spans(only_trace(tmp)[1])
    check(got == sorted([("multi", 20000, "stream"), ("multi", 5000, "legacy"), ("threaded", 7000, "stream")]),
          f"spans with s1 capturing {got}")


@test
def gpu_time_from_events_leaves_the_legacy_stream_alone_while_capturing(tmp):
    """A phase that used the legacy stream ends while s1, a blocking stream,
    is captured in global mode (FAKECUDA_STRICT_CAPTURE: any work on the
    legacy stream then invalidates the capture): no end event goes there,
    the capture ends with its graph as untraced, the interval is counted as
    lost, and the next phase's legacy interval is timed."""
    env = {"GPUSPY_CUPTI": "events", "FAKECUDA_STRICT_CAPTURE": "1", **LOG_STDERR}
    q = run("prog_events", ["capture"], env=env, preload=False, tmp=tmp)
    p = run("prog_events", ["capture"], env=env, tmp=tmp)
    want = "begin capture rc=0\nend capture rc=0 graph made\n"
    check(q.stdout == want and p.stdout == want, f"untraced {q.stdout!r}, traced {p.stdout!r}")
    check(gpuspy_lines(p.stderr) == ["gpuspy: GPUSPY_CUPTI=events: 1 phase intervals could not be timed on the GPU"],
          f"stderr {p.stderr!r}")
    check(spans(only_trace(tmp)[1]) == [("after", 2000, "legacy")], f"spans {spans(only_trace(tmp)[1])}")


@test
def gpu_time_from_events_ends_on_a_stream_before_it_is_destroyed(tmp):
    """Two streams made, used (3 and 4 us), synchronized and destroyed
    inside a phase (cuStreamDestroy_v2, then the old cuStreamDestroy):
    their intervals end as they are destroyed, so each is timed, and their
    handles are never used again (FAKECUDA_STRICT_STREAMS reports no call
    on a destroyed stream); s1 takes a freed slot. Output as untraced."""
    env = {"GPUSPY_CUPTI": "events", "FAKECUDA_STRICT_STREAMS": "1", **LOG_STDERR}
    q = run("prog_events", ["destroy"], env=env, preload=False, tmp=tmp)
    p = run("prog_events", ["destroy"], env=env, tmp=tmp)
    want = "destroy rc=0 old ABI rc=0\n"
    check(q.stdout == want and p.stdout == want, f"untraced {q.stdout!r}, traced {p.stdout!r}")
    check(p.stderr == "", f"stderr {p.stderr!r}")
    got = spans(only_trace(tmp)[1])
    check(got == sorted([("short", 3000, "stream"), ("short", 4000, "stream"), ("short", 1000, "stream"),
                         ("next", 2000, "stream")]), f"spans {got}")


@test
def gpu_time_from_events_reuses_the_slots_of_destroyed_streams(tmp):
    """70 streams made, used, synchronized and destroyed one after another
    in one phase: a destroyed stream's slot takes the next one, so all 70
    are timed (64 live streams are followed) and no note says otherwise."""
    p = run("prog_events", ["churn"], env={"GPUSPY_CUPTI": "events", "FAKECUDA_STRICT_STREAMS": "1"}, tmp=tmp)
    check(p.stdout == "churn done\n" and p.stderr == "", f"{p.stdout!r} {p.stderr!r}")
    check(notes(tmp) == [], f"notes {notes(tmp)!r}")
    check(spans(only_trace(tmp)[1]) == [("churn", 1000, "stream")] * 70, "70 streams timed")
