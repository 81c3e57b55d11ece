#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`make bench-report`: wall time and peak memory of `gpuspy report` on a
synthetic trace of 10 million events (tests/progs/mktrace.c), pinned to one core,
median of 5 runs. Writes bench/out/report_speed.md and prints it."""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENTS = int(os.environ.get("BENCH_EVENTS", "10000000"))


def main():
    d = tempfile.mkdtemp(prefix="gpuspy-speed-")
    path = os.path.join(d, "big.gspy")
    subprocess.run([os.path.join(ROOT, "tests", "bin", "mktrace"), path, str(EVENTS), "4"], check=True)
    rows = []
    for what in (["report", "--json"], ["report", "--color", "never"]):
        times, rss = [], []
        for _ in range(5):
            t0 = time.monotonic()
            p = subprocess.run(["taskset", "-c", "0", os.path.join(ROOT, "tools", "gpuspy"), *what, path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            times.append(time.monotonic() - t0)
            rss.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            if p.returncode:
                sys.exit(p.stderr.decode())
        t = statistics.median(times)
        rows.append(f"| gpuspy {' '.join(what)} | {EVENTS:,} | {t:.2f} s | {EVENTS / t / 1e6:.1f} M | "
                    f"{max(rss) / 1024:.0f} MiB |")
    size = os.path.getsize(path)
    os.unlink(path)
    os.rmdir(d)
    text = "\n".join([f"Trace: {EVENTS:,} events, 4 threads, {size / 2**20:.0f} MiB file; one core "
                      "(taskset -c 0), median of 5 runs.", "",
                      "| command | events | time | events/s | peak RSS |",
                      "| --- | --- | --- | --- | --- |", *rows]) + "\n"
    os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "out", "report_speed.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
