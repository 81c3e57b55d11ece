#!/bin/bash
# SPDX-License-Identifier: MIT
# 2D, 3D, same-device peer and batched copies on the real CUPTI (what the
# CUPTI double models for them, checked): tests/gpu/copies.cu under gpuspy
# with CUPTI on, then under the independent counter alone;
# tests/gpu/copies_check.py compares. From the repository root, carrying
# .gpu and tools/gpuspy (`make gpu-carry`):
#   bash tests/gpu/copies_check.sh        (results under $OUT)
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/gpuspy-gpu}
W=/tmp/gpuspy-copies
rm -rf $W; mkdir -p "$OUT" $W/trace
export LD_LIBRARY_PATH="$ROOT/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
make -s libs CFLAGS="-O2 -g" || { echo "build failed"; exit 1; }
nvcc -O2 -o $W/copies tests/gpu/copies.cu || exit 1
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o $W/libcupti_count.so \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
GPUSPY_DIR=$W/trace GPUSPY_CUPTI=on LD_PRELOAD=$ROOT/lib/libgpuspy.so $W/copies > $W/stdout.txt || exit 1
./tools/gpuspy dump $W/trace/*.gspy -o $W/trace.jsonl || exit 1
CUPTI_COUNT_OUT=$W/counter.json CUDA_INJECTION64_PATH=$W/libcupti_count.so $W/copies > /dev/null || exit 1
python3 tests/gpu/copies_check.py $W/stdout.txt $W/trace.jsonl $W/counter.json | tee "$OUT/copies_check.md"
exit "${PIPESTATUS[0]}"
