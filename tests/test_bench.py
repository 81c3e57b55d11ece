# SPDX-License-Identifier: MIT
"""The benchmark scripts' own logic (lock-step scheduling, the overhead table)."""
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
def lockstep_bench_hands_out_turns(tmp):
    """bench/gpu_lockstep.py without a GPU (bench/lockstep_stub.py speaks
    loops.py's --lockstep): every process runs exactly WINDOWS windows, each
    round hands the turn to every mode once in a random order, the table has
    a row per mode in order over all rounds but the first and last, with
    the CPU per step the stub reported (median, added to untraced's) and its
    context switches and CPUs (lockstep_sched.txt), a gpuspy variant mode gets its
    variables, a replica ("gpuspy #2") its mode's, a bare collector variant its options,
    ALT_LIB=1 the other build (LOCKSTEP_ALT_LIB) and HOST_SHIM=1
    the host library beside it, and BLOCKING_SYNC=1 reaches every loop."""
    if SANITIZED:
        raise Skip("the bench is not the library")
    work, out = os.path.join(tmp, "w"), os.path.join(tmp, "o")
    os.makedirs(work)
    os.makedirs(out)
    modes = ["untraced", "untraced b", "gpuspy", "gpuspy GPUSPY_CUPTI=on", "gpuspy GPUSPY_CUPTI=on #2",
             "bare cupti CUPTI_COUNT_TS=1 CUPTI_COUNT_CB=1", "gpuspy ALT_LIB=1 HOST_SHIM=1"]
    alt = os.path.join(tmp, "alt", "libgpuspy.so")
    os.makedirs(os.path.dirname(alt))
    open(alt, "w").close()
    env = dict(os.environ, LOOP_CMD=f"{sys.executable} {os.path.join(ROOT, 'bench', 'lockstep_stub.py')}",
               WINDOWS="7", MODES=",".join(modes + ["nonsense #2"]), STUB_SLOW_on="1.2", BLOCKING_SYNC="1",
               LOCKSTEP_ALT_LIB=alt)
    env.pop("PIN_CPUS", None)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu_lockstep.py"), work, out], env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"bench failed: {p.stderr[-800:]}")
    rows = [l.split(" | ")[0].lstrip("| ") for l in p.stdout.splitlines() if l.startswith("| ") and "---" not in l]
    check(rows == ["mode"] + modes, f"table rows {rows}")
    check("5 rounds of 50-step windows (the first and last left out)" in p.stdout and
          "waits block (--blocking-sync)" in p.stdout, f"rounds: {p.stdout[:400]}")
    # the stub's CPU per step: 1000 us x its slowdown + window number mod 3 (rounds 1..5: +1 +2 +0 +1 +2)
    cells = {l.split(" | ")[0].lstrip("| "): [c.strip() for c in l.strip(" |").split(" | ")[-3:]]
             for l in p.stdout.splitlines() if l.startswith("| ") and "---" not in l}
    check(cells["untraced"] == ["1001.0", "+0.0", "1101.0"] and
          cells["gpuspy GPUSPY_CUPTI=on"] == ["1201.0", "+200.0", "1301.0"] and
          cells["gpuspy GPUSPY_CUPTI=on #2"] == ["1201.0", "+200.0", "1301.0"], f"CPU columns {cells}")
    cpu = open(os.path.join(out, "lockstep_cpu.txt")).read().splitlines()
    check(len(cpu) == 8 and cpu[0] == "# loop=mlp" and
          cpu[1].startswith("untraced: 1000.0/1100.0 1001.0/1101.0 1002.0/1102.0 1000.0/"), f"lockstep_cpu.txt {cpu[:2]}")
    sched = open(os.path.join(out, "lockstep_sched.txt")).read().splitlines()
    check(len(sched) == 7 and sched[0] == "untraced: 0@0 1@1 0@2 1@3 0@0 1@1 0@2", f"lockstep_sched.txt {sched[:2]}")
    lines = open(os.path.join(out, "lockstep_rates.txt")).read().splitlines()
    check(lines[0] == "# loop=mlp", f"rates file's first line {lines[0]!r}")
    rates = dict(l.split(": ", 1) for l in lines[1:])
    check(list(rates) == modes and all(len(r.split()) == 7 for r in rates.values()), f"rates {rates}")
    orders = [l.split() for l in open(os.path.join(out, "lockstep_order.txt")).read().splitlines()]
    names = sorted(m.replace(" ", "_") for m in modes)
    check(len(orders) == 7 and all(sorted(o) == names for o in orders), f"turn orders {orders}")
    check(len({tuple(o) for o in orders}) > 1, "the same order every round")
    seen = {m: open(os.path.join(work, "lockstep-" + re.sub(r"[ +/#]", "_", m), "stub_env.txt")).read().split()
            for m in modes}
    check(seen["untraced"] == ["GPUSPY_CUPTI=", "LD_PRELOAD=", "blocking"] and
          seen["gpuspy"] == ["GPUSPY_CUPTI=off", "LD_PRELOAD=" + LIB, "blocking"] and
          seen["gpuspy GPUSPY_CUPTI=on"] == ["GPUSPY_CUPTI=on", "LD_PRELOAD=" + LIB, "blocking"] and
          seen["gpuspy GPUSPY_CUPTI=on #2"] == seen["gpuspy GPUSPY_CUPTI=on"] and
          seen["bare cupti CUPTI_COUNT_TS=1 CUPTI_COUNT_CB=1"] ==
          ["GPUSPY_CUPTI=", "LD_PRELOAD=", "blocking", "CUPTI_COUNT_CB=1", "CUPTI_COUNT_TS=1"] and
          seen["gpuspy ALT_LIB=1 HOST_SHIM=1"] ==
          ["GPUSPY_CUPTI=off", "LD_PRELOAD=" + alt + ":" + os.path.join(tmp, "alt", "libgpuspy-host.so"),
           "blocking"],
          f"mode environments {seen}")


@test
def lockstep_bench_refuses_a_missing_other_build(tmp):
    """A mode with ALT_LIB=1 and LOCKSTEP_ALT_LIB naming no file: one line,
    exit 1, before any loop runs."""
    if SANITIZED:
        raise Skip("the bench is not the library")
    work, out = os.path.join(tmp, "w"), os.path.join(tmp, "o")
    os.makedirs(work)
    os.makedirs(out)
    env = dict(os.environ, LOOP_CMD=f"{sys.executable} {os.path.join(ROOT, 'bench', 'lockstep_stub.py')}",
               WINDOWS="3", MODES="untraced,gpuspy ALT_LIB=1", LOCKSTEP_ALT_LIB=os.path.join(tmp, "missing.so"))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu_lockstep.py"), work, out], env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and p.stderr.count("\n") == 1 and "LOCKSTEP_ALT_LIB" in p.stderr,
          f"a missing other build: rc {p.returncode} {p.stderr!r}")
    check(os.listdir(out) == [], f"the bench wrote {os.listdir(out)}")


def _overhead_rows(tmp, files):
    """bench/overhead_table.py on made-up files {name: text}: its table rows."""
    paths = []
    for name, text in files.items():
        paths.append(os.path.join(tmp, name))
        with open(paths[-1], "w") as f:
            f.write(text)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "overhead_table.py"), *paths],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"failed: {p.stderr[-500:]}")
    return [l for l in p.stdout.splitlines() if l.startswith("| ") and "---" not in l and "| loop |" not in l]


@test
def overhead_table_pools_lockstep_runs(tmp):
    """bench/overhead_table.py on two made-up lock-step runs of 6 windows
    (a conv one named by its first line, an mlp one without): rounds 1..4 of
    each, ratios to the untraced window of the same round, the CPU each
    mode adds to untraced's per round; intervals from the same rounds; a
    replica ("bare cupti #2") is a row of its own, pooled with its mode's
    other processes in a row of their own, and a second process of its
    mode in the per-process list."""
    rows = _overhead_rows(tmp, {
        # gpuspy at 0.9 of untraced in rounds 1..4; rounds 0 and 5 wild
        "a_rates.txt": "# loop=conv\nuntraced: 100 200 300 400 500 600\ngpuspy: 500 180 270 360 450 10\n",
        # no loop line: mlp; bare cupti at 0.8, gpuspy+cupti 0.75 of bare
        "b_rates.txt": "untraced: 100 100 100 100 100 100\nbare cupti: 80 80 80 80 80 80\n"
                       "gpuspy+cupti: 60 60 60 60 60 60\nbare cupti #2: 1 70 70 70 70 1\n",
        # main/all threads us per step
        "a_cpu.txt": "# loop=conv\nuntraced: 9/9 1000/1100 1000/1100 1000/1100 1000/1100 9/9\n"
                     "gpuspy: 1/1 1040/1160 1050/1150 1060/1170 1050/1190 1/1\n"})
    want = ["| conv (lock step) | gpuspy / untraced | 4 | 0.900 | 0.900..0.900 |",
            "| mlp (lock step) | bare cupti / untraced | 4 | 0.800 | 0.800..0.800 |",
            "| mlp (lock step) | gpuspy+cupti / untraced | 4 | 0.600 | 0.600..0.600 |",
            "| mlp (lock step) | bare cupti #2 / untraced | 4 | 0.700 | 0.700..0.700 |",
            "| mlp (lock step) | gpuspy+cupti / bare cupti | 4 | 0.750 | 0.750..0.750 |",
            "| mlp (lock step) | bare cupti, every process / untraced | 8 | 0.750 | 0.700..0.800 |",
            "| conv (lock step) | gpuspy | 4 | +50.0 | +40.0..+60.0 | +65.0 | +50.0..+90.0 |",
            "| mlp (lock step) | bare cupti | 2 | 0.800 0.700 | 0.700..0.800 | 0.750 | (too few) |"]
    check(rows == want, f"table rows {rows}")


@test
def overhead_table_divides_an_ab_of_one_setting(tmp):
    """An A/B of one setting ("gpuspy ALT_LIB=1") is divided by plain
    gpuspy, each side its processes' mean per round (84 against 80)."""
    rows = _overhead_rows(tmp, {"ab_rates.txt":
                                "# loop=ab\nuntraced: 100 100 100 100 100 100\ngpuspy: 1 90 90 90 90 1\n"
                                "gpuspy #2: 1 70 70 70 70 1\ngpuspy ALT_LIB=1: 1 88 88 88 88 1\n"
                                "gpuspy ALT_LIB=1 #2: 1 80 80 80 80 1\n"})
    check(rows == ["| ab (lock step) | gpuspy / untraced | 4 | 0.900 | 0.900..0.900 |",
                   "| ab (lock step) | gpuspy #2 / untraced | 4 | 0.700 | 0.700..0.700 |",
                   "| ab (lock step) | gpuspy ALT_LIB=1 / untraced | 4 | 0.880 | 0.880..0.880 |",
                   "| ab (lock step) | gpuspy ALT_LIB=1 #2 / untraced | 4 | 0.800 | 0.800..0.800 |",
                   "| ab (lock step) | gpuspy, every process / untraced | 8 | 0.800 | 0.700..0.900 |",
                   "| ab (lock step) | gpuspy ALT_LIB=1, every process / untraced | 8 | 0.840 | 0.800..0.880 |",
                   "| ab (lock step) | gpuspy ALT_LIB=1 / gpuspy, the processes' mean per round | 4 | 1.050 "
                   "| 1.050..1.050 |",
                   "| ab (lock step) | gpuspy | 2 | 0.900 0.700 | 0.700..0.900 | 0.800 | (too few) |",
                   "| ab (lock step) | gpuspy ALT_LIB=1 | 2 | 0.880 0.800 | 0.800..0.880 | 0.840 | (too few) |"],
          f"A/B rows {rows}")


@test
def overhead_table_interval_over_processes(tmp):
    """Twelve gpuspy processes at 0.91..1.02 of untraced: the median of the
    processes' medians and its order-statistics interval (x(3)..x(10) of
    twelve)."""
    rows = _overhead_rows(tmp, {"twelve_rates.txt": "# loop=twelve\nuntraced: 100 100 100 100 100 100\n" + "".join(
        f"gpuspy{' #%d' % k if k > 1 else ''}: 1 {90 + k} {90 + k} {90 + k} {90 + k} 1\n" for k in range(1, 13))})
    twelve = [l for l in rows if "| 12 |" in l]
    check(twelve == ["| twelve (lock step) | gpuspy | 12 | " + " ".join(f"{0.9 + k / 100:.3f}" for k in range(1, 13))
                     + " | 0.910..1.020 | 0.965 | 0.930..1.000 |"], f"twelve processes {twelve}")


@test
def overhead_table_by_pair(tmp):
    """Six gpuspy+cupti #k / bare cupti #k pairs (0.91..0.96 of bare): each
    pair's median is one draw of a by-pair row."""
    rows = _overhead_rows(tmp, {"pairs_rates.txt": "# loop=pairs\nuntraced: 100 100 100 100 100 100\n" + "".join(
        f"gpuspy+cupti{s}: 1 {90 + k} {90 + k} {90 + k} {90 + k} 1\nbare cupti{s}: 1 99 99 99 99 1\n"
        for k, s in ((k, " #%d" % k if k > 1 else "") for k in range(1, 7)))})
    pairs = [l for l in rows if "by pair" in l]
    check(pairs == ["| pairs (lock step) | gpuspy+cupti / bare cupti, by pair | 6 | "
                    + " ".join(f"{(90 + k) / 99:.3f}" for k in range(1, 7))
                    + f" | {91 / 99:.3f}..{96 / 99:.3f} | {93.5 / 99:.3f} | {91 / 99:.3f}..{96 / 99:.3f} |"],
          f"pairs {pairs}")


@test
def lockstep_sched_reads_switches_by_cpu(tmp):
    """bench/lockstep_sched.py on a made-up run of 6 windows (the first and
    last left out): each process's median ratio to untraced, its involuntary
    switches a window (mean, max), its rate over its own median on each CPU
    it ended a window on, and all processes by CPU; a run without an
    untraced process and an odd number of files are refused in one line."""
    rates, sched = os.path.join(tmp, "rates.txt"), os.path.join(tmp, "sched.txt")
    with open(rates, "w") as f:
        f.write("# loop=mlp\nuntraced: 1 100 100 100 100 1\ngpuspy: 1 90 90 45 90 1\n")
    with open(sched, "w") as f:
        f.write("untraced: 9@7 0@2 0@2 1@3 0@3 9@7\ngpuspy: 9@7 0@4 2@4 4@5 0@4 9@7\n")
    tool = [sys.executable, os.path.join(ROOT, "bench", "lockstep_sched.py")]
    p = subprocess.run(tool + [rates, sched], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"failed: {p.stderr[-500:]}")
    rows = [l for l in p.stdout.splitlines() if l.startswith("| ") and "---" not in l and "| process |" not in l]
    check(p.stdout.startswith(f"{rates} (4 windows)\n"), f"heading {p.stdout[:80]!r}")
    check(rows == ["| untraced | 1.000 | 0.25, 1 | 2: 1.000 (2) 3: 1.000 (2) |",
                   "| gpuspy | 0.900 | 1.50, 4 | 4: 1.000 (3) 5: 0.500 (1) |",
                   "| all processes | | | 2: 1.000 (2) 3: 1.000 (2) 4: 1.000 (3) 5: 0.500 (1) |"],
          f"rows {rows}")
    with open(rates, "w") as f:
        f.write("gpuspy: 1 90 90 45 90 1\n")
    for args, want in (([rates, sched], "no untraced process"), ([rates], "usage:")):
        p = subprocess.run(tool + args, capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and want in p.stderr and len(p.stderr.splitlines()) == 1,
              f"{args}: {p.returncode} {p.stderr!r}")


@test
def jax_step_bench_makes_what_a_jax_step_records(tmp):
    """bench_call jax-cold stands for the H200's JAX step (bench/run.py,
    bench/jax_step_instr.sh): per step, the module's range, a stream's
    wait, a graph launch and a host function are recorded, and its twenty
    thunk ranges nested in the module's range are not (1000 warm-up steps
    and 10 timed ones)."""
    run("bench_call", ["jax-cold", "1", "10"], env={"BENCH_EVICT_KB": "0", "GPUSPY_CUPTI": "off"}, tmp=tmp)
    _, ev = only_trace(tmp)
    per = collections.Counter((e["kind"], e.get("api"), (e.get("name") or "").split(":")[0]) for e in ev
                              if e["kind"] in ("phase_begin", "phase_end", "sync", "launch"))
    want = {("phase_begin", "nvtxRangePush", "XlaModule"): 1010, ("phase_end", "nvtxRangePop", "XlaModule"): 1010,
            ("sync", "cuStreamWaitEvent", ""): 1010, ("launch", "cuGraphLaunch", "(graph)"): 1010,
            ("launch", "cuLaunchHostFunc", "(host function)"): 1010}
    check(dict(per) == want, f"records {dict(per)}")
