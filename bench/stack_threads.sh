#!/bin/sh
# SPDX-License-Identifier: MIT
# What a call stack costs on new threads: tests/bin/prog_thread_stacks
# (THREADS threads one after another, PAIRS alloc+free pairs each, every
# call with its stack) under each library given (default: the tree's) with
# GPUSPY_STACKS=on and =glibc, ROUNDS interleaved rounds; the median of the
# trace header's stacks_ns / stacks_taken (gpuspy's own clock around each
# unwind, see lib/stacks.c).
# Usage: make test-build && bash bench/stack_threads.sh [LIB.so ...]
set -e
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- "$PWD/lib/libgpuspy.so"
rounds=${ROUNDS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| threads x pairs | library | GPUSPY_STACKS | us a stack (median of $rounds) |"
echo "| --- | --- | --- | --- |"
for shape in "1 5000" "2000 2" "200 10" "100 100" "20 1000"; do
	for lib in "$@"; do
		for mode in on glibc; do
			: > "$tmp/us"
			for r in $(seq "$rounds"); do
				d="$tmp/d"; rm -rf "$d"; mkdir "$d"
				LD_LIBRARY_PATH=tests/bin GPUSPY_DIR="$d" GPUSPY_QUIET=1 GPUSPY_STACKS=$mode LD_PRELOAD="$lib" \
					tests/bin/prog_thread_stacks $shape > /dev/null
				tools/gpuspy dump "$d"/*.gspy | head -1 |
					python3 -c 'import json,sys; h=json.load(sys.stdin); print(h["stacks_ns"]/max(1,h["stacks_taken"])/1e3)' >> "$tmp/us"
			done
			med=$(sort -g "$tmp/us" | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}')
			echo "| $(echo $shape | tr ' ' x) | $(basename "$(dirname "$(dirname "$lib")")")/$(basename "$lib") | $mode | $med |"
		done
	done
done
