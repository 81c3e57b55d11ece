#!/bin/bash
# SPDX-License-Identifier: MIT
# Host cost of GPUSPY_CUPTI=events on the H200: the driver calls it makes
# (each interleaved with a launch), then a phase loop untraced, under gpuspy
# with GPUSPY_CUPTI=off and with =events, interleaved ROUNDS times; then the
# same with the GPU on the loop's critical path ("busy").
# From the repository root after `make gpu-carry`:
#   bash bench/gpu/event_costs.sh        (results in $OUT/event_costs.txt)
set -u
OUT=${OUT:-/tmp/gpuspy-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
make -s libs > /dev/null || exit 1
W=/tmp/gpuspy-event-costs
rm -rf "$W"; mkdir -p "$W"
nvcc -O2 -Iinclude -o "$W/event_costs" bench/gpu/event_costs.cu -lcuda || exit 1
{
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	"$W/event_costs"
	for busy in "" busy; do
		for r in $(seq "${ROUNDS:-5}"); do
			echo -n "round $r untraced: "; "$W/event_costs" "${ITERS:-5000}" $busy
			for m in off events; do
				echo -n "round $r gpuspy $m: "
				LD_PRELOAD=$(pwd)/lib/libgpuspy.so GPUSPY_CUPTI=$m GPUSPY_DIR=$W \
					"$W/event_costs" "${ITERS:-5000}" $busy
			done
		done
	done
	ls "$W" | grep -c "^gpuspy-"; ls "$W" 
} 2>&1 | tee "$OUT/event_costs.txt"
