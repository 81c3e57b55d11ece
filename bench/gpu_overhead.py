#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Overhead of tracing on the H200 (issue 5, point 6). For the MLP loop
(docs/design.md#the-mlp-loop) and the conv loop (tests/gpu/loops.py), ROUNDS interleaved rounds of
seven runs each: untraced; gpuspy without CUPTI (call stacks on, its default);
the same with GPUSPY_STACKS=0; gpuspy with GPU time per phase from CUDA
events (GPUSPY_CUPTI=events); gpuspy with CUPTI; a bare
CUPTI collector enabling the same activity kinds and nothing else
(tests/gpu/cupti_count.c); torch.profiler with CUDA activity. Two more
bare-collector modes price CUPTI's ways of tying GPU records to host calls
on the launch, copy and memset entry points: "bare cupti+cb" adds an empty
driver-API callback (gpuspy's way), "bare cupti+api" CUPTI's driver-API
activity records for those entry points (their count is logged). Each run's rate
is the median of its 50-step windows (loops.py); the table gives medians of
per-round ratios to the untraced run of the same round, and trace bytes per
step. MODES=a,b,... runs a subset (untraced is always needed); LOOPS=mlp
runs one loop; PIN_CPUS=2,3 runs every loop process on those CPUs (the
same ones in every run, to take core-to-core differences out of the
ratios).
Usage (repository root, on the GPU machine, after cupti_check.sh built the
counter): python3 bench/gpu_overhead.py WORKDIR OUTDIR"""
import glob
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK, OUT = sys.argv[1], sys.argv[2]
ROUNDS = int(os.environ.get("ROUNDS", "5"))
STEPS = {"mlp": int(os.environ.get("MLP_STEPS", "300")), "conv": int(os.environ.get("CONV_STEPS", "100"))}
LIB = os.path.join(ROOT, "lib", "libgpuspy.so")
COUNTER = os.path.join(WORK, "libcupti_count.so")
MODES = ["untraced", "gpuspy", "gpuspy no stacks", "gpuspy events", "gpuspy+cupti", "bare cupti",
         "bare cupti+cb", "bare cupti+api", "torch.profiler"]
BARE = {"bare cupti": {}, "bare cupti+cb": {"CUPTI_COUNT_CB": "1"}, "bare cupti+api": {"CUPTI_COUNT_API": "1"}}
MODES = [m for m in MODES if m in os.environ.get("MODES", ",".join(MODES)).split(",")]
PIN = {int(c) for c in os.environ.get("PIN_CPUS", "").split(",") if c.strip()}


def run(loop, mode, r):
    d = os.path.join(WORK, f"ovh-{loop}-{mode.replace(' ', '_').replace('+', '_')}-{r}")
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, GPUSPY_DIR=d, PYTHONUNBUFFERED="1")
    args = ["python3", os.path.join(ROOT, "tests", "gpu", "loops.py"), loop, "--steps", str(STEPS[loop])]
    if mode.startswith("gpuspy"):
        env["LD_PRELOAD"] = LIB
        env["GPUSPY_CUPTI"] = {"gpuspy+cupti": "on", "gpuspy events": "events"}.get(mode, "off")
        if mode == "gpuspy no stacks":
            env["GPUSPY_STACKS"] = "0"
    elif mode in BARE:
        env.update(BARE[mode], CUDA_INJECTION64_PATH=COUNTER, CUPTI_COUNT_OUT=os.path.join(d, "c.json"))
    elif mode == "torch.profiler":
        args.append("--profile")
    p = subprocess.run(args, env=env, cwd=d, capture_output=True, text=True, timeout=300,
                       preexec_fn=(lambda: os.sched_setaffinity(0, PIN)) if PIN else None)
    line = [l for l in p.stdout.splitlines() if l.startswith("window_steps_per_s")]
    if p.returncode or not line:
        raise SystemExit(f"{loop} {mode}: failed: {p.stderr[-800:]}")
    size = 0
    if mode == "bare cupti+api":
        with open(os.path.join(d, "c.json")) as f:
            c = json.load(f)
        print(f"{loop} {mode} round {r}: {c['api']} driver-API records, {c['kernels']} kernels, "
              f"{c['h2d'] + c['d2h'] + c['d2d']} copies, {c['memsets']} memsets", flush=True)
    if mode.startswith("gpuspy"):
        for f in glob.glob(os.path.join(d, "*.gspy")):
            head = subprocess.run([os.path.join(ROOT, "tools", "gpuspy"), "dump", f], capture_output=True,
                                  text=True).stdout.split("\n", 1)[0]
            size += json.loads(head)["used_bytes"]
            os.unlink(f)
    elif mode == "torch.profiler":
        size = os.path.getsize(os.path.join(d, "prof.json"))
        os.unlink(os.path.join(d, "prof.json"))
    return float(line[0].split()[1]), size


def main():
    rows, raw = [], {}
    for loop in os.environ.get("LOOPS", "mlp,conv").split(","):
        ratios = {m: [] for m in MODES}
        rates = {m: [] for m in MODES}
        sizes = {m: [] for m in MODES}
        for r in range(ROUNDS):
            order = MODES if r % 2 == 0 else MODES[::-1]
            res = {m: run(loop, m, r) for m in order}
            for m in MODES:
                rates[m].append(res[m][0])
                ratios[m].append(res[m][0] / res["untraced"][0])
                sizes[m].append(res[m][1])
            line = f"{loop} round {r}: " + ", ".join(f"{m} {res[m][0]:.1f} ({res[m][1]} B)" for m in MODES)
            print(line, flush=True)
            with open(os.path.join(OUT, "overhead_rounds.txt"), "a") as f:
                f.write(line + "\n")
        raw[loop] = {"rates": rates, "ratios": ratios, "sizes": sizes}
        over = {b: [x / y for x, y in zip(ratios["gpuspy+cupti"], ratios[b])]
                for b in BARE if b in ratios and "gpuspy+cupti" in ratios}
        for m in MODES:
            per_step = statistics.median(sizes[m]) / STEPS[loop] if any(sizes[m]) else 0
            rows.append(f"| {loop} | {m} | {statistics.median(rates[m]):.1f} | {statistics.median(ratios[m]):.3f} | "
                        f"{min(ratios[m]):.3f}..{max(ratios[m]):.3f} | "
                        f"{(f'{per_step / 1024:.1f} KiB' if per_step else '-')} |")
        for b, v in over.items():
            rows.append(f"| {loop} | gpuspy+cupti / {b} | | {statistics.median(v):.3f} | "
                        f"{min(v):.3f}..{max(v):.3f} | |")
    text = "\n".join([
        f"H200, {ROUNDS} interleaved rounds (order reversed every other round); steps/s = median over "
        f"50-step windows of the timed steps after 10 warm-up steps (mlp {STEPS['mlp']}, conv "
        f"{STEPS['conv']}){'; processes on CPUs ' + ','.join(map(str, sorted(PIN))) if PIN else ''}; "
        "ratio = run / untraced "
        "run of the same round, median over rounds; trace bytes per step = gpuspy's used bytes "
        "(header, strings, claimed chunks) or torch.profiler's Chrome trace.", "",
        "| loop | mode | steps/s (median) | ratio to untraced (median) | min..max | trace bytes/step |",
        "| --- | --- | --- | --- | --- | --- |", *rows]) + "\n"
    with open(os.path.join(OUT, "overhead.md"), "w") as f:
        f.write(text)
    with open(os.path.join(OUT, "overhead.json"), "w") as f:
        json.dump(raw, f)
    print(text)


if __name__ == "__main__":
    main()
