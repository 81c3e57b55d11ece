#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`make bench`: the ns gpuspy adds to one intercepted call against the
driver double, with 1 and 8 threads. Untraced and traced runs alternate
(A B A B ...); the figure is the median over rounds of (traced - untraced)
in thread-CPU ns per call. Rows: the record path alone (GPUSPY_STACKS=0),
then with call stacks as shipped (copies carry one; launches, sampled, do
not), every launch with a stack (GPUSPY_STACK_LAUNCHES=1), and a host
malloc/free pair recorded with its stacks (GPUSPY_HOST_ALLOC_MIN and
libgpuspy-host.so), only passed through (libgpuspy-host.so preloaded, the
variable unset) or not interposed at all (the default); launches with GPUSPY_CUPTI=events and no
phase change (each call finds its stream's interval already started: the
per-call cost of that mode); and launches with the caches cold (bench_call
launch-cold: 256 KiB of other code and 2 MiB of other data run between two
launches, as a program's own work does; only the call is timed), where
the added ns are what the trace path's code and data cost when they have
to come back from further out; and an NVTX range named as XLA names its
thunks (a registered string) and by its text. BENCH_ONLY=TEXT runs the
rows whose label holds TEXT. Writes bench/out/bench.md and prints it."""
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "tests", "bin")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "9"))
CALLS = int(os.environ.get("BENCH_CALLS", "200000"))


HOST = "+host"  # in a case's environment: preload libgpuspy-host.so after libgpuspy
CASES = [  # (label, bench_call kind, threads, environment of the traced run[, calls])
    ("cuLaunchKernel, no stacks", "launch", 1, {"GPUSPY_STACKS": "0"}),
    ("cuLaunchKernel, no stacks", "launch", 8, {"GPUSPY_STACKS": "0"}),
    ("cuMemcpyHtoDAsync (1 B), no stacks", "copy", 1, {"GPUSPY_STACKS": "0"}),
    ("cuMemcpyHtoDAsync (1 B), no stacks", "copy", 8, {"GPUSPY_STACKS": "0"}),
    ("cuLaunchKernel, stacks on (default: launches unsampled)", "launch", 1, {}),
    ("cuMemcpyHtoDAsync (1 B), with its stack (default)", "copy", 1, {}),
    ("cuMemcpyHtoDAsync (1 B), with its stack (default)", "copy", 8, {}),
    ("cuLaunchKernel, every launch with its stack", "launch", 1, {"GPUSPY_STACK_LAUNCHES": "1"}),
    ("cuLaunchKernel, GPUSPY_CUPTI=events, no stacks", "launch", 1,
     {"GPUSPY_STACKS": "0", "GPUSPY_CUPTI": "events"}),
    ("cuLaunchKernel, GPUSPY_CUPTI=events, no stacks", "launch", 8,
     {"GPUSPY_STACKS": "0", "GPUSPY_CUPTI": "events"}),
    ("malloc+free 1 MiB, not interposed (default)", "malloc", 1, {}),
    ("malloc+free 1 MiB, libgpuspy-host.so preloaded, not recorded", "malloc", 1, {HOST: "1"}),
    ("malloc+free 1 MiB, recorded with stacks", "malloc", 1, {HOST: "1", "GPUSPY_HOST_ALLOC_MIN": "1M"}),
    ("cuLaunchKernel, caches cold, no stacks", "launch-cold", 1, {"GPUSPY_STACKS": "0"}, 20000),
    ("a JAX step (5 calls recorded, 20 ranges nested), caches cold", "jax-cold", 1, {}, 2000),
    ("NVTX range, registered name of 110 characters (XLA's thunks)", "nvtx", 1, {}),
    ("NVTX range, registered name of 110 characters (XLA's thunks)", "nvtx", 8, {}),
    ("NVTX range, the same name as text", "nvtx-text", 1, {}),
]


def once(kind, threads, traced, tmp, extra, calls):
    ld = os.environ.get("LD_LIBRARY_PATH")
    env = dict(os.environ, LD_LIBRARY_PATH=BIN + (":" + ld if ld else ""), GPUSPY_DIR=tmp,
               GPUSPY_BUFFER_MB="256")
    env.pop("LD_PRELOAD", None)
    if traced:
        # CUPTI off unless the case says: on a machine with a GPU, auto would
        # turn it on against the CUPTI double.
        lib = os.path.join(ROOT, "lib", "libgpuspy.so")
        if HOST in extra:
            lib += ":" + os.path.join(ROOT, "lib", "libgpuspy-host.so")
        env.update(LD_PRELOAD=lib, GPUSPY_CUPTI="off")
        env.update({k: v for k, v in extra.items() if k != HOST})
    out = subprocess.run([os.path.join(BIN, "bench_call"), kind, str(threads), str(calls)],
                         env=env, capture_output=True, text=True, check=True).stdout
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    return float(out)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    tmp = tempfile.mkdtemp(prefix="gpuspy-bench-")
    rows = []
    try:
        only = os.environ.get("BENCH_ONLY", "")  # a part of the labels to run
        for label, kind, threads, extra, *calls in CASES:
            if only not in label:
                continue
            calls = calls[0] if calls else CALLS
            base, traced, added = [], [], []
            for r in range(ROUNDS):
                order = (False, True) if r % 2 == 0 else (True, False)
                res = {t: once(kind, threads, t, tmp, extra, calls) for t in order}
                base.append(res[False])
                traced.append(res[True])
                added.append(res[True] - res[False])
            rows.append((label, threads, statistics.median(base), statistics.median(traced),
                         statistics.median(added), min(added), max(added)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; {ROUNDS} interleaved rounds of "
        f"{CALLS} calls per thread (caches cold: 20000); thread-CPU ns per call (caches cold: "
        f"the call alone, by rdtsc).",
        "",
        "| call | threads | untraced ns | traced ns | added ns (median) | added min..max |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, th, b, t, a, lo, hi in rows:
        lines.append(f"| {name} | {th} | {b:.1f} | {t:.1f} | {a:.1f} | {lo:.1f}..{hi:.1f} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "out", "bench.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
