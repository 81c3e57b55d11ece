#!/bin/bash
# SPDX-License-Identifier: MIT
# gpuspy's per-call cost on the GPU machine's own CPUs, with no GPU work: the
# kernel's clocksource (gpuspy reads rdtsc only when it is "tsc", else
# clock_gettime), the ns per timestamp read, and `make bench`'s figures
# (bench/run.py against the test doubles). From the repository root, with
# tests/bin carried (built by `make tests/bin/bench_call` on the CPU machine):
#   bash bench/gpu/host_costs.sh      (results under $OUT)
set -u
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
OUT=${OUT:-/tmp/gpuspy-gpu}
mkdir -p "$OUT"
{
	echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
		"(available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource))"
	grep -m1 "model name" /proc/cpuinfo
	grep -m1 -o "constant_tsc\|nonstop_tsc" /proc/cpuinfo | sort -u | tr '\n' ' '; echo
	gcc -O2 bench/gpu/clock_cost.c -o /tmp/clock_cost && /tmp/clock_cost
	python3 -c 'import time
t=time.perf_counter_ns
a=t()
for _ in range(1000000): t()
print("python perf_counter_ns %.1f" % ((t()-a)/1e6))'
} 2>&1 | tee "$OUT/host_clock.txt"
make -s libs CFLAGS="-O2 -g" || { echo "build failed"; exit 1; }
BENCH_ROUNDS=${BENCH_ROUNDS:-5} python3 bench/run.py > "$OUT/bench.md" 2>&1
cat "$OUT/bench.md"
