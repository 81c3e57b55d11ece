#!/bin/bash
# SPDX-License-Identifier: MIT
# Why gpuspy records nothing of a static-cudart program under Nsight
# Compute (issue 30.6): the same program with and without ncu, gpuspy's
# debug line on how entry points were handed out, and what ncu's
# environment gives the target. From the repository root:
#   bash bench/gpu/ncu_probe.sh      (results: $OUT/ncu_probe.txt)
. tests/gpu/setup.sh /tmp/gpuspy-ncu
nvcc -O2 tests/gpu/zoo/graph_nodes.cu -o "$WORK/graph_nodes" || exit 1
R="$OUT/ncu_probe.txt"
for how in plain ncu; do
	d="$WORK/$how"; mkdir -p "$d"
	pre=""; [ $how = ncu ] && pre="ncu --target-processes all -c 1"
	$pre env GPUSPY_DEBUG=1 GPUSPY_DIR="$d" LD_PRELOAD="$ROOT/lib/libgpuspy.so" \
		sh -c 'env | grep -E "^(LD_PRELOAD|CUDA_INJECTION64_PATH|NV_)" | sort > '"$d"'/env.txt; exec '"$WORK"'/graph_nodes' \
		> "$d/out" 2> "$d/err"
	{ echo "== $how: exit $?, $(ls "$d"/*.gspy 2>/dev/null | wc -l) traces"; cat "$d/env.txt"; grep gpuspy "$d/err"; } >> "$R"
done
cat "$R"
