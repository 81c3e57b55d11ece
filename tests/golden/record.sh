#!/bin/sh
# Re-records the golden inputs from the test doubles (run from the repository
# root after `make test-build`). The expected reports are then refreshed with
# `make golden-update`; review both diffs before committing.
set -e
tmp=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/tests/bin GPUSPY_DIR=$tmp
FAKECUDA_DEVICE_MEM_MB=7 LD_PRELOAD=$PWD/lib/libgpuspy.so tests/bin/prog_train 20 2000 >/dev/null
tools/gpuspy dump "$tmp"/*.gspy -o tests/golden/train.jsonl
rm -f "$tmp"/*.gspy
LD_PRELOAD=$PWD/lib/libgpuspy.so tests/bin/prog_drv >/dev/null
tools/gpuspy dump "$tmp"/*.gspy -o tests/golden/drv.jsonl
rm -f "$tmp"/*.gspy
GPUSPY_HOST_ALLOC_MIN=1M LD_PRELOAD=$PWD/lib/libgpuspy.so:$PWD/lib/libgpuspy-host.so tests/bin/prog_stacks 4 >/dev/null
tools/gpuspy dump "$tmp"/*.gspy -o tests/golden/stacks.jsonl
rm -rf "$tmp"
