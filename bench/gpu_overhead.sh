#!/bin/bash
# SPDX-License-Identifier: MIT
# The H200 overhead benchmark on its own: builds libgpuspy and the bare CUPTI
# collector, then runs bench/gpu_overhead.py. From the repository root:
#   bash bench/gpu_overhead.sh        (results in $OUT/overhead.md)
set -u
OUT=${OUT:-/tmp/gpuspy-gpu}
WORK=/tmp/gpuspy-overhead
mkdir -p "$OUT" "$WORK"
export LD_LIBRARY_PATH="$(pwd)/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
make -s lib/libgpuspy.so > /dev/null || exit 1
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o "$WORK/libcupti_count.so" \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
python3 bench/gpu_overhead.py "$WORK" "$OUT"
