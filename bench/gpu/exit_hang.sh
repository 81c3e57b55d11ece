#!/bin/bash
# SPDX-License-Identifier: MIT
# Does a traced PyTorch loop exit on SIGINT? (tests/gpu/ondemand.sh found
# loops.py still running 30 s after it, started paused and recorded for
# 3 s.) Variants of tests/gpu/loops.py mlp: untraced; traced; started
# paused, never started; started paused and recorded 2 s; that with CUPTI
# off. Found on the H200: none exits, the untraced one neither: bash starts
# a script's background jobs with SIGINT ignored, so Python never raises
# KeyboardInterrupt; gpuspy is not the cause (the scripts send SIGTERM). Each gets SIGINT 8 s in and 15 s to exit; a hung one leaves its
# threads' stacks (gdb where there is one, else the kernel's) in
# $OUT/exit-hang.txt. From the repository root on the GPU machine.
. tests/gpu/setup.sh /tmp/gpuspy-exit
G=$ROOT/tools/gpuspy
say() { echo "$(date +%T) $*"; }
one() { # name, env assignments...
	local name=$1; shift
	local d=$WORK/$name; mkdir -p "$d"
	env GPUSPY_DIR="$d" "$@" python3 tests/gpu/loops.py mlp --steps 100000000 --warmup 5 > "$d/loop.txt" 2>&1 &
	local pid=$!
	sleep 6
	case $name in record*) timeout 20 $G record $pid --for 2s > "$d/record.txt" 2>&1 ;; esac
	kill -INT $pid
	for _ in $(seq 30); do kill -0 $pid 2> /dev/null || break; sleep 0.5; done
	if kill -0 $pid 2> /dev/null; then
		say "$name: HUNG 15 s after SIGINT"
		{ echo "== $name"; if command -v gdb > /dev/null; then timeout 60 gdb -p $pid -batch -ex "thread apply all bt 12" 2>&1 | grep -v "^\[New LWP"
		  else for t in /proc/$pid/task/*; do echo "-- $(cat $t/comm) $(cut -d' ' -f3 $t/stat)"; cat $t/stack; done; fi; } >> "$OUT/exit-hang.txt"
		kill -9 $pid
	fi
	wait $pid
	say "$name: exit $? $(tail -1 "$d/loop.txt")"
}
command -v gdb || echo "no gdb"
one untraced
one traced LD_PRELOAD=$ROOT/lib/libgpuspy.so
one paused LD_PRELOAD=$ROOT/lib/libgpuspy.so GPUSPY_START=paused
one record LD_PRELOAD=$ROOT/lib/libgpuspy.so GPUSPY_START=paused
one record-nocupti LD_PRELOAD=$ROOT/lib/libgpuspy.so GPUSPY_START=paused GPUSPY_CUPTI=off
