# SPDX-License-Identifier: MIT
"""Phases: NVTX ranges, the PyTorch helper's automatic phases, GPU time from CUDA events."""
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


def phases_of(ev):
    return [(e["kind"], e["name"]) for e in ev if e["kind"] in ("phase_begin", "phase_end", "mark")]


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


SYS_PY = "/usr/bin/python3"
TORCH_LOOP = os.path.join(ROOT, "tests", "progs", "torch_loop.py")


def torch_sequence(steps):
    B, N = "phase_begin", "phase_end"
    seq = []
    for s in range(steps):
        for name in ("data", "optimizer", "forward", "backward", "optimizer"):
            seq += [(B, name, s), (N, name, s)]
    return seq + [(B, "data", steps), (N, "data", steps)]


@test
def torch_phases_without_code_changes(tmp):
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    p = run_py([TORCH_LOOP, "3"], tmp)
    check(p.returncode == 0 and p.stdout == "done 3 steps\n", f"{p.returncode} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    check(got == torch_sequence(3), f"torch phases {got}")
    check(all(e["api"].startswith("torch_phase") for e in ev if e["kind"] != "mark"), "phases not from the torch hooks")
    # One pass over one DataLoader: its mark, with where it was made.
    marks = [e["name"] for e in ev if e["kind"] == "mark"]
    check(marks == [f"DataLoader num_workers=0 made at <module> ({TORCH_LOOP}:15)"], f"marks {marks}")
    # The same through gpuspy run, with its report.
    d = os.path.join(tmp, "run")
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--", SYS_PY, TORCH_LOOP, "2"], env=e,
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and "done 2 steps" in p.stdout, p.stderr[-500:])
    for name in ("data", "forward", "backward", "optimizer"):
        check(f"\n  {name} " in p.stdout, f"report lacks the {name} phase")
    _, ev = only_trace(d)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    check(got == torch_sequence(2), f"torch phases via gpuspy run {got}")


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


@test
def torch_forward_hooks_learned(tmp):
    """The global module hook is on for the first GPUSPY_TORCH_LEARN_STEPS
    steps only; then the model it saw begin forward carries the hook, and
    the phases stay the same."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    for learn, hooks in (("", "global 0 model 1"), ("2", "global 0 model 1"), ("9", "global 1 model 0"),
                         ("0", "global 1 model 0"), ("x", "global 0 model 1"), ("-1", "global 0 model 1")):
        d = os.path.join(tmp, "learn" + learn)
        os.makedirs(d)
        p = run_py([TORCH_LOOP, "5", "-1", "hooks"], d, env={"GPUSPY_TORCH_LEARN_STEPS": learn} if learn else {})
        check(p.returncode == 0 and p.stdout == f"done 5 steps\nhooks {hooks}\n", f"learn {learn!r}: {p.stdout!r}")
        want = [f"GPUSPY_TORCH_LEARN_STEPS={learn} is not a number (0 or more); using 3"] if learn in ("x", "-1") else []
        check(notes(d) == want and gpuspy_lines(p.stderr) == [], f"learn {learn!r}: {notes(d)!r} {p.stderr!r}")
        _, ev = only_trace(d)
        got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
        check(got == torch_sequence(5), f"learn {learn!r}: torch phases {got}")


@test
def torch_forward_hooks_relearn_each_pass(tmp):
    """Each new pass over a DataLoader watches every module call again until
    GPUSPY_TORCH_LEARN_STEPS steps later: a second model first used in a
    validation pass after learning still begins forward, and both models
    carry the hook afterwards."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    p = run_py([os.path.join(ROOT, "tests", "progs", "torch_two_models.py")], tmp,
               env={"GPUSPY_TORCH_LEARN_STEPS": "2"})
    check(p.returncode == 0 and p.stdout == "hooks global 0 a 1 b 1\ndone\n", f"{p.stdout!r} {p.stderr[-300:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    B, N = "phase_begin", "phase_end"

    def train(s):
        return [(B, "data", s), (N, "data", s), (B, "optimizer", s), (N, "optimizer", s),
                (B, "forward", s), (N, "forward", s), (B, "backward", s), (N, "backward", s),
                (B, "optimizer", s), (N, "optimizer", s)]

    def val(s):  # B's pass: the lazy data phase of the ended pass's last
        # next() runs on into the first batch, then B's forward per batch
        return [(B, "data", s), (N, "data", s), (B, "forward", s), (N, "forward", s)] * 3
    want = train(0) + train(1) + train(2) + val(3) + train(3) + train(4) + train(5) + val(6) + \
        [(B, "data", 6), (N, "data", 6)]
    check(got == want, f"phases {got}")


@test
def torch_pause_resume(tmp):
    """gpuspy_torch.pause()/resume() around step 1's body: its phases are not
    recorded, the open data phase is closed first, the module hook is off
    while paused (module calls take PyTorch's fast path) and back after."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    p = run_py([TORCH_LOOP, "3", "1"], tmp)
    check(p.returncode == 0 and p.stdout == "paused hooks 0\nresumed hooks 1\ndone 3 steps\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev if e["kind"].startswith(("phase", "mark"))]
    full = torch_sequence(3)
    want = [("mark", f"DataLoader num_workers=0 made at <module> ({TORCH_LOOP}:15)", None)] + full[:10] + \
        [full[10], ("phase_end", "data", 1), ("mark", "(paused)", None), ("mark", "(resumed)", None)] + full[20:]
    check(got == want, f"phases around a pause {got}")


@test
def torch_helper_phase_call_is_a_builtin(tmp):
    """The helper calls libgpuspy through a METH_FASTCALL builtin
    (gpuspy_torch_fast), not ctypes: a good call records its phase and step;
    calls it cannot read (wrong types, counts, a negative step) return None,
    raise nothing and record nothing."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    script = ("import gpuspy_torch as g\n"
              "f = g._lib.gpuspy_torch_phase\n"
              "print(type(g._lib).__name__, type(f).__name__)\n"
              "print([f(*a) for a in ((b'x', 7, 1), ('x', 1, 1), (b'x', 'a', 1), (b'x',), (), "
              "(b'x', -1, 1), (b'x', 1, None), (b'x', 2**64, 1), (b'x', 7, 0))])\n")
    p = run_py(["-c", script], tmp)
    check(p.returncode == 0 and p.stdout == "_Fast builtin_function_or_method\n" + repr([None] * 9) + "\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev]
    check(got == [("phase_begin", "x", 7), ("phase_end", "x", 7)], f"recorded {got}")


@test
def torch_helper_builtins_and_python_version_agree(tmp):
    """The helper's per-call work (wrappers, the models' hook, the phase
    state) runs in libgpuspy's builtins when the process has the Python C
    API: after learning, the model's hook is the builtin (with no
    torch.compiler, as in Debian's PyTorch 1.13: else a Python function
    that asks is_compiling() first, then calls it); the phases, steps
    and order are those of the helper's Python version (forced by
    bench/helper_probe, GPUSPY_PROBE=python), over 5 steps and a pause. The
    call builtin refuses a bad call with TypeError, passes the wrapped
    function's exception and result through, still counts a step that
    raised, and records one phase for nested calls of one thread."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    probe = {"PYTHONPATH": os.path.join(ROOT, "bench", "helper_probe")}
    seqs = {}
    for mode in ("builtins", "python"):
        d = os.path.join(tmp, mode)
        os.makedirs(d)
        env = dict(probe, GPUSPY_PROBE="python") if mode == "python" else probe
        p = run_py(["-c", "import sys, gpuspy_torch as g; sys.argv = ['x', '5', '2', 'hooks']; "
                    f"exec(open({TORCH_LOOP!r}).read()); "
                    "print(type(model._forward_pre_hooks[next(iter(model._forward_pre_hooks))]).__name__, "
                    "g._C is None)"], d, env=env)
        want_hook = "builtin_function_or_method False" if mode == "builtins" else "function True"
        check(p.returncode == 0 and p.stdout.splitlines() == [
            "paused hooks 0", "resumed hooks 0", "done 5 steps", "hooks global 0 model 1", want_hook],
            f"{mode}: {p.returncode} {p.stdout!r} {p.stderr[-500:]}")
        _, ev = only_trace(d)
        seqs[mode] = [(e["kind"], e["name"], e.get("step")) for e in ev
                      if e["kind"].startswith(("phase", "mark"))]
    check(seqs["builtins"] == seqs["python"] and len(seqs["python"]) == 47,
          f"builtins {seqs['builtins']} vs python {seqs['python']}")
    script = ("import gpuspy_torch as g\n"
              "c = g._C\n"
              "for a in ((), (print,), (print, 9, (), {}), (print, 'x', (), {}), (print, 0, (), {}, 1, 2)):\n"
              "    try:\n"
              "        c.call(*a); print('no error', a)\n"
              "    except TypeError as e:\n"
              "        print('TypeError')\n"
              "def bad(): raise ValueError('boom')\n"
              "try:\n"
              "    c.call(bad, 3 | 0x20, (), {})\n"
              "except ValueError as e:\n"
              "    print('raised', e, c.ctl(0, 0))\n"
              "inner = lambda x, y=0: x + y\n"
              "outer = lambda x: c.call(inner, 2, (x,), {'y': 1})\n"
              "print(c.call(outer, 2, (41,), {}), c.ctl(0, 0), c.ctl(4, 0))\n"
              "c.ctl(3, 0); print(c.ctl(4, 0)); c.ctl(2, 0); print(c.ctl(4, 0))\n")
    d = os.path.join(tmp, "calls")
    os.makedirs(d)
    p = run_py(["-c", script], d)
    check(p.returncode == 0 and p.stdout.splitlines() == ["TypeError"] * 5 + ["raised boom 1", "42 1 0", "1", "0"],
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(d)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev]
    check(got == [("phase_begin", "optimizer", 0), ("phase_end", "optimizer", 0),
                  ("phase_begin", "backward", 1), ("phase_end", "backward", 1),
                  ("phase_begin", "data", 1), ("phase_end", "data", 1)], f"recorded {got}")


@test
def torch_hooks_opt_out_and_chain(tmp):
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    for off in ("0", "off"):
        p = run_py([TORCH_LOOP, "2"], tmp, env={"GPUSPY_TORCH": off})
        check(p.returncode == 0 and traces(tmp) == [], f"GPUSPY_TORCH={off} still recorded phases")
    user = os.path.join(tmp, "user")
    os.makedirs(user)
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys.stderr.write('user sitecustomize ran\\n')\n")
    code = ("import os, sys, torch; print(os.environ.get('PYTHONPATH')); "
            f"print(any(os.path.abspath(p) == {os.path.join(ROOT, 'python')!r} for p in sys.path)); "
            "torch.nn.Linear(2, 2)(torch.zeros(1, 2))")
    p = run_py(["-c", code], tmp, env={"PYTHONPATH": user})
    check(p.returncode == 0 and "user sitecustomize ran" in p.stderr, f"user sitecustomize: {p.stderr}")
    check(p.stdout.splitlines() == [user, "False"], f"PYTHONPATH/sys.path not restored: {p.stdout}")
    _, ev = only_trace(tmp)
    check(phases_of(ev) == [("phase_begin", "forward"), ("phase_end", "forward")],
          f"forward phase missing with a user sitecustomize: {phases_of(ev)}")
    # Not Python: nothing changes.
    e = dict(os.environ, LD_PRELOAD=LIB, PYTHONPATH="/x", GPUSPY_DIR=tmp)
    p = subprocess.run(["/bin/sh", "-c", "echo $PYTHONPATH"], env=e, capture_output=True, text=True)
    check(p.stdout == "/x\n", "PYTHONPATH changed in a process that is not Python")


@test
def torch_hooks_do_nothing_while_dynamo_traces(tmp):
    """torch.compile: while torch.compiler.is_compiling() says True (Dynamo
    tracing the hooks a compiled function runs), the helper's hooks and
    wrappers call nothing in libgpuspy, which would break the compiled
    graph. On the PyTorch stand-in (tests/progs/faketorch), the model calls
    of steps 2 (the global hook, learning the models) and 4 (the model's
    own hook, learned) are made so: those steps have no forward phase, the
    others keep theirs; the output is the untraced one."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    prog = os.path.join(ROOT, "tests", "progs", "torch_compiling.py")
    env = {"PYTHONPATH": os.path.join(ROOT, "tests", "progs", "faketorch")}
    untraced = run_py([prog], tmp, env=env, preload=False)
    p = run_py([prog], tmp, env=env)
    check(p.returncode == 0 and p.stdout == untraced.stdout == "done True\n" and p.stderr == untraced.stderr,
          f"{p.returncode} {p.stdout!r} {p.stderr[-300:]!r}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    B, N = "phase_begin", "phase_end"
    want = []
    for s in range(5):
        names = ("data", "optimizer", "backward", "optimizer") if s in (2, 4) else \
            ("data", "optimizer", "forward", "backward", "optimizer")
        for name in names:
            want += [(B, name, s), (N, name, s)]
    want += [(B, "data", 5), (N, "data", 5)]
    check(got == want, f"phases {got}")


@test
def torch_compile_sees_no_helper(tmp):
    """torch.compile on the PyTorch stand-in, which compiles a graph again
    when the global module hooks change (Dynamo's guard) and warns when a
    torch.compile(module) is called while one is on, as PyTorch 2.x does:
    a compiled model trained for 2 passes of 4 batches (more than
    GPUSPY_TORCH_LEARN_STEPS) compiles 1 graph traced as untraced, with
    nothing more on stderr (the helper's global hook used to make it 2,
    and warn), through torch.compile(model), model.compile() and a
    compiled model.forward, with libgpuspy's builtins and with the
    helper's Python version; forward still begins at the compiled model's
    call (model.compile()'s used to have none), each step's phases in
    order. A function compiled before the loop (as a library may as it is
    imported) and called after it leaves the helper as it is until that
    call: the eager model's forward is learned as ever (it had none: the
    compile alone stopped the learning)."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    prog = os.path.join(ROOT, "tests", "progs", "torch_compiled.py")
    path = os.path.join(ROOT, "tests", "progs", "faketorch") + os.pathsep + os.path.join(ROOT, "bench", "helper_probe")
    B, N = "phase_begin", "phase_end"
    want = []
    for s in range(8):
        for name in ("data", "forward", "optimizer", "backward", "optimizer"):
            want += [(B, name, s), (N, name, s)]
    want += [(B, "data", 8), (N, "data", 8)]
    for how in ("compile", "method", "forward", "function"):
        untraced = run_py([prog, how], tmp, env={"PYTHONPATH": path}, preload=False)
        check(untraced.returncode == 0 and untraced.stdout == "steps 8 graphs 1 breaks 0\n" and untraced.stderr == "",
              f"{how} untraced: {untraced.returncode} {untraced.stdout!r} {untraced.stderr[-300:]!r}")
        for mode in ("builtins", "python"):
            d = os.path.join(tmp, how + "-" + mode)
            os.makedirs(d)
            p = run_py([prog, how], d, env={"PYTHONPATH": path, "GPUSPY_PROBE": "" if mode == "builtins" else mode})
            check(p.returncode == 0 and p.stdout == untraced.stdout and p.stderr == "",
                  f"{how} {mode}: {p.returncode} {p.stdout!r} {p.stderr[-400:]!r}")
            _, ev = only_trace(d)
            got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
            counts = collections.Counter(n for k, n, _ in got if k == B)
            check(counts == {"data": 9, "forward": 8, "backward": 8, "optimizer": 16} and got == want,
                  f"{how} {mode}: phases {dict(counts)} {got}")


# What a training script does with its model besides training it, after the
# helper has put its forward hook on the model: each as untraced.
TORCH_EXPORT = os.path.join(ROOT, "tests", "progs", "torch_export.py")


def torch_same_run(tmp, what, *args):
    """torch_export.py WHAT run untraced and traced: the same stdout, stderr
    and exit; the traced run's result."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    u = run_py([TORCH_EXPORT, what, *[a.format(run="untraced") for a in args]], tmp, preload=False)
    p = run_py([TORCH_EXPORT, what, *[a.format(run="traced") for a in args]], tmp)
    check((p.returncode, p.stdout, p.stderr) == (u.returncode, u.stdout, u.stderr),
          f"{what}: traced exit {p.returncode} {p.stdout!r}\n{p.stderr[-1500:]}\n---- untraced exit "
          f"{u.returncode} {u.stdout!r}\n{u.stderr[-1500:]}")
    return p


@test
def torch_script_module_trains_as_untraced(tmp):
    """A torch.jit.script'ed Linear trained for 4 steps over a DataLoader:
    stdout, stderr and exit 0 as untraced (when learning ended, the helper's
    hook on the model, which a ScriptModule refuses, raised RuntimeError
    out of the third opt.step()); the global hook stays on for it, so
    forward begins at every step; one note says why. The call builtin
    drops an error of the helper's `after` (learning's end): the step's
    result, or the step's own exception, comes out (it raised the helper's)."""
    p = torch_same_run(tmp, "scripted")
    check(p.returncode == 0 and p.stdout.startswith("steps 4 "), f"{p.returncode} {p.stdout!r}")
    _, ev = only_trace(tmp)
    fwd = [e["step"] for e in ev if e["kind"] == "phase_begin" and e["name"] == "forward"]
    check(fwd == [0, 1, 2, 3, 4], f"forward phases at steps {fwd}")
    want = ["PyTorch phases: a RecursiveScriptModule takes no forward hook "
            "(register_forward_pre_hook is not supported on ScriptModules)"]
    check(notes(tmp) == want, f"notes {notes(tmp)!r}")
    script = ("import gpuspy_torch as g\n"
              "c = g._C\n"
              "c.ctl(1, 1)\n"
              "def bad(): raise KeyError('gpuspy')\n"
              "def boom(): raise ValueError('boom')\n"
              "print(c.call(lambda: 7, 3 | 0x20, (), {}, bad), c.ctl(0, 0))\n"
              "try:\n"
              "    c.call(boom, 3 | 0x20, (), {}, bad)\n"
              "except ValueError as e:\n"
              "    print('raised', repr(e), e.__context__, c.ctl(0, 0))\n")
    d = os.path.join(tmp, "after")
    os.makedirs(d)
    p = run_py(["-c", script], d)
    check(p.returncode == 0 and p.stdout == "7 1\nraised ValueError('boom') None 2\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")


LOAD = ("import sys, torch\n"
        "from typing import Tuple\n"
        "def keep(module, inputs: Tuple[torch.Tensor]) -> None:\n"
        "    return None\n"
        "for path in sys.argv[1:]:\n"
        "    m = torch.load(path)\n"
        "    print([h.__name__ for h in m._forward_pre_hooks.values()], m(torch.ones(1, 4)).tolist())\n")


@test
def torch_saved_model_loads_without_gpuspy(tmp):
    """torch.save(model) after training (the helper's hook on the model):
    the file loads in a process without gpuspy, with the program's own
    pre-hook only, as the untraced run's file does (gpuspy's builtin
    pickled as getattr(None, 'gpuspy_torch_hook'): an AttributeError at
    every load); pickle.dumps and copy.deepcopy of the model give a module
    with the program's hook only, a shallow copy.copy shares the model's
    hooks, all as untraced. The model keeps its hook's handle: a deep
    copy's handle removes the copy's hook (it removed from a dict of its
    own, the copy keeping its hook), and the file, which holds the handle,
    loads. The same for a module the helper adopted (as it does a
    torch.compile'd one)."""
    p = torch_same_run(tmp, "save", os.path.join(tmp, "{run}.pt"))
    check(p.returncode == 0 and p.stdout.count("\n1 [[") == 2 and
          p.stdout.endswith("model keeps 0\ncopy after remove 0\n"), f"{p.stdout!r}")
    files = [os.path.join(tmp, f) for f in ("untraced.pt", "traced.pt")]
    load = run_py(["-c", LOAD, *files], tmp, preload=False)
    lines = load.stdout.splitlines()
    check(load.returncode == 0 and len(lines) == 2 and lines[0] == lines[1] and lines[0].startswith("['keep'] [["),
          f"{load.returncode} {load.stdout!r} {load.stderr[-500:]}")
    adopted = os.path.join(tmp, "adopted.pt")
    script = ("import copy, sys, torch, gpuspy_torch as g\n"
              "m = torch.nn.Linear(4, 2)\n"
              "g._adopt(m)\n"
              "torch.save(m, sys.argv[1])\n"
              "print(len(m._forward_pre_hooks), len(copy.deepcopy(m)._forward_pre_hooks))\n")
    p = run_py(["-c", script, adopted], tmp)
    check(p.returncode == 0 and p.stdout == "1 0\n", f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    load = run_py(["-c", LOAD, adopted], tmp, preload=False)
    check(load.returncode == 0 and load.stdout.startswith("[] [["), f"{load.stdout!r} {load.stderr[-500:]}")


@test
def torch_jit_script_and_trace_after_training(tmp):
    """torch.jit.script and torch.jit.trace of a model after training (the
    helper's hook on it, beside the program's own TorchScript pre-hook):
    both run and give the untraced output, nothing more on stderr
    (TorchScript compiled the helper's builtin hook: AttributeError, no
    __globals__). The model keeps its hooks in their order."""
    p = torch_same_run(tmp, "jit")
    check(p.returncode == 0 and p.stdout.splitlines()[1].startswith("script [[") and p.stdout.endswith(" True\n"),
          f"{p.stdout!r}")
    script = ("import torch, gpuspy_torch as g\n"
              "from typing import Tuple\n"
              "def keep(module, inputs: Tuple[torch.Tensor]) -> None:\n"
              "    return None\n"
              "m = torch.nn.Sequential(torch.nn.Linear(4, 2))\n"
              "m.register_forward_pre_hook(keep)\n"
              "g._adopt(m)\n"
              "g._adopt(m[0])\n"
              "m.register_forward_pre_hook(keep)\n"
              "before = [list(x._forward_pre_hooks.items()) for x in m.modules()]\n"
              "s = torch.jit.script(m)\n"
              "print(len(s._forward_pre_hooks), before == [list(x._forward_pre_hooks.items()) for x in m.modules()],"
              " [len(b) for b in before])\n")
    prog = os.path.join(tmp, "hooks_kept.py")  # TorchScript reads the hook's source
    with open(prog, "w") as f:
        f.write(script)
    p = run_py([prog], tmp)
    check(p.returncode == 0 and p.stdout == "2 True [3, 1]\n", f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")

