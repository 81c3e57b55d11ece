#!/bin/bash
# SPDX-License-Identifier: MIT
# What tracing adds to the what-if suite's host-bound steps, part by part,
# so that the replay can take it off (docs/measurements.md: traced, the
# JAX loop's step ran 1.5 times its untraced one, and the prediction
# inherited it: tests/gpu/results/round3/whatif-jax-h100.md). For each
# program (default: jax_hostbound, slow and --fix; TC_PROGS to change) and
# each mode, ROUNDS rounds (default 4), the modes in a new order each
# round:
#   none     untraced
#   bare     the independent CUPTI counter alone (tests/gpu/cupti_count.c,
#            kernel, copy and memset activity records): CUPTI's own cost
#   nocupti  gpuspy with GPUSPY_CUPTI=off: gpuspy's host recording
#   gpuspy   gpuspy's defaults (CUPTI on)
#   lean     gpuspy with CUPTI, without NVTX ranges and NVML sampling
#            (GPUSPY_NVTX=0 GPUSPY_NVML_MS=0): what those add to it
# Each run prints its steady step (whatif step_ms=...). Then
# bench/gpu/cupti_costs.cu (none against bare) for a graph of 4 and of 28
# kernels (the JAX step's graph): what CUPTI adds to one launch call. The
# first round's traces (nocupti, gpuspy) are read part by part
# (step_parts.py): what CUPTI adds to each call and gap of the step.
# Results: $OUT/traced_cost.md. From the repository root, after
# `make gpu-carry`, carrying .gpu and tools/gpuspy:
#   bash tests/gpu/whatif/traced_cost.sh
. tests/gpu/setup.sh /tmp/gpuspy-traced-cost
W=tests/gpu/whatif
ROUNDS=${ROUNDS:-4}
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o "$WORK/libcupti_count.so" \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
run_mode() { # mode out args...
	local m=$1 o=$2; shift 2
	mkdir -p "$WORK/t" # (gpuspy makes no directory: without it, no trace, no cost)
	case $m in
	none) timeout --foreground 120 "$@" ;;
	bare) timeout --foreground 120 env CUPTI_COUNT_OUT="$WORK/count-%p.json" \
		CUDA_INJECTION64_PATH="$WORK/libcupti_count.so" "$@" ;;
	nocupti) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" GPUSPY_CUPTI=off LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	gpuspy) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	lean) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" GPUSPY_NVTX=0 GPUSPY_NVML_MS=0 \
		LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	esac > "$o" 2> "$o.err"
	# The first round's traces of each gpuspy mode stay, to be read part
	# by part (step_parts.py).
	[ -d "$WORK/t" ] && [ ! -e "$o.gspy" ] && mv "$(ls "$WORK"/t/*.gspy | head -1)" "$o.gspy" 2> /dev/null
	rm -rf "$WORK/t"
	sed -n 's/^whatif step_ms=\([0-9.]*\).*/\1/p' "$o" | tail -1
}
{
	echo "# tests/gpu/whatif/traced_cost.sh, ROUNDS=$ROUNDS, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
	echo
	echo "| program | round | none | bare | nocupti | gpuspy | lean |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
} > "$OUT/traced_cost.md"
for p in ${TC_PROGS:-jax_hostbound}; do
	for v in slow fixed; do
		f=; [ $v = fixed ] && f=--fix
		for r in $(seq "$ROUNDS"); do
			declare -A got=()
			for m in $(printf '%s\n' none bare nocupti gpuspy lean | shuf); do
				o="$WORK/$p-$v-$m-$r.out"; [ "$r" = 1 ] || o="$WORK/$p-$v-$m-n.out"
				got[$m]=$(run_mode "$m" "$o" python3 "$W/$p.py" $f)
			done
			echo "| $p $v | $r | ${got[none]} | ${got[bare]} | ${got[nocupti]} | ${got[gpuspy]} | ${got[lean]} |" >> "$OUT/traced_cost.md"
			unset got
		done
	done
done
python3 - "$OUT/traced_cost.md" >> "$OUT/traced_cost.md" <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    c = [x.strip() for x in l.strip().strip("|").split("|")]
    if len(c) == 7 and c[1].isdigit():
        rows.setdefault(c[0], []).append([float(x) if x else None for x in c[2:]])
print("\nMedians, ms a step, and each mode's over none:\n")
print("| program | none | bare | nocupti | gpuspy | lean | bare/none | nocupti/none | gpuspy/none | lean/none |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for k, v in rows.items():
    med = [statistics.median([r[i] for r in v if r[i] is not None] or [0]) for i in range(5)]
    print(f"| {k} | " + " | ".join(f"{x:.4f}" for x in med) + " | " +
          " | ".join(f"{x / med[0]:.3f}" if med[0] else "-" for x in med[1:]) + " |")
PY
{
	echo; echo "The first round's step on its launching thread, part by part (step_parts.py), without CUPTI and with it:"
	timeout 120 python3 "$W/step_parts.py" "$ROOT/tools/gpuspy" "$WORK"/*-1.out.gspy
} >> "$OUT/traced_cost.md"
nvcc -O2 -o "$WORK/cupti_costs" bench/gpu/cupti_costs.cu -lcuda -lcupti || exit 1
for n in 4 28; do
	echo; echo "bench/gpu/cupti_costs.cu, CC_GRAPH_NODES=$n:"; echo
	CC_GRAPH_NODES=$n "$WORK/cupti_costs" "${CC_ROUNDS:-15}"
done >> "$OUT/traced_cost.md"
cat "$OUT/traced_cost.md"
