#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/gpu/cost_parts.py untraced and under gpuspy (default, GPUSPY_STACKS=0,
# GPUSPY_TORCH=0, both), ROUNDS times interleaved; results in $OUT/cost_parts.txt.
# From the repository root after `make gpu-carry`: bash bench/gpu/cost_parts.sh
set -u
OUT=${OUT:-/tmp/gpuspy-gpu}
mkdir -p "$OUT" /tmp/gpuspy-parts
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
make -s libs > /dev/null || exit 1
L=$(pwd)/lib/libgpuspy.so
for r in $(seq "${ROUNDS:-2}"); do
	for how in untraced "" "GPUSPY_STACKS=0" "GPUSPY_TORCH=0" "GPUSPY_STACKS=0 GPUSPY_TORCH=0"; do
		echo "== round $r: ${how:-gpuspy}"
		if [ "$how" = untraced ]; then
			taskset -c 2,3,4,5 python3 bench/gpu/cost_parts.py
		else
			env $how LD_PRELOAD=$L GPUSPY_CUPTI=off GPUSPY_DIR=/tmp/gpuspy-parts taskset -c 2,3,4,5 python3 bench/gpu/cost_parts.py
		fi
		rm -f /tmp/gpuspy-parts/*
	done
done 2>&1 | tee "$OUT/cost_parts.txt"
