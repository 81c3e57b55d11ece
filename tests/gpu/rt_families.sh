#!/bin/bash
# SPDX-License-Identifier: MIT
# The runtime families of tests/progs/prog_rt_more.c on the real runtime:
# tests/gpu/rt_families.cu built with the shared cudart (route 1: the
# runtime's exported names) and the static one (route 3: the driver calls
# it makes through cuGetProcAddress), each traced without CUPTI; then
# check_rt_families.py. From the repository root after `make gpu-carry`:
#   bash tests/gpu/rt_families.sh   (results in $OUT)
. tests/gpu/setup.sh /tmp/gpuspy-rtfam
nvcc -O2 -cudart shared -o "$WORK/rt_shared" tests/gpu/rt_families.cu -lcuda || exit 1
nvcc -O2 -o "$WORK/rt_static" tests/gpu/rt_families.cu -lcuda || exit 1
for b in shared static; do
	mkdir -p "$WORK/$b"
	GPUSPY_DIR="$WORK/$b" GPUSPY_CUPTI=off LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$WORK/rt_$b" \
		> "$WORK/$b.stdout" || { echo "rt_$b failed"; cat "$WORK/$b.stdout"; exit 1; }
	./tools/gpuspy dump "$WORK/$b"/*.gspy -o "$WORK/$b.jsonl" || exit 1
done
python3 tests/gpu/check_rt_families.py "$WORK/shared.stdout" "$WORK/shared.jsonl" "$WORK/static.jsonl" |
	tee "$OUT/rt_families.txt"
exit "${PIPESTATUS[0]}"
