#!/bin/sh
# `make demo`: installs what is missing, builds, runs an example under
# gpuspy and prints what was recorded. On a machine with an NVIDIA GPU and
# nvcc the example is examples/static_launches.cu (static cudart, like a
# closed binary); elsewhere it is tests/prog_train.c (a training loop with
# data, forward, backward and optimizer phases) on the CUDA test doubles,
# with GPU times from the CUPTI double.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh
make -s all
dir=$(mktemp -d /tmp/gpuspy-demo.XXXXXX)
if nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null 2>&1; then
	echo "== GPU found: tracing examples/static_launches.cu (built by nvcc, static cudart)"
	nvcc -O2 -o "$dir/static_launches" examples/static_launches.cu
	GPUSPY_DIR="$dir" LD_PRELOAD="$PWD/lib/libgpuspy.so" "$dir/static_launches"
else
	echo "== no GPU here: tracing tests/prog_train.c on the CUDA and CUPTI test doubles (tests/doubles)"
	make -s test-build
	# GPUSPY_CLOCK=mono: the double's GPU times are in the clock callback's
	# units, nanoseconds only on the monotonic clock.
	GPUSPY_DIR="$dir" GPUSPY_CUPTI=on GPUSPY_CLOCK=mono LD_LIBRARY_PATH="$PWD/tests/bin" \
		LD_PRELOAD="$PWD/lib/libgpuspy.so" tests/bin/prog_train > /dev/null
fi
echo "== recorded in $dir: gpuspy report $dir"
tools/gpuspy report "$dir"
echo "== the events themselves: gpuspy dump (first 8 lines)"
tools/gpuspy dump "$dir"/*.gspy | head -8
