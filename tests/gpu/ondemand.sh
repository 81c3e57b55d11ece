#!/bin/bash
# SPDX-License-Identifier: MIT
# Recording on demand and gpuspy top on the H200 (issue 33, points 3 and 4),
# on real programs: tests/gpu/loops.py mlp|resnet|jax (resnet: the zoo's
# torchvision ResNet-18 with DataLoader workers; jax: a jitted step), each
# started with GPUSPY_START=paused and CUPTI on (auto). While it runs:
# gpuspy top --once --json (paused: nothing recorded), gpuspy record PID
# --for 3s, gpuspy top during the window and after it; then SIGTERM (a job
# started with & by a script ignores SIGINT: bench/gpu/exit_hang.sh), and
# the window's report. Every step has a time limit; a process that does not
# exit leaves its threads' names, kernel wait channels and stacks in
# $OUT/ondemand-LOOP-hang.txt. tests/gpu/ondemand_check.py writes
# $OUT/ondemand.md from what came back.
# From the repository root, on the GPU machine (carry: tools/gpuspy .gpu):
#   bash tests/gpu/ondemand.sh          ONDEMAND_LOOPS="mlp resnet jax" ONDEMAND_KEEP=1
. tests/gpu/setup.sh /tmp/gpuspy-ondemand
G=$ROOT/tools/gpuspy
say() { echo "$(date +%T) $*"; }
threads() { # pid: each thread's name, wait channel and kernel stack
	for t in /proc/$1/task/*; do
		echo "-- $(cat $t/comm 2>/dev/null) $(basename $t) wchan=$(cat $t/wchan 2>/dev/null) $(cut -d' ' -f3 $t/stat 2>/dev/null)"
		cat $t/stack 2>/dev/null | head -12
	done
}
for loop in ${ONDEMAND_LOOPS:-mlp resnet jax}; do
	d=$WORK/$loop
	mkdir -p "$d"
	say "== $loop"
	GPUSPY_DIR=$d GPUSPY_START=paused LD_PRELOAD=$ROOT/lib/libgpuspy.so \
		python3 tests/gpu/loops.py "$loop" --steps 100000000 --warmup 5 > "$d/loop.txt" 2>&1 &
	pid=$!
	for _ in $(seq 150); do ls "$d"/*.gspy > /dev/null 2>&1 && break; sleep 0.2; done
	say "trace file: $(ls "$d")"
	sleep 10 # past start-up and compilation: the loop at its pace
	timeout 20 $G top --once --json "$d" > "$d/top-paused.json"; say "top paused: $?"
	timeout 30 $G record "$pid" --for 3s > "$d/record.txt" 2>&1 &
	rec=$!
	sleep 2
	timeout 20 $G top --once --json --window 1s "$d" > "$d/top-window.json"; say "top window: $?"
	timeout 20 $G top --once --window 1s "$d" > "$d/top-window.txt"
	wait $rec
	echo "record exited $?" >> "$d/record.txt"
	say "record: $(cat "$d/record.txt" | tr '\n' ' ')"
	timeout 20 $G top --once --json "$d" > "$d/top-after.json"; say "top after: $?"
	kill -TERM $pid
	for _ in $(seq 60); do kill -0 $pid 2> /dev/null || break; sleep 0.5; done
	if kill -0 $pid 2> /dev/null; then
		say "$loop: still running 30 s after SIGTERM"
		threads $pid > "$OUT/ondemand-$loop-hang.txt" 2>&1
		kill -9 $pid
	fi
	wait $pid
	say "exit $?; $(tail -3 "$d/loop.txt" | tr '\n' ' ')"
	f=$(ls "$d"/*.gspy | head -1)
	timeout 60 $G report --json "$f" > "$d/report.json" 2> "$d/report.err"
	timeout 60 $G report --color never "$f" > "$d/report.txt" 2>> "$d/report.err"
	python3 tests/gpu/ondemand_check.py "$loop" "$d" | tee -a "$OUT/ondemand.md"
	cat "$d/report.txt" "$d/top-window.txt" > "$OUT/ondemand-$loop.txt"
	# ONDEMAND_KEEP=1: the window's trace comes back too (a fixture)
	[ "${ONDEMAND_KEEP:-0}" = 1 ] && tar -C "$d" -Sczf "$OUT/ondemand-$loop.tar.gz" "$(basename "$f")"
done
