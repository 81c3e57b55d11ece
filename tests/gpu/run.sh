#!/bin/bash
# SPDX-License-Identifier: MIT
# GPU checks of the recording path (issue 2, point 9), run on the H200 via the
# device tool from the repository root:
#
#   bash tests/gpu/run.sh            (results under $OUT, or /tmp/gpuspy-gpu)
#
# Builds libgpuspy there, builds an independent CUPTI counter and a static
# nvcc program, then runs each case once with both gpuspy (LD_PRELOAD) and the
# counter (CUDA_INJECTION64_PATH) in the same process (gpuspy with CUPTI off:
# one CUPTI subscriber per process) and compares kernel
# launches, H2D copies and bytes. tools/gpuspy comes prebuilt (the GPU image
# has no cJSON): carry tools/gpuspy and .gpu (libcjson.so.1), made by
# `make gpu-carry` on the CPU machine.
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/gpuspy-gpu}
WORK=/tmp/gpuspy-gpu-work
rm -rf "$WORK"; mkdir -p "$OUT" "$WORK"
export LD_LIBRARY_PATH="$ROOT/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
{
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	python3 -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])'
	uname -r; ldd --version | head -1
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

make -s libs CFLAGS="-O2 -g" || { echo "build failed"; exit 1; }
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o "$WORK/libcupti_count.so" \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
nvcc -O2 -o "$WORK/static_launches" examples/static_launches.cu || exit 1
./tools/gpuspy --version || exit 1

run_case() { # name command...
	local name=$1; shift
	local d="$WORK/$name"; mkdir -p "$d"
	local t0=$(date +%s.%N)
	GPUSPY_DIR="$d" CUPTI_COUNT_OUT="$d/cupti.json" CUDA_INJECTION64_PATH="$WORK/libcupti_count.so" \
		LD_PRELOAD="$ROOT/lib/libgpuspy.so" GPUSPY_CUPTI=off GPUSPY_DEBUG=1 "$@" > "$d/stdout.txt" 2> "$d/stderr.txt"
	local rc=$?
	local t1=$(date +%s.%N)
	echo "$name: exit $rc, $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s; $(tail -1 "$d/stdout.txt")"
	tail -3 "$d/stderr.txt"
	for f in "$d"/*.gspy; do
		[ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"
	done
	ls "$d"
}

run_case static "$WORK/static_launches"
run_case mlp python3 tests/gpu/mlp.py 310

python3 tests/gpu/summarize.py "$WORK" static mlp | tee "$OUT/summary.md"
rc=${PIPESTATUS[0]}
cp "$WORK/summary.json" "$OUT/"

# Issue 4: phases with no code change, and the examples' diagnoses.
report_case() { # name command...   (gpuspy run, then the reports)
	local name=$1; shift
	local d="$WORK/run_$name"
	./tools/gpuspy run --dir "$d" --no-report -- "$@" > "$WORK/$name.stdout" 2> "$WORK/$name.stderr"
	echo "$name: exit $?; $(tail -1 "$WORK/$name.stdout")"
	./tools/gpuspy report --color never "$d" > "$WORK/$name.report.txt"
	./tools/gpuspy report --json "$d" > "$WORK/$name.report.json"
}
for ex in pinned_vs_pageable data_starved alloc_churn; do
	nvcc -O2 -cudart shared -Iinclude -o "$WORK/ex_$ex" "examples/$ex.cu" || exit 1
	report_case "ex_$ex" "$WORK/ex_$ex"
done
report_case mlp_loader python3 tests/gpu/mlp.py 60 --loader
report_case train_slow python3 examples/train.py --steps 40
report_case train_fast python3 examples/train.py --steps 40 --workers 4 --pin-memory
python3 tests/gpu/check_phases.py "$WORK" | tee "$OUT/phases.txt"
rc2=${PIPESTATUS[0]}

# Issue 7: events from threads the driver (host functions, stream callbacks)
# and CUPTI create.
nvcc -O2 -Iinclude -o "$WORK/threads" tests/gpu/threads.cu || exit 1
mkdir -p "$WORK/threads_run"
GPUSPY_DIR="$WORK/threads_run" GPUSPY_CUPTI=on LD_PRELOAD="$ROOT/lib/libgpuspy.so" \
	"$WORK/threads" > "$WORK/threads_run/stdout.txt" 2> "$WORK/threads_run/stderr.txt"
echo "threads: exit $?"
for f in "$WORK/threads_run"/*.gspy; do [ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"; done
python3 tests/gpu/check_threads.py "$WORK/threads_run" | tee "$OUT/threads.txt"
rc3=${PIPESTATUS[0]}
( cd "$WORK" && tar czf "$OUT/reports.tgz" *.report.txt *.report.json *.stdout )
exit $(( rc || rc2 || rc3 ))
