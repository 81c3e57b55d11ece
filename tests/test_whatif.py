# SPDX-License-Identifier: MIT
"""The what-if suite (tests/gpu/whatif/, docs/measurements.md) scored on
its committed traces: each slow program's report against the saving its
fix realized when made and run on the GPU, and the parts of each error,
so that a change to the model that makes it worse fails here."""
import json
import os
import re
import statistics
import subprocess
import sys
import threading

from harness import BIN, SANITIZED, Skip, check, test

sys.path.insert(0, os.path.join(os.path.dirname(BIN), "gpu", "whatif"))
from score import own_line  # noqa: E402  (the line a diagnosis names, as score.py reads it)

_rows = []
_lock = threading.Lock()


def scored():
    """score.py --json's rows over every committed set (run once; the
    tests run in threads). Not under the sanitizers: their numbers are the
    plain lane's, and the fixtures' tests run the replay on real traces
    there (about a minute of CI saved)."""
    if SANITIZED:
        raise Skip("scored in the plain lane; the fixtures' reports replay real traces under the sanitizers")
    with _lock:
        if not _rows:
            score = os.path.join(os.path.dirname(BIN), "gpu", "whatif", "score.py")
            _rows.extend(json.loads(subprocess.run([sys.executable, score, "--json", os.path.join(
                os.path.dirname(BIN), "..", "tools", "gpuspy")], capture_output=True, text=True, timeout=600).stdout))
        return _rows


# The line of each program that its first diagnosis names (tests/gpu/whatif/):
# run1-run7, traced before a launch kept its stack by default, and from
# run8 on, every program's (the C program's, built without -g, names its
# function only, where its binary is).
LINE = {"pageable": "pageable.py:19", "item": "item.py:29", "empty_cache": "empty_cache.py:23"}
LINE_NOW = dict(LINE, dataloader="dataloader.py:31", launch_bound="launch_bound.py:21-23",
                decode="decode.py:35-43", jax_hostbound="jax_hostbound.py:50")


def line(name, program):
    return (LINE_NOW if name not in {f"run{i}" for i in range(1, 8)} else LINE).get(program)


def named_right(name, program, at):
    """Whether a program's first diagnosis names its line: decode's is the
    span of forward()'s lines whose launches kept a stack (a launch's is
    sampled every 10 ms, so the span moves by process: 35-43 in run8,
    33-40 in run10, 31-40 in run11 and run12), each within forward's body (decode.py:31-45)."""
    want = line(name, program)
    if program != "decode" or want is None or at is None:
        return at == want
    m = re.fullmatch(r"decode\.py:(\d+)(?:-(\d+))?", at)
    return bool(m) and 31 <= int(m.group(1)) <= int(m.group(2) or m.group(1)) <= 45


# Each what-if set's error (median, worst) with today's report. run3 (6%,
# 17%), run5 (1%, 7%), run7 (6%, 27%) and run8 (1%, 15%) meet the issue's
# target (median 15% or less, none beyond 30%). run1 (5%, 41%) and run2 (12%,
# 66%) traced each program once against two untraced rounds, and processes of
# one program differ by 20-30% on the H200 (run2's DataLoader +46%); both miss
# it by the JAX loop, whose one traced process replays its slow step 0.015 and
# 0.053 ms under their untraced medians (-41%, -66%). The JAX loop's slow step
# replays within 0.001 ms of the untraced median in run3-run5, +0.020 in run6
# (+31%), since a JAX graph launch under CUPTI keeps 12% of its time and the
# gap before it loses 30% of what the launch lost (docs/design.md#replay);
# with the launch alone run at 2.2 us and 0.2 us a node, that step sat 12-35
# us over the median in run3-run6, the loop's errors +33%, +16%, +61%, +56%.
# Its kernels' overlap kept (XLA starts each up to a few hundred ns before the
# last ends) took 6-8 us a step off the replayed fix. run4 (12%, 32%: decode
# -32%, whose untraced slow step ran 1.76 to 3.41 ms in eight processes, the
# traced one's replayed 2.01 ms against their median 2.76). run5 ran each
# round's three runs in a random order (run4's traced pageable program, always
# run after the fixed one, ran faster than the untraced); its empty_cache()
# loop's pool saves 1.108 ms against 1.117 at 2.3% of the step (the floor of a
# change worth making is 2%). run6's slow programs ran further apart by
# process than run5's (pageable 17.5 to 20.7 ms, the DataLoader 31.4 to 41.1,
# decode 1.74 to 3.70: decode +29%). .item()'s change keeps the wait of one
# step in 20, as the advice and its fix read every 20 steps: +0% to +1% in six
# sets, +5% in run6 (+6% to +10% when it kept none). run7, the whole suite run
# again with this model, misses most by the two pageable programs (-26%,
# -23%), whose traced processes ran faster than the untraced ones (pageable
# 17.8 to 18.5 ms a step against 17.8 to 22.1): pageable's error is negative
# in nine sets of twelve (+1% in run5 and run10, +13% in run11), its change
# replayed within 0.1 ms of the fixed program in all, PyTorch's synchronize
# after a blocking copy dropped with non_blocking=True. run9 (4%, 6%), eight
# of the ten programs on another H100 with today's defaults (the device time
# of its session ran out before the launch-bound and decode loops). run10 (3%,
# 12%: the JAX loop +12%, whose saving is 0.020 ms), all ten programs on a
# third H100 with today's defaults, every first diagnosis right and at its
# line, every fixed program quiet. run11 (9%, 58%), all ten on the H200 with
# today's library, misses by the JAX loop (-58%: its five traced processes
# predicted 0.020-0.031 ms, its untraced slow processes ran 0.074 to 0.149 ms
# a step); without it, decode's -14% is the worst. The replay's window then
# grew from 250 ms to 2 s within the later half of the steps (a host-bound
# process moves between a fast and a slow speed every few hundred ms:
# jax-spread-h100.md, its 52m and 52l parts): these sets' runs are short, the
# half rule binds, and run3 (9%), run4 (19%, 36%: the JAX loop -3% to +36%),
# run6 (37%) and run8 (27%) read worse, within those loops' one standard
# error (20-24% of their savings); over runs of 30000 steps on an H100 the
# JAX loop's error went from -31% to -8%. run12 (10%, 25%), all ten on an H100
# with the 2 s window and the 30000-step JAX loop (-14%), meets the target:
# its worst, pageable -25%, is within 1.7 of its standard errors (15%).
# run13 (16%, 28%), all ten on H100s (the JAX loop in a later session's
# call: +22%), misses the median by a point: its worst, empty_cache +28%,
# is within 2.6 of its standard errors (11%).
SET_BOUNDS = {"run1": (0.07, 0.41), "run2": (0.12, 0.67), "run3": (0.10, 0.18), "run4": (0.20, 0.37),
              "run5": (0.02, 0.09), "run6": (0.12, 0.38), "run7": (0.08, 0.28), "run8": (0.02, 0.28),
              "run9": (0.05, 0.07), "run10": (0.04, 0.13), "run11": (0.10, 0.60),
              "run12": (0.11, 0.26), "run13": (0.17, 0.29)}


@test
def whatif_suite_predictions_hold_on_the_gpu_traces(tmp):
    """The what-if suite (tests/gpu/whatif/, docs/measurements.md): ten
    programs run on the H200 slow and fixed, untraced in rounds (the
    saving each fix realized: realized.json), and traced; each run of the
    suite is a set (run1: whatif/, run2 to run13: whatif/runN; run4 to
    run10, run12 and run13 ran on an H100, their realized.json's card).
    From each slow
    program's trace the report must (a) give the diagnosis the fix
    answers first (none for the one-time upload and the healthy loop), at
    the program's own line: in run1-run7 the pageable copy, the .item()
    and the empty_cache() (their launches kept no stack then); from run8,
    traced with a launch's stack sampled every 10 ms and the DataLoader
    marked where it was made, the launch-bound step's, decode's forward,
    the JAX loop's dispatch and the DataLoader's too (the C program's
    copy names its function, built without -g, on the GPU machine only),
    (b) predict a saving a step never more than the step, and (c) make no
    such diagnosis of the fixed program. The one exception to (c) is
    measured: run1's 6-worker DataLoader was still data-bound (12
    workers ran its step at 3.04 ms against 6 workers' 3.49 ms). Each set
    is held to the errors it gives with today's report (SET_BOUNDS), so
    that a change to the model that makes one worse fails here."""
    rows = scored()
    sets = sorted({r["set"] for r in rows})
    check(sets == ["run1", "run10", "run11", "run12", "run13", "run2", "run3", "run4", "run5", "run6", "run7", "run8",
                   "run9"] and len(rows) == 128,
          f"{sets}, {len(rows)} rows")
    for name in sets:
        errs = []
        for r in (r for r in rows if r["set"] == name):
            what = f"{name} {r['program']}"
            check(r["first"] == r["want"], f"{what}: first diagnosis {r['first']}, want {r['want']}")
            check(named_right(name, r["program"], r["at"]), f"{what}: at {r['at']}, want {line(name, r['program'])}")
            if r["want"]:
                check(r["predicted_ms"] is not None, f"{what}: no saving a step")
                check(r["predicted_ms"] * 1e6 <= r["step"]["step_ns"], f"{what}: saving beyond the step")
                errs.append(abs(r["error"]))
                check(abs(r["error"]) <= SET_BOUNDS[name][1], f"{what}: error {r['error']:+.0%}")
            if (name, r["program"]) != ("run1", "dataloader"):
                check(not r["fixed_says"], f"{what}: the fixed run still says {r['fixed_says']}")
        check(statistics.median(errs) <= SET_BOUNDS[name][0], f"{name}: median error {statistics.median(errs):.0%}")


@test
def whatif_changes_replay_close_to_the_fixed_programs(tmp):
    """Each error's second part (score.py --parts): the step replayed with
    the change against the fixed program's untraced median. The first part,
    the replayed slow step against the slow program's, carries the traced
    process's own speed (decode's untraced step ran 1.76 to 3.41 ms by
    process in run4); this one carries little of it where the fix is
    GPU-bound (the JAX loop's and the DataLoader's changes keep the host's
    own work), so it holds each change's model to what it gave: within 8%
    of the realized saving, but for run1-run3's C program, which ran its
    fix on two streams, a change the replay does not model (11-14%: its
    copy back replayed blocking, as a program that reads what it copies
    back must, not running ahead as that fix did), and
    run10's empty_cache() loop (+12.6%: its fixed program's three untraced
    rounds ran 46.81 to 47.07 ms, a spread of 19% of its 1.38 ms saving,
    and the change replays at 47.01, within them), and run13's (-8.5%:
    its three ran 46.82 to 47.12 ms, 19% of its 1.60 ms saving, and the
    change replays at 46.92, within them). In run4 (an H100):
    pageable +0.094 ms, the DataLoader -0.762 (its fix ran 6 workers,
    which still waited), .item() -0.101 (its fix reads the losses once
    every 20 steps, as the replay does: -0.315 when it kept no wait),
    launch_bound +0.056, decode +0.003, empty_cache -0.043, the C program
    -0.026. The JAX loop's fix replays within 1.3 us of the fixed
    program's 0.051 ms in every set (-0.4% to +4.1% of the saving), its
    kernels' overlap kept; run back to back, they replayed 6-8 us over
    it, 37% of run5's saving. In run7 the
    largest is the DataLoader's, +0.858 ms (+3.2%)."""
    rows = [r for r in scored() if r["want"] and r["predicted_ms"] is not None]
    check(len(rows) == 102, f"{len(rows)} rows")
    err = {}
    for r in rows:
        rc = r["step"]["replayed_step_ns"] / 1e6 - r["predicted_ms"]
        e = (rc - r["untraced_ms"][1]) / r["realized_ms"]
        err[(r["set"], r["program"])] = e
        bound = 0.14 if (r["program"], r["set"]) in {("sync_copies", "run1"), ("sync_copies", "run2"),
                                                      ("sync_copies", "run3"), ("empty_cache", "run10"),
                                                      ("empty_cache", "run13")} else 0.08
        check(abs(e) <= bound, f"{r['set']} {r['program']}: the change replayed {e:+.1%} of the saving off the fix")
    check(abs(err[("run4", "decode")]) < 0.01 and abs(err[("run4", "launch_bound")]) < 0.03,
          f"run4's graphs: {err[('run4', 'decode')]:+.2%}, {err[('run4', 'launch_bound')]:+.2%}")


@test
def each_diagnosis_names_its_line_on_traces_from_the_gpu(tmp):
    """The launch-bound, decode, JAX and DataLoader programs of the what-if
    suite, slow, traced on an H100 with the defaults (tests/gpu/pending.sh
    PART=52s and 52L: tests/fixtures/h200/lines-h100/, and
    tests/gpu/results/round3/traced-cost-h100.md): a launch's stack
    sampled every 10 ms gives the first diagnosis the function the step
    launches from, with its lines (the step's function, the decoder's
    forward, the JAX loop's dispatch), past gpuspy's own PyTorch helper
    frames between them; the helper's mark gives the DataLoader's diagnosis
    the line where the loader was made."""
    import tarfile
    want = {"launch_bound-slow": ("launch_bound", "eager (tests/gpu/whatif/launch_bound.py:21-23)"),
            "decode-slow": ("launch_bound", "forward (tests/gpu/whatif/decode.py:34-40)"),
            "jax_hostbound-slow": ("host_bound", "timed_loop (tests/gpu/whatif/jax_hostbound.py:50)"),
            "dataloader-slow": ("data_starvation", "<module> (tests/gpu/whatif/dataloader.py:31)")}
    fix = os.path.join(os.path.dirname(BIN), "fixtures", "h200", "lines-h100")
    gpuspy = os.path.join(os.path.dirname(BIN), "..", "tools", "gpuspy")
    for name, (diag, line) in want.items():
        with tarfile.open(os.path.join(fix, name + ".tar.gz")) as t:
            t.extractall(tmp)
        p = subprocess.run([gpuspy, "report", "--json", os.path.join(tmp, name, "trace.gspy")], capture_output=True,
                           text=True, timeout=300)
        d = json.loads(p.stdout)["diagnoses"][0]
        text = d["text"].replace("/work/main/", "")
        check(d["id"] == diag and line in text.split("\n")[0], f"{name}: {d['id']}: {text}")


@test
def the_gpu_machines_reports_name_each_programs_line(tmp):
    """From run9 on, import.py keeps the first diagnosis each slow
    program's median round got from the report on the GPU machine, where
    the program's binary is: there the C program, built with -g, names
    its copy's line (sync_copies.cu:50: the synchronous host-to-device
    cudaMemcpy), which the report here cannot (its frames are offsets in
    a binary this machine lacks). Every Python program's line is the one
    the reports here give (LINE_NOW; decode's span within forward()); the
    quiet loops have none. run9 lacks the launch-bound and decode loops."""
    diag = {"pageable": "pageable_copies", "dataloader": "data_starvation", "item": "step_waits",
            "empty_cache": "allocation_churn", "jax_hostbound": "host_bound", "sync_copies": "pageable_copies",
            "launch_bound": "launch_bound", "decode": "launch_bound"}
    for name, missing in (("run9", {"launch_bound", "decode"}), ("run10", set()), ("run11", set()), ("run12", set()),
                          ("run13", set())):
        path = os.path.join(os.path.dirname(BIN), "fixtures", "h200", "whatif", name, "realized.json")
        programs = json.load(open(path))["programs"]
        check(sorted(programs) == sorted((set(diag) | {"upload_once", "healthy"}) - missing), f"{sorted(programs)}")
        for p, v in programs.items():
            first = v.get("gpu_first")
            if p not in diag:
                check(first is None, f"{name} {p}: {first}")
                continue
            at = own_line(first)
            right = at == "sync_copies.cu:50" if p == "sync_copies" else named_right(name, p, at)
            check(first and first["id"] == diag[p] and right, f"{name} {p}: {first}")


@test
def import_keeps_the_gpu_machines_first_diagnosis(tmp):
    """import.py on a run.sh $OUT of two programs: the slow and fixed
    traces of the median round become the set's fixtures, and each
    program's first diagnosis as the GPU machine's report said it, its
    first line (the finding, not the change), is kept as gpu_first; a
    program with none keeps none."""
    import tarfile
    src = os.path.join(tmp, "out")
    os.makedirs(src)
    rows = [{"program": "sync_copies", "slow_ms": [8.0], "fixed_ms": [2.0], "realized_ms": 6.0, "median_round": 2,
             "predictions_ms": [5.9], "slow_diagnoses": [
                 {"id": "pageable_copies", "text": "65 copies in main (sync_copies.cu:50).\nPin the source."},
                 {"id": "step_waits", "text": "a second one"}]},
            {"program": "healthy", "slow_ms": [12.0], "fixed_ms": [12.0], "realized_ms": 0.0, "median_round": 1,
             "slow_diagnoses": []}]
    json.dump(rows, open(os.path.join(src, "whatif.json"), "w"))
    open(os.path.join(src, "card.txt"), "w").write("NVIDIA H100 80GB HBM3\n")
    with tarfile.open(os.path.join(src, "traces.tar.xz"), "w:xz") as t:
        for prog, r in (("sync_copies", 2), ("healthy", 1)):
            for d in (f"slow-t{r}", "fixed-t1"):
                path = os.path.join(tmp, "t.gspy")
                open(path, "wb").write(f"{prog} {d}".encode())
                t.add(path, f"{prog}/{d}/gpuspy-vm-1.gspy")
    imp = os.path.join(os.path.dirname(BIN), "gpu", "whatif", "import.py")
    dest = os.path.join(tmp, "set")
    p = subprocess.run([sys.executable, imp, src, dest], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, p.stderr)
    got = json.load(open(os.path.join(dest, "realized.json")))
    check(got["card"] == "NVIDIA H100 80GB HBM3", got["card"])
    sc = got["programs"]["sync_copies"]
    check(sc["gpu_first"] == {"id": "pageable_copies", "text": "65 copies in main (sync_copies.cu:50)."} and
          sc["realized_ms"] == 6.0 and "gpu_first" not in got["programs"]["healthy"], f"{got['programs']}")
    with tarfile.open(os.path.join(dest, "sync_copies-slow.tar.gz")) as t:
        names = [m.name for m in t.getmembers()]
        data = t.extractfile("sync_copies-slow/gpuspy-vm-1.gspy").read()
    check(names == ["sync_copies-slow", "sync_copies-slow/gpuspy-vm-1.gspy"] and data == b"sync_copies slow-t2",
          f"{names} {data}")
