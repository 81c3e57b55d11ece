#!/bin/sh
# `make demo`: installs what is missing, builds, runs an example under
# gpuspy and prints its report. On a machine with an NVIDIA GPU and nvcc
# the example is examples/static_launches.cu (static cudart, like a closed
# binary); elsewhere it is tests/progs/prog_train.c (a training loop with data,
# forward, backward and optimizer phases) on the CUDA test doubles, with GPU
# times from the CUPTI double. The build's output goes to a log, shown only
# if the build fails.
# GPUSPY_CMD=/path/to/gpuspy: use that (an installed copy, with the
# library installed beside it) instead of the tree's tools/gpuspy.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh demo
dir=$(mktemp -d /tmp/gpuspy-demo.XXXXXX)
gpuspy=${GPUSPY_CMD:-tools/gpuspy}
build() {
	if ! make "$@" > "$dir/build.log" 2>&1; then
		cat "$dir/build.log" >&2
		echo "demo: error: make $* failed (log above)" >&2
		exit 1
	fi
}
echo "== building gpuspy (log: $dir/build.log)"
build all
if nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null 2>&1; then
	echo "== GPU found: tracing examples/static_launches.cu (built by nvcc, static cudart)"
	nvcc -O2 -o "$dir/static_launches" examples/static_launches.cu
	"$gpuspy" run --dir "$dir" --no-report -- "$dir/static_launches"
else
	echo "== no GPU here: tracing tests/progs/prog_train.c on the CUDA and CUPTI test doubles (tests/doubles)"
	build test-build
	# GPUSPY_CLOCK=mono: the double's GPU times are in the clock callback's
	# units, nanoseconds only on the monotonic clock.
	GPUSPY_CLOCK=mono LD_LIBRARY_PATH="$PWD/tests/bin" \
		"$gpuspy" run --dir "$dir" --cupti on --no-report -- tests/bin/prog_train > /dev/null
fi
trace=$(ls "$dir"/*.gspy | head -1)
echo "== $gpuspy report $dir"
echo
"$gpuspy" report "$dir"
echo
echo "== next, from $PWD:"
echo "   $gpuspy report --json $dir            # the same numbers as JSON"
echo "   $gpuspy export --format chrome $dir -o $dir/timeline.json   # open in ui.perfetto.dev"
echo "   $gpuspy dump $trace -o $dir/trace.jsonl   # every event, one JSON line each"
