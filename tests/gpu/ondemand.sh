#!/bin/bash
# SPDX-License-Identifier: MIT
# Recording on demand and gpuspy top on the H200 (issue 33, points 3 and 4),
# on real programs: the zoo's torchvision ResNet-18 with DataLoader workers
# and a JAX jitted step (tests/gpu/loops.py resnet|jax), each started with
# GPUSPY_START=paused and CUPTI on (auto). While it runs: gpuspy top --once
# --json (paused: nothing recorded), gpuspy record PID --for 3s, gpuspy top
# during the window and after it; then the window's report.
# tests/gpu/ondemand_check.py writes $OUT/ondemand.md from what came back.
# From the repository root, on the GPU machine (carry: tools/gpuspy .gpu):
#   bash tests/gpu/ondemand.sh          ONDEMAND_LOOPS="resnet jax"
. tests/gpu/setup.sh /tmp/gpuspy-ondemand
G=$ROOT/tools/gpuspy
for loop in ${ONDEMAND_LOOPS:-resnet jax}; do
	d=$WORK/$loop
	mkdir -p "$d"
	echo "== $loop"
	GPUSPY_DIR=$d GPUSPY_START=paused LD_PRELOAD=$ROOT/lib/libgpuspy.so \
		python3 tests/gpu/loops.py "$loop" --steps 100000000 --warmup 5 > "$d/loop.txt" 2>&1 &
	pid=$!
	for _ in $(seq 150); do ls "$d"/*.gspy > /dev/null 2>&1 && break; sleep 0.2; done
	sleep 10 # past start-up and compilation: the loop at its pace
	$G top --once --json "$d" > "$d/top-paused.json"
	$G record "$pid" --for 3s > "$d/record.txt" 2>&1 &
	rec=$!
	sleep 2
	$G top --once --json --window 1s "$d" > "$d/top-window.json"
	$G top --once --window 1s "$d" > "$d/top-window.txt"
	wait $rec
	echo "record exited $?" >> "$d/record.txt"
	$G top --once --json "$d" > "$d/top-after.json"
	kill -INT $pid # KeyboardInterrupt: Python exits, and gpuspy closes the file
	wait $pid
	f=$(ls "$d"/*.gspy | head -1)
	$G report --json "$f" > "$d/report.json" 2> "$d/report.err"
	$G report --color never "$f" > "$d/report.txt" 2>> "$d/report.err"
	python3 tests/gpu/ondemand_check.py "$loop" "$d" | tee -a "$OUT/ondemand.md"
	cp "$d/report.txt" "$OUT/ondemand-$loop-report.txt"
	cp "$d/top-window.txt" "$OUT/ondemand-$loop-top.txt"
done
