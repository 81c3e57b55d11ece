#!/bin/bash
# SPDX-License-Identifier: MIT
# Where the traced MLP loop's main thread spends its time, on the GPU
# machine (no perf there): bench/gpu/pcsample.c samples the main thread's
# instruction address every ~200 us during the timed steps of
# `tests/gpu/loops.py mlp`, for each mode in turn, rounds in shuffled order;
# bench/gpu/pcsample_report.py gives main-thread CPU us per step by library
# and by function, medians over rounds. libgpuspy's own time per step is
# what gpuspy costs in place (its code run where the loop's other work has
# taken the caches), beside what the other libraries gain or lose.
#   bash bench/gpu/pcsample.sh        (results under $OUT; carry .gpu)
# ROUNDS (3), STEPS (3000), MODES (all below), PIN_CPUS (2,3,4,5), LOOP (mlp;
# any of loops.py's). LIB_BEFORE=PATH (an earlier build's libgpuspy.so) adds
# the modes gpuspy_before and cupti_before, to compare two builds on one
# machine in the same rounds.
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/gpuspy-gpu}
W=/tmp/gpuspy-pcsample
rm -rf $W; mkdir -p "$OUT/pcsample" $W
export LD_LIBRARY_PATH="$ROOT/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
make -s libs CFLAGS="-O2 -g" || { echo "build failed"; exit 1; }
gcc -O2 -shared -fPIC bench/gpu/pcsample.c -o $W/pcsample.so -lrt || exit 1
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o $W/libcupti_count.so \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
LIB=$ROOT/lib/libgpuspy.so
STEPS=${STEPS:-3000}
# mode name (no dots) -> its environment
declare -A ENVS=(
	[untraced]="LD_PRELOAD=$W/pcsample.so"
	[gpuspy]="LD_PRELOAD=$LIB:$W/pcsample.so GPUSPY_CUPTI=off"
	[torch0]="LD_PRELOAD=$LIB:$W/pcsample.so GPUSPY_CUPTI=off GPUSPY_TORCH=0"
	[nostacks]="LD_PRELOAD=$LIB:$W/pcsample.so GPUSPY_CUPTI=off GPUSPY_STACKS=0"
	[disabled]="LD_PRELOAD=$LIB:$W/pcsample.so GPUSPY_DISABLE=1"
	[cupti]="LD_PRELOAD=$LIB:$W/pcsample.so GPUSPY_CUPTI=on"
	[bare]="LD_PRELOAD=$W/pcsample.so CUDA_INJECTION64_PATH=$W/libcupti_count.so CUPTI_COUNT_OUT=$W/c.json"
	[gpuspy_before]="LD_PRELOAD=${LIB_BEFORE:-}:$W/pcsample.so GPUSPY_CUPTI=off"
	[cupti_before]="LD_PRELOAD=${LIB_BEFORE:-}:$W/pcsample.so GPUSPY_CUPTI=on"
)
MODES=${MODES:-untraced gpuspy torch0 nostacks disabled cupti bare}
for r in $(seq "${ROUNDS:-3}"); do
	for m in $(echo $MODES | tr ' ' '\n' | shuf); do
		mkdir -p $W/trace
		rate=$(env ${ENVS[$m]} GPUSPY_DIR=$W/trace PCSAMPLE_OUT="$OUT/pcsample/$m.$r.txt" \
			taskset -c "${PIN_CPUS:-2,3,4,5}" python3 tests/gpu/loops.py "${LOOP:-mlp}" --steps "$STEPS" 2>&1 |
			grep -E '^(steps_per_s|window_steps_per_s)' | tr '\n' ' ')
		echo "round $r $m: $rate" | tee -a "$OUT/pcsample/rates.txt"
		rm -rf $W/trace $W/c.json
	done
done
python3 bench/gpu/pcsample_report.py "$OUT/pcsample" "$STEPS" | tee "$OUT/pcsample.md"
# one file back instead of one per run (the device tool brings back a few)
tar -C "$OUT" -czf "$OUT/pcsample.tar.gz" pcsample && rm -rf "$OUT/pcsample"
