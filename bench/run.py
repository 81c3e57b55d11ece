#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`make bench`: the ns gpuspy adds to one intercepted call against the
driver double, with 1 and 8 threads. Untraced and traced runs alternate
(A B A B ...); the figure is the median over rounds of (traced - untraced)
in thread-CPU ns per call. Writes bench/out/bench.md and prints it."""
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


def once(kind, threads, traced, tmp):
    env = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_BUFFER_MB="256")
    env.pop("LD_PRELOAD", None)
    if traced:
        env["LD_PRELOAD"] = os.path.join(ROOT, "lib", "libgpuspy.so")
    out = subprocess.run([os.path.join(BIN, "bench_call"), kind, str(threads), str(CALLS)],
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
        for kind in ("launch", "copy"):
            for threads in (1, 8):
                base, traced, added = [], [], []
                for r in range(ROUNDS):
                    order = (False, True) if r % 2 == 0 else (True, False)
                    res = {t: once(kind, threads, t, tmp) for t in order}
                    base.append(res[False])
                    traced.append(res[True])
                    added.append(res[True] - res[False])
                rows.append((kind, threads, statistics.median(base), statistics.median(traced),
                             statistics.median(added), min(added), max(added)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; {ROUNDS} interleaved rounds of "
        f"{CALLS} calls per thread; thread-CPU ns per call.",
        "",
        "| call | threads | untraced ns | traced ns | added ns (median) | added min..max |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for kind, th, b, t, a, lo, hi in rows:
        name = "cuLaunchKernel" if kind == "launch" else "cuMemcpyHtoDAsync (1 B)"
        lines.append(f"| {name} | {th} | {b:.1f} | {t:.1f} | {a:.1f} | {lo:.1f}..{hi:.1f} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "out", "bench.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
