#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Overhead in lock step (issue 5, point 6): one process per mode, all alive
at once, taking turns window by window. Each process warms up, then runs
each 50-step window when this script hands it the turn (a byte down its
pipe; a byte back when done), every round in a new random order
(LOCKSTEP_SEED), so window k of every mode runs within a second of the
others and no mode always follows the same one (a fixed ring put each mode
at one place: the ratios fell with the place, 0.90..0.98 for four
near-identical modes), under the same state of the shared machine: drift between rounds,
which swamps ratios of separate runs,
falls out. The ratio of a mode in round k is its window rate over the
untraced window rate of round k; the table gives medians over rounds.
"untraced b" is a second untraced process: its ratio is the A/A check of
the method itself.

Modes: untraced, untraced b, gpuspy (no CUPTI), gpuspy+cupti, bare cupti
(tests/gpu/cupti_count.c, which `PART=lockstep bash bench/gpu/overhead_paired.sh`
builds before it runs this); also "gpuspy events" and "torch.profiler" (CUDA
activity; its Chrome trace goes to the mode's folder). MODES=a,b,...
picks some (default the first five; untraced is always needed), WINDOWS the rounds (default 100),
PIN_CPUS=2,3,4,5 the CPUs of every process, LOOP=mlp|conv. A mode
"gpuspy VAR=VAL ..." is gpuspy with those variables set (GPUSPY_STACKS=0,
GPUSPY_STACK_DEPTH=8, GPUSPY_TORCH=0, and GPUSPY_PROBE=nolib|nohook|nowrap|python,
which takes a part of the PyTorch helper away: bench/helper_probe);
"bare cupti VAR=VAL ..." is the bare collector with its options set
(CUPTI_COUNT_CB=1, CUPTI_COUNT_API=1, CUPTI_COUNT_TS=1: tests/gpu/cupti_count.c). A
mode "MODE #2" is a second process of MODE (a replica: "untraced #2",
"gpuspy #3"), so that a process's own luck (its address layout, which the
A/A check shows can move a rate by a few percent for a whole run) can be
told from the mode's cost. BLOCKING_SYNC=1 runs every loop with
--blocking-sync (waits sleep instead of spinning: its CPU columns are then
the work a step does, not the time it spins in a wait). The
table also gives each gpuspy mode's own time for call stacks per step, as
its trace's header counts it, its trace bytes per step, and every mode's CPU
time per step (time.thread_time of the main thread, which sets a
launch-bound loop's pace, and time.process_time of all threads): its median,
and the median over rounds of what the main thread's adds to the untraced
one's, a direct figure for a mode's cost that throughput's noise does not
blur as much (lockstep_cpu.txt keeps every window's; lockstep_sched.txt
each window's involuntary context switches of the main thread and the CPU
it ended on, SWITCHES@CPU, to tell a process's bad luck from its cost). A dry run without
a GPU: LOOP_CMD="python3 STUB" with a stub that speaks loops.py --lockstep.
Usage (repository root, on the GPU machine): python3 bench/gpu_lockstep.py WORKDIR OUTDIR"""
import json
import os
import random
import re
import select
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK, OUT = sys.argv[1], sys.argv[2]
LIB = os.path.join(ROOT, "lib", "libgpuspy.so")
# "gpuspy ALT_LIB=1 ...": that mode preloads this build of the library
# instead (an A/B of two builds in one run: PART=lockstep-alt).
ALT_LIB = os.environ.get("LOCKSTEP_ALT_LIB", "")
COUNTER = os.path.join(WORK, "libcupti_count.so")
DEFAULT = ["untraced", "untraced b", "gpuspy", "gpuspy+cupti", "bare cupti"]
ALL = DEFAULT + ["gpuspy events", "torch.profiler"]
# "gpuspy VAR=VAL ..." is gpuspy (no CUPTI) with those variables set: a
# variant that splits gpuspy's cost (e.g. "gpuspy GPUSPY_STACKS=0").
_asked = os.environ.get("MODES", ",".join(DEFAULT)).split(",")


def base(mode):
    """The mode a replica ("gpuspy #2") is a process of."""
    return mode.split(" #")[0]


def known(mode):
    return mode in ALL or (mode.startswith(("gpuspy ", "bare cupti ")) and "=" in mode)


MODES = [m for m in ALL if m in _asked] + [m for m in _asked if m not in ALL and known(base(m))]
WINDOWS = int(os.environ.get("WINDOWS", "100"))
# LOCKSTEP_WINDOW: steps a window (a step of 60 us makes 50 steps a 3 ms window,
# which one stall of the machine moves by a third).
WINDOW = int(os.environ.get("LOCKSTEP_WINDOW", "50"))
PIN = {int(c) for c in os.environ.get("PIN_CPUS", "").split(",") if c.strip()}
# LOOP_CMD replaces the loop (a dry run without a GPU); it must speak --lockstep.
LOOP = os.environ.get("LOOP", "mlp")
LOOP_CMD = os.environ.get("LOOP_CMD", f"python3 {os.path.join(ROOT, 'tests', 'gpu', 'loops.py')} {LOOP}").split()
BLOCKING = os.environ.get("BLOCKING_SYNC", "") not in ("", "0")


def env_of(mode, d):
    mode = base(mode)
    env = dict(os.environ, GPUSPY_DIR=d, PYTHONUNBUFFERED="1")
    if mode.startswith("gpuspy"):
        env.update(LD_PRELOAD=LIB, GPUSPY_CUPTI={"gpuspy+cupti": "on", "gpuspy events": "events"}.get(mode, "off"))
        env.update(kv.split("=", 1) for kv in mode.split()[1:] if "=" in kv)
        if env.pop("ALT_LIB", "") == "1":  # another build of libgpuspy: LOCKSTEP_ALT_LIB
            env["LD_PRELOAD"] = ALT_LIB
        if env.pop("HOST_SHIM", "") == "1":  # malloc & co. interposed, as before 2026-11-30
            env["LD_PRELOAD"] += ":" + os.path.join(os.path.dirname(env["LD_PRELOAD"]), "libgpuspy-host.so")
        if env.get("GPUSPY_PROBE"):  # bench/helper_probe takes a part of the PyTorch helper away
            env["PYTHONPATH"] = os.path.join(ROOT, "bench", "helper_probe")
    elif mode.startswith("bare cupti"):  # "bare cupti CUPTI_COUNT_TS=1": the collector's options
        env.update(CUDA_INJECTION64_PATH=COUNTER, CUPTI_COUNT_OUT=os.path.join(d, "c.json"))
        env.update(kv.split("=", 1) for kv in mode.split()[2:] if "=" in kv)
    return env


def own_time(d, steps):
    """A gpuspy mode's own time for call stacks, from its trace's header."""
    files = [f for f in os.listdir(d) if f.endswith(".gspy")]
    if len(files) != 1:
        return " | "
    p = subprocess.run([os.path.join(ROOT, "tools", "gpuspy"), "dump", os.path.join(d, files[0])],
                       capture_output=True, text=True)
    if p.returncode or not p.stdout:
        return " | "
    head = json.loads(p.stdout.split("\n", 1)[0])
    n, ns = head.get("stacks_taken", 0), head.get("stacks_ns", 0)
    return (f"{n / steps:.1f} stacks, {ns / steps / 1000:.1f} us per step ({ns / n if n else 0:.0f} ns each) | "
            f"{head.get('used_bytes', 0) / steps / 1024:.1f} KiB")


def main():
    if any("ALT_LIB=1" in m for m in MODES) and not os.path.exists(ALT_LIB):
        sys.exit(f"gpu_lockstep: error: a mode asks for ALT_LIB=1 but LOCKSTEP_ALT_LIB={ALT_LIB!r} "
                 "is not a file; set it to the other build of libgpuspy.so")
    n = len(MODES)
    ready_r, ready_w = os.pipe()
    turn = [os.pipe() for _ in range(n)]  # we write turn[i][1]; process i reads turn[i][0]
    done = [os.pipe() for _ in range(n)]  # process i writes done[i][1]; we read done[i][0]
    procs = []
    dirs = {}
    for i, mode in enumerate(MODES):
        d = dirs[mode] = os.path.join(WORK, "lockstep-" + re.sub(r"[ +/#]", "_", mode))
        os.makedirs(d, exist_ok=True)
        fds = (ready_w, turn[i][0], done[i][1])
        env = env_of(mode, d)
        env["LOCKSTEP_FDS"] = ",".join(map(str, fds))
        procs.append(subprocess.Popen(
            LOOP_CMD + ["--steps", str(WINDOWS * WINDOW), "--window", str(WINDOW), "--lockstep"]
            + (["--profile"] if base(mode) == "torch.profiler" else []) + (["--blocking-sync"] if BLOCKING else []),
            # stderr to a file: a pipe nobody reads during the run could fill and stall a turn
            env=env, cwd=d if base(mode) == "torch.profiler" else ROOT, pass_fds=fds, stdout=subprocess.PIPE,
            stderr=open(os.path.join(d, "stderr.txt"), "w"), text=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, PIN)) if PIN else None))
    rates, cpu, sched = {}, {}, {}
    orders = []
    rng = random.Random(int(os.environ.get("LOCKSTEP_SEED", "1")))
    timeout = float(os.environ.get("LOCKSTEP_TIMEOUT", "540"))

    def tail(mode):
        with open(os.path.join(dirs[mode], "stderr.txt")) as f:
            return f.read()[-800:]

    def died(what):
        dead = [(m, p) for m, p in zip(MODES, procs) if p.poll() is not None]
        if dead:
            raise SystemExit(f"{dead[0][0]}: died {what}: {tail(dead[0][0])}")

    try:
        ready = 0
        while ready < n:  # every process warmed up: nobody's warm-up overlaps a window
            if select.select([ready_r], [], [], 1.0)[0]:
                ready += len(os.read(ready_r, n - ready))
            if ready < n:
                died("before its first window")
        t_end = time.monotonic() + timeout
        for _ in range(WINDOWS):  # each round in a new random order: no mode owes its place
            order = list(range(n))
            rng.shuffle(order)
            orders.append(order)
            for i in order:
                os.write(turn[i][1], b"t")
                while not select.select([done[i][0]], [], [], 1.0)[0]:
                    died("in a window")
                    if time.monotonic() > t_end:
                        raise SystemExit(f"{MODES[i]}: no window after {timeout:.0f} s")
                os.read(done[i][0], 1)
        for mode, p in zip(MODES, procs):
            out, _ = p.communicate(timeout=60)
            line = [l for l in out.splitlines() if l.startswith("lockstep_windows ")]
            if p.returncode or not line:
                raise SystemExit(f"{mode}: failed ({p.returncode}): {tail(mode)}")
            rates[mode] = [float(x) for x in line[0].split()[1:]]
            c = [l for l in out.splitlines() if l.startswith("lockstep_cpu ")]
            if c:  # per window: "main/all" CPU us per step
                cpu[mode] = [tuple(float(v) for v in x.split("/")) for x in c[0].split()[1:]]
            s = [l for l in out.splitlines() if l.startswith("lockstep_sched ")]
            if s:  # per window: "SWITCHES@CPU"
                sched[mode] = s[0].split()[1:]
    finally:  # one failed: the others wait for a turn that never comes
        for p in procs:
            if p.poll() is None:
                p.kill()
    # Left out: round 0 (the first window after warm-up) and the last round,
    # during which the processes that have had their last turn exit (their
    # teardown shares the CPUs: the last round's ratios spread 0.5..1.6).
    rounds = range(1, WINDOWS - 1)
    ratio = {m: [rates[m][k] / rates["untraced"][k] for k in rounds] for m in MODES}
    steps = WINDOWS * WINDOW + 10  # loops.py's warm-up: 10 steps
    own = {m: own_time(dirs[m], steps) for m in MODES if m.startswith("gpuspy")}

    def cpu_cells(m):
        """CPU us per step: the main thread's (median), what it adds to the
        untraced main thread's (median of per-round differences), all threads'."""
        if m not in cpu or "untraced" not in cpu:
            return " | | "
        main = statistics.median(cpu[m][k][0] for k in rounds)
        added = statistics.median(cpu[m][k][0] - cpu["untraced"][k][0] for k in rounds)
        return f"{main:.1f} | {added:+.1f} | {statistics.median(cpu[m][k][1] for k in rounds):.1f}"

    rows = [f"| {m} | {statistics.median(rates[m]):.1f} | {statistics.median(ratio[m]):.3f} | "
            f"{min(ratio[m]):.3f}..{max(ratio[m]):.3f} | {own.get(m, ' | ')} | {cpu_cells(m)} |" for m in MODES]
    if "gpuspy+cupti" in MODES and "bare cupti" in MODES:
        v = [rates["gpuspy+cupti"][k] / rates["bare cupti"][k] for k in rounds]
        rows.append(f"| gpuspy+cupti / bare cupti | | {statistics.median(v):.3f} | "
                    f"{min(v):.3f}..{max(v):.3f} | | | | | |")
    # The method's own check: a window's rate over its round's median rate,
    # by its place in the round. Flat when the place costs nothing.
    place = [[] for _ in range(n)]
    for k in rounds:
        mid = statistics.median(rates[m][k] for m in MODES)
        for j, i in enumerate(orders[k]):
            place[j].append(rates[MODES[i]][k] / mid)
    by_place = "Rate / the round's median rate by place in the round (1st..last): " + ", ".join(
        f"{statistics.median(v):.3f}" for v in place) + "."
    text = "\n".join([
        f"Lock step: {n} processes ({', '.join(MODES)}) alive at once, taking turns window by window; "
        f"{len(rounds)} rounds of {WINDOW}-step windows (the first and last left out); ratio = the mode's window "
        f"rate / the untraced window rate of the same round, median over rounds"
        f"{'; processes on CPUs ' + ','.join(map(str, sorted(PIN))) if PIN else ''}"
        f"{'; waits block (--blocking-sync)' if BLOCKING else ''}.", "",
        "| mode | window steps/s (median) | ratio to untraced (median) | min..max | gpuspy's call stacks (the run / steps) "
        "| trace bytes per step | main thread CPU us/step | added to untraced's (per round) | all threads CPU us/step |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |", *rows, "", by_place]) + "\n"
    with open(os.path.join(OUT, "lockstep.md"), "w") as f:
        f.write(text)
    with open(os.path.join(OUT, "lockstep_order.txt"), "w") as f:
        for order in orders:
            f.write(" ".join(MODES[i].replace(" ", "_") for i in order) + "\n")
    # The loop on a first comment line, for bench/overhead_table.py.
    with open(os.path.join(OUT, "lockstep_cpu.txt"), "w") as f:  # "main/all threads" us per step
        f.write(f"# loop={LOOP}\n")
        for m in cpu:
            f.write(f"{m}: " + " ".join(f"{a:.1f}/{b:.1f}" for a, b in cpu[m]) + "\n")
    if sched:
        with open(os.path.join(OUT, "lockstep_sched.txt"), "w") as f:
            for m in sched:
                f.write(f"{m}: " + " ".join(sched[m]) + "\n")
    with open(os.path.join(OUT, "lockstep_rates.txt"), "w") as f:
        f.write(f"# loop={LOOP}\n")
        for m in MODES:
            f.write(f"{m}: " + " ".join(f"{r:.2f}" for r in rates[m]) + "\n")
    print(text)


if __name__ == "__main__":
    main()
