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
#   PART=cupti-toggle: paired windows for the correlation's price inside
#     CUPTI: the bare collector (tests/gpu/cupti_count.c) with its empty
#     driver-API callback (cb) or driver-API records (api) switched on and
#     off, none (an A/A check: nothing switches), and gpuspy with CUPTI on
#     as in PART=toggle; TOGGLES processes each.
#   PART=spread: where the untraced loop's process-to-process spread comes
#     from: SPREAD_RUNS rounds of three untraced processes, pinned to
#     PIN_CPUS, the same with hash seed and address layout fixed
#     (PYTHONHASHSEED=0, setarch -R), and unpinned.
#   PART=lockstep: untraced (twice: an A/A check), gpuspy, gpuspy+cupti and
#     bare cupti as processes alive at once that take turns window by
#     window (bench/gpu_lockstep.py), LOCKSTEP_RUNS times; drift between
#     rounds falls out of the ratios.
#   PART=lockstep-parts: lock step with gpuspy variants that split its cost
#     (call stacks off, shallower or only on calls of 20 us or more; the
#     PyTorch helper off or in part).
#   PART=lockstep-replicas: lock step with three processes each of
#     untraced and gpuspy's defaults, two of GPUSPY_STACKS=all (every copy
#     and memset with a stack) and one of stacks off, so that a process's
#     own luck shows; one run of 200 rounds (LOOP=conv for the conv loop).
#   PART=lockstep-cupti: where gpuspy + CUPTI's cost beyond the bare
#     collector goes: gpuspy + CUPTI and the bare collector twice each, and
#     the bare collector with gpuspy's timestamp callback (CUPTI_COUNT_TS),
#     its empty driver-API callback (CUPTI_COUNT_CB) and both; 200 rounds.
#   PART=lockstep-cupti-flush: the rest of that cost: the bare collector
#     flushing as gpuspy does (CUPTI_COUNT_FLUSH), that with the timestamp
#     and driver-API callbacks, and gpuspy without its own CUPTI but with
#     the bare collector (callbacks on) injected beside it; 200 rounds.
#   PART=lockstep-flush: which part of that flushing costs: CUPTI's flush
#     period alone, the flushing thread alone, both every 5 s; 120 rounds.
#   PART=lockstep-targets: the two targets in one run: gpuspy x3, gpuspy +
#     CUPTI x2 and the bare collector x2 against untraced x2, and gpuspy +
#     CUPTI flushing every second as before 96109f9 (GPUSPY_CUPTI_FLUSH=1);
#     180 rounds.
#   PART=lockstep-target-cupti: the CUPTI target alone, more pairs a round:
#     gpuspy + CUPTI x3 and the bare collector x3 against untraced x2; 210
#     rounds (~330 s).
#   PART=lockstep-target-plain: the target without CUPTI alone: gpuspy x3
#     against untraced x2; 280 rounds (~250 s).
#   PART=lockstep-target-plain6, lockstep-target-cupti4: the same targets
#     with more processes a run, for the statistics that take each process
#     (pair) as one draw: gpuspy x6 against untraced x2, 150 rounds; gpuspy +
#     CUPTI x4 and the bare collector x4 against untraced x2, 140 rounds.
#   PART=lockstep-flush-period: the periodic flush's price on gpuspy
#     itself: gpuspy + CUPTI at its default period (5 s while the loop
#     launches) and at GPUSPY_CUPTI_FLUSH=1, two processes each, against
#     untraced x2; 150 rounds.
#   PART=lockstep-split: gpuspy's own cost split, two processes each: the
#     library preloaded but passing every call through (GPUSPY_DISABLE=1),
#     without the PyTorch helper (GPUSPY_TORCH=0), and defaults; 200 rounds.
#   PART=lockstep-helper: the PyTorch helper's per-call work in libgpuspy's
#     builtins (defaults, three processes) against its Python version
#     (bench/helper_probe GPUSPY_PROBE=python, two) and no helper
#     (GPUSPY_TORCH=0, two), untraced twice; 170 rounds.
#   PART=lockstep-host: libgpuspy-host.so (malloc & co. interposed, every
#     call passed through: how every run before 2026-11-30 traced) preloaded
#     beside gpuspy's defaults (three processes each), and the library
#     passing every call through without it (GPUSPY_DISABLE=1); 170 rounds.
#   PART=lockstep-alt: the tree's library (three processes) against another
#     build of it (three, ALT_LIB=1): the sources that `bash bench/alt_build.sh
#     REV` put in .gpu/alt, built here with the same compiler; 170 rounds.
#   PART=lockstep-events: the GPU time from CUDA events at phase boundaries
#     (GPUSPY_CUPTI=events, two processes) against gpuspy without GPU
#     timing; 120 rounds.
# From the repository root after `make gpu-carry`:
#   PART=toggle bash bench/gpu/overhead_paired.sh      (results in $OUT)
set -u
OUT=${OUT:-/tmp/gpuspy-gpu}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
make -s libs > /dev/null || exit 1
W=/tmp/gpuspy-lockstep # PART=lockstep's work directory and bare collector
# A lock-step preset: one run of WINDOWS (default $1) rounds of MODES
# (default $2).
preset() {
	MODES=${MODES:-$2} WINDOWS=${WINDOWS:-$1} LOCKSTEP_RUNS=1 PART=lockstep bash "$0"
}
# The lock-step presets: PART -> "WINDOWS MODES" (described above).
C="CUDA_INJECTION64_PATH=$W/libcupti_count.so" # the bare collector beside gpuspy
declare -A PRESETS=(
	# stacks off, shallower, only on calls of 20 us or more; the PyTorch helper
	# off, or a part of it taken away by bench/helper_probe
	[lockstep-parts]="220 untraced,untraced b,gpuspy,gpuspy GPUSPY_STACKS=0,gpuspy GPUSPY_STACK_DEPTH=8,gpuspy GPUSPY_STACK_MIN=20us,gpuspy GPUSPY_TORCH=0,gpuspy GPUSPY_PROBE=nolib,gpuspy GPUSPY_PROBE=nohook,gpuspy GPUSPY_PROBE=nowrap"
	[lockstep-replicas]="200 untraced,untraced b,untraced #3,gpuspy,gpuspy #2,gpuspy #3,gpuspy GPUSPY_STACKS=all,gpuspy GPUSPY_STACKS=all #2,gpuspy GPUSPY_STACKS=0"
	[lockstep-cupti]="200 untraced,untraced b,gpuspy+cupti,gpuspy+cupti #2,bare cupti,bare cupti #2,bare cupti CUPTI_COUNT_TS=1,bare cupti CUPTI_COUNT_CB=1,bare cupti CUPTI_COUNT_TS=1 CUPTI_COUNT_CB=1"
	[lockstep-cupti-flush]="200 untraced,untraced b,gpuspy,gpuspy+cupti,bare cupti,bare cupti CUPTI_COUNT_FLUSH=1,bare cupti CUPTI_COUNT_TS=1 CUPTI_COUNT_CB=1 CUPTI_COUNT_FLUSH=1,gpuspy $C CUPTI_COUNT_TS=1 CUPTI_COUNT_CB=1"
	[lockstep-flush]="120 untraced,bare cupti,bare cupti CUPTI_COUNT_FLUSH=1,bare cupti CUPTI_COUNT_FLUSH=period,bare cupti CUPTI_COUNT_FLUSH=thread,bare cupti CUPTI_COUNT_FLUSH=1 CUPTI_COUNT_FLUSH_S=5"
	[lockstep-targets]="180 untraced,untraced b,gpuspy,gpuspy #2,gpuspy #3,gpuspy+cupti,gpuspy+cupti #2,bare cupti,bare cupti #2,gpuspy GPUSPY_CUPTI=on GPUSPY_CUPTI_FLUSH=1"
	[lockstep-target-cupti]="210 untraced,untraced b,gpuspy+cupti,gpuspy+cupti #2,gpuspy+cupti #3,bare cupti,bare cupti #2,bare cupti #3"
	[lockstep-target-plain]="280 untraced,untraced b,gpuspy,gpuspy #2,gpuspy #3"
	[lockstep-target-plain6]="150 untraced,untraced b,gpuspy,gpuspy #2,gpuspy #3,gpuspy #4,gpuspy #5,gpuspy #6"
	[lockstep-target-cupti4]="140 untraced,untraced b,gpuspy+cupti,gpuspy+cupti #2,gpuspy+cupti #3,gpuspy+cupti #4,bare cupti,bare cupti #2,bare cupti #3,bare cupti #4"
	[lockstep-helper]="170 untraced,untraced b,gpuspy,gpuspy #2,gpuspy #3,gpuspy GPUSPY_PROBE=python,gpuspy GPUSPY_PROBE=python #2,gpuspy GPUSPY_TORCH=0,gpuspy GPUSPY_TORCH=0 #2"
	[lockstep-host]="170 untraced,untraced b,gpuspy,gpuspy #2,gpuspy #3,gpuspy HOST_SHIM=1,gpuspy HOST_SHIM=1 #2,gpuspy HOST_SHIM=1 #3,gpuspy GPUSPY_DISABLE=1"
	[lockstep-alt]="170 untraced,untraced b,gpuspy,gpuspy #2,gpuspy #3,gpuspy ALT_LIB=1,gpuspy ALT_LIB=1 #2,gpuspy ALT_LIB=1 #3"
	[lockstep-events]="120 untraced,untraced b,gpuspy,gpuspy events,gpuspy events #2"
	[lockstep-flush-period]="150 untraced,untraced b,gpuspy+cupti,gpuspy+cupti #2,gpuspy GPUSPY_CUPTI=on GPUSPY_CUPTI_FLUSH=1,gpuspy GPUSPY_CUPTI=on GPUSPY_CUPTI_FLUSH=1 #2"
	[lockstep-split]="200 untraced,untraced b,gpuspy,gpuspy #2,gpuspy GPUSPY_DISABLE=1,gpuspy GPUSPY_DISABLE=1 #2,gpuspy GPUSPY_TORCH=0,gpuspy GPUSPY_TORCH=0 #2"
)
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
elif [ "$PART" = cupti-toggle ]; then
	W=/tmp/gpuspy-ctoggle
	mkdir -p $W
	gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o $W/libcupti_count.so \
		-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
	for mode in ${CTOGGLE_MODES:-none cb api gpuspy}; do
		for i in $(seq "${TOGGLES:-5}"); do
			echo -n "$mode: "
			if [ "$mode" = gpuspy ]; then
				LD_PRELOAD=$(pwd)/lib/libgpuspy.so GPUSPY_CUPTI=on GPUSPY_DIR=$W \
					python3 tests/gpu/loops.py mlp --steps "${TOGGLE_STEPS:-3000}" --toggle 2>&1
			else
				env CUPTI_COUNT_CB=$([ $mode = cb ] && echo 1) CUPTI_COUNT_API=$([ $mode = api ] && echo 1) \
					CUDA_INJECTION64_PATH=$W/libcupti_count.so CUPTI_COUNT_LIB=$W/libcupti_count.so \
					CUPTI_COUNT_OUT=$W/c.json \
					python3 tests/gpu/loops.py mlp --steps "${TOGGLE_STEPS:-3000}" --toggle 2>&1
			fi | grep -E '^(toggle_ratio|steps_per_s)' | tr '\n' ' '
			echo
			rm -f $W/*.gspy
		done
	done | tee "$OUT/ctoggle.txt"
elif [ -n "${PRESETS[$PART]:-}" ]; then
	if [ "$PART" = lockstep-alt ]; then # the other build, from .gpu/alt (bench/alt_build.sh)
		[ -f .gpu/alt/REV ] || { echo "lockstep-alt: no .gpu/alt: run bash bench/alt_build.sh REV first"; exit 1; }
		make -s -C .gpu/alt libs > /dev/null || exit 1
		export LOCKSTEP_ALT_LIB=$(pwd)/.gpu/alt/lib/libgpuspy.so
		echo "lockstep-alt: ALT_LIB=1 is $(cat .gpu/alt/REV)"
	fi
	preset ${PRESETS[$PART]%% *} "${PRESETS[$PART]#* }"
elif [ "$PART" = lockstep ]; then
	mkdir -p $W
	gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o $W/libcupti_count.so \
		-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
	for i in $(seq "${LOCKSTEP_RUNS:-3}"); do
		mkdir -p "$OUT/lockstep-$i"
		lscpu -e > "$OUT/lockstep-$i/cpus.txt" 2>&1 # which of PIN_CPUS share a core (lockstep_sched.txt)
		PIN_CPUS=${PIN_CPUS:-2,3,4,5} python3 bench/gpu_lockstep.py $W "$OUT/lockstep-$i" || exit 1
		rm -rf $W/lockstep-*
	done
elif [ "$PART" = spread ]; then
	for i in $(seq "${SPREAD_RUNS:-8}"); do
		for how in pinned fixed unpinned; do
			case $how in
			pinned) cmd="taskset -c ${PIN_CPUS:-2,3,4,5}" ;;
			fixed) cmd="env PYTHONHASHSEED=0 setarch $(uname -m) -R taskset -c ${PIN_CPUS:-2,3,4,5}" ;;
			unpinned) cmd= ;;
			esac
			echo -n "$how: "
			$cmd python3 tests/gpu/loops.py mlp --steps "${MLP_STEPS:-1000}" 2>&1 |
				grep -E '^(window_steps_per_s|steps_per_s)' | tr '\n' ' '
			echo
		done
	done | tee "$OUT/spread.txt"
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
