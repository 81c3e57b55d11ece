#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 6 on the H200: call stacks, host allocations and Python frames in
# real programs. From the repository root (carry tools/gpuspy and .gpu, made
# by `make gpu-carry`):   bash tests/gpu/stacks.sh   (results under $OUT)
#  - examples/pinned_vs_pageable.cu with GPUSPY_HOST_ALLOC_MIN: the pageable
#    copy site must be tied to its malloc line;
#  - the MLP loop (docs/design.md#the-mlp-loop) through a DataLoader with host allocations and
#    Python frames: which share of the events gets a stack (by default not
#    memsets nor copies that are not pageable), which gets Python frames,
#    and the report's call sites;
#  - examples/train.py (pageable) with GPUSPY_STACKS=all: every copy and
#    memset has a stack too; where its pageable buffers come from.
. tests/gpu/setup.sh /tmp/gpuspy-stacks
nvcc -O2 -g -cudart shared -Iinclude -o "$WORK/pinned_vs_pageable" examples/pinned_vs_pageable.cu || exit 1

case_run() { # name env... -- command...
	local name=$1; shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	local d="$WORK/$name"; mkdir -p "$d"
	local t0=$(date +%s.%N)
	env "${envs[@]}" ./tools/gpuspy run --dir "$d" --no-report -- "$@" > "$d/stdout.txt" 2> "$d/stderr.txt"
	echo "$name: exit $?, $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s; $(tail -1 "$d/stdout.txt")"
	./tools/gpuspy report --color never "$d" > "$WORK/$name.report.txt"
	./tools/gpuspy report --json "$d" > "$WORK/$name.report.json"
	for f in "$d"/*.gspy; do [ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"; done
}
case_run pinned GPUSPY_HOST_ALLOC_MIN=1M -- "$WORK/pinned_vs_pageable"
case_run mlp GPUSPY_HOST_ALLOC_MIN=64K GPUSPY_PYTHON_FRAMES=1 -- python3 tests/gpu/mlp.py 60 --loader
case_run train GPUSPY_HOST_ALLOC_MIN=1M GPUSPY_PYTHON_FRAMES=1 GPUSPY_STACKS=all -- python3 examples/train.py --steps 20
python3 tests/gpu/check_stacks.py "$WORK" | tee "$OUT/stacks.txt"
rc=${PIPESTATUS[0]}
( cd "$WORK" && tar czf "$OUT/stacks-reports.tgz" *.report.txt *.report.json */stdout.txt */stderr.txt )
exit "$rc"
