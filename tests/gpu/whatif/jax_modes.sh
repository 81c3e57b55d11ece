#!/bin/bash
# SPDX-License-Identifier: MIT
# Why processes of the host-bound JAX loop run its slow step in two
# modes (0.07 and 0.12 ms on the H200 and on H100s: docs/measurements.md),
# and why a set's traced processes all land in one of them (run11: five
# of five fast, their untraced four of five slow; an H100's five of five
# slow). On a lent GPU machine, from the repository root (carry .gpu and
# tools/gpuspy):
#
#   ROUNDS=8 bash tests/gpu/whatif/jax_modes.sh
#
# Each round, in a new random order, the slow loop (jax_hostbound.py
# --blocks 10: ten timed blocks, the CPU its thread ran on after each,
# then its threads' CPUs and its huge pages) run six ways: untraced
# (none); with address-space randomisation off and a fixed hash seed
# (noaslr: whether the mode is the process's memory layout); under
# libgpuspy with CUPTI off (preload: gpuspy's hooks and its libraries'
# layout, no records); traced whole (gpuspy, with its report's
# prediction); traced with randomisation off (gpuspy_noaslr); and the
# whole process on one CPU (onecpu: whether the mode is where its threads
# land). Writes $OUT/jax_modes.md: a row a process, then each way's
# median and range, and how much a process's blocks spread.
set -u
. tests/gpu/setup.sh /tmp/gpuspy-jax-modes
ROUNDS=${ROUNDS:-8}
LIMIT=${LIMIT:-120}
P="python3 tests/gpu/whatif/jax_hostbound.py --blocks 10 --steps 5000"
NOASLR="env PYTHONHASHSEED=0 setarch $(uname -m) -R"
ONE=$(python3 -c 'import os; print(sorted(os.sched_getaffinity(0))[2])')
run() { # way round
	local w=$1 r=$2 d="$WORK/$1-$2"
	mkdir -p "$d/t"
	case $w in
	none) timeout --foreground $LIMIT $P ;;
	noaslr) timeout --foreground $LIMIT $NOASLR $P ;;
	onecpu) timeout --foreground $LIMIT taskset -c "$ONE" $P ;;
	preload) GPUSPY_CUPTI=off GPUSPY_DIR="$d/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" timeout --foreground $LIMIT $P ;;
	gpuspy) GPUSPY_DIR="$d/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" timeout --foreground $LIMIT $P ;;
	gpuspy_noaslr) GPUSPY_DIR="$d/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" timeout --foreground $LIMIT $NOASLR $P ;;
	esac > "$d/out" 2> "$d/err"
	case $w in gpuspy*) ./tools/gpuspy report --json "$d/t" > "$d/report.json" 2> "$d/report.err" ;; esac
	echo "$w round $r: $(sed -n 's/^whatif step_ms=\([0-9.]*\).*/\1/p' "$d/out")"
}
for r in $(seq "$ROUNDS"); do
	for w in $(printf '%s\n' none noaslr onecpu preload gpuspy gpuspy_noaslr | shuf); do
		run "$w" "$r"
	done
done
{
	echo "# ROUNDS=$ROUNDS bash tests/gpu/whatif/jax_modes.sh"
	echo
	nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
	echo "$(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); onecpu: CPU $ONE"
	echo
	python3 tests/gpu/whatif/jax_modes.py "$WORK"
} > "$OUT/jax_modes.md"
(cd "$WORK" && tar cJf "$OUT/jax_modes.tar.xz" */out */err */report.json 2> /dev/null)
cat "$OUT/jax_modes.md"
