#!/bin/bash
# SPDX-License-Identifier: MIT
# An experiment, not a build anyone runs: what gpuspy's time on the JAX
# step would be with no encoder (issue 37). tests/gpu/raw_records.patch
# makes gs_commit copy the 64-byte record into the chunk as it is (the
# trace is then unreadable; only the cost is looked at); that build runs
# as pcsample.sh's "before" beside the tree's own, in the same rounds.
#   bash tests/gpu/raw_records.sh        (results under $OUT; carry .gpu)
set -u
ROOT=$(pwd)
V=/tmp/gpuspy-raw
rm -rf $V; mkdir -p $V
tar -C "$ROOT" --exclude=./.git -cf - . | tar -C $V -xf -
cd $V && patch -s -p1 < tests/gpu/raw_records.patch && make -s clean > /dev/null &&
	make -s libs CFLAGS="-O2 -g" || { echo "raw build failed"; exit 1; }
cd "$ROOT"
export GPUSPY_BUFFER_MB=1024 # the raw build fills chunks four times as fast: none may drop
LOOP=jax STEPS=${STEPS:-40000} ROUNDS=${ROUNDS:-4} MODES="bare gpuspy gpuspy_before cupti cupti_before" \
	LIB_BEFORE=$V/lib/libgpuspy.so bash tests/gpu/pcsample.sh
