#!/bin/bash
# SPDX-License-Identifier: MIT
# gpuspy's cost on the MLP loop measured two ways in one device call:
# paired recorded/paused windows inside each of N processes (loops.py
# --toggle: recording plus the PyTorch module hook against neither), and
# ROUNDS interleaved untraced/gpuspy rounds (bench/gpu_overhead.sh).
# From the repository root after `make gpu-carry`:
#   bash tests/gpu/overhead_paired.sh      (results in $OUT)
set -u
OUT=${OUT:-/tmp/gpuspy-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
make -s lib/libgpuspy.so > /dev/null || exit 1
for i in $(seq "${TOGGLES:-5}"); do
	mkdir -p /tmp/gpuspy-toggle
	LD_PRELOAD=$(pwd)/lib/libgpuspy.so GPUSPY_CUPTI=off GPUSPY_DIR=/tmp/gpuspy-toggle \
		python3 tests/gpu/loops.py mlp --steps 4000 --toggle 2>&1 | grep -E 'toggle|steps_per_s' | tr '\n' ' '
	echo
	rm -rf /tmp/gpuspy-toggle
done | tee "$OUT/toggle.txt"
LOOPS=mlp MODES="${MODES:-untraced,gpuspy}" ROUNDS=${ROUNDS:-6} MLP_STEPS=${MLP_STEPS:-1000} \
	bash bench/gpu_overhead.sh > "$OUT/bench.log" 2>&1
tail -8 "$OUT/bench.log"
