#!/bin/bash
# SPDX-License-Identifier: MIT
# gpuspy's cost on the MLP loop measured two ways (each fits one device call):
#   PART=toggle: paired recorded/paused windows inside each of TOGGLES
#     processes (loops.py --toggle), for each GPUSPY_CUPTI in CUPTI_MODES
#     (off, on, events).
#     Paused = recording, the PyTorch module hook and (CUPTI on) CUPTI's
#     correlation callbacks off; CUPTI's activity records keep coming, so
#     with CUPTI on a paused window pays what a bare collector does.
#   PART=bench: ROUNDS interleaved rounds of MODES (bench/gpu_overhead.sh).
#   PART=cupti: the 0.97 target alone: untraced, gpuspy+cupti, bare cupti,
#     and the bare collector with an empty driver-API callback (what
#     gpuspy's correlation costs inside CUPTI) or with driver-API activity
#     records instead; ROUNDS (default 8) rounds, every process on PIN_CPUS
#     (default 2,3,4,5: the loop, autograd and CUPTI threads).
# From the repository root after `make gpu-carry`:
#   PART=toggle bash tests/gpu/overhead_paired.sh      (results in $OUT)
set -u
OUT=${OUT:-/tmp/gpuspy-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
make -s lib/libgpuspy.so > /dev/null || exit 1
if [ "${PART:-toggle}" = toggle ]; then
	for cupti in ${CUPTI_MODES:-off on events}; do
		for i in $(seq "${TOGGLES:-5}"); do
			mkdir -p /tmp/gpuspy-toggle
			echo -n "cupti $cupti: "
			LD_PRELOAD=$(pwd)/lib/libgpuspy.so GPUSPY_CUPTI=$cupti GPUSPY_DIR=/tmp/gpuspy-toggle \
				python3 tests/gpu/loops.py mlp --steps "${TOGGLE_STEPS:-4000}" --toggle 2>&1 |
				grep -E '^(toggle_ratio|steps_per_s|gpuspy)' | tr '\n' ' '
			echo
			rm -rf /tmp/gpuspy-toggle
		done
	done | tee "$OUT/toggle.txt"
elif [ "$PART" = cupti ]; then
	LOOPS=mlp MODES="${MODES:-untraced,gpuspy+cupti,bare cupti,bare cupti+cb,bare cupti+api}" \
		ROUNDS=${ROUNDS:-8} PIN_CPUS=${PIN_CPUS:-2,3,4,5} MLP_STEPS=${MLP_STEPS:-1000} \
		bash bench/gpu_overhead.sh > "$OUT/bench.log" 2>&1
	tail -12 "$OUT/bench.log"
else
	LOOPS=mlp MODES="${MODES:-untraced,gpuspy,gpuspy events,gpuspy+cupti,bare cupti}" ROUNDS=${ROUNDS:-6} \
		MLP_STEPS=${MLP_STEPS:-1000} bash bench/gpu_overhead.sh > "$OUT/bench.log" 2>&1
	tail -8 "$OUT/bench.log"
fi
