#!/bin/bash
# SPDX-License-Identifier: MIT
# The report's "next tool" lines work as printed: for the ResNet fixture's
# program, run the ncu command the report prints for its top kernel (CMD
# replaced by the program) and check that Nsight Compute profiled exactly
# one kernel, of that name. From the repository root, after `make gpu-carry`:
#   bash tests/gpu/ncu_next.sh        (results: $OUT/ncu-next.md)
. tests/gpu/setup.sh /tmp/gpuspy-ncu-next
prog="python3 tests/gpu/zoo/resnet_loader.py"
mkdir -p "$WORK/t"
GPUSPY_DIR="$WORK/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" $prog > "$WORK/run.txt" 2>&1
./tools/gpuspy report --color never "$WORK/t" > "$WORK/report.txt" 2>&1
line=$(grep -m1 '^    ncu --kernel-name-base' "$WORK/report.txt")
[ -n "$line" ] || { tail -5 "$WORK/run.txt"; grep -A5 "Top kernels" "$WORK/report.txt"; head -5 "$WORK/report.txt"; exit 1; }
cmd=${line/CMD/$prog}
cmd=${cmd/ncu /ncu --csv --page raw --metrics gpu__time_duration.sum } # before the program: ncu's own
{
	echo "# The report's ncu line, run (tests/gpu/ncu_next.sh, nvidia-h200)"
	echo
	echo "Printed: \`${line# *}\`"
	echo
	echo '```'
	eval "timeout 400 $cmd" > "$WORK/ncu.csv" 2> "$WORK/ncu.err"
	echo "exit $?"
	grep -c '^"[0-9]' "$WORK/ncu.csv" | sed 's/^/kernels profiled: /'
	grep -o 'nchwToNhwc[^"]*' "$WORK/ncu.csv" | sort | uniq -c | head -3
	echo "--- ncu's own output, the end:"
	grep '^==PROF==\|^==WARNING==\|^==ERROR==' "$WORK/ncu.csv" "$WORK/ncu.err" | tail -6
	head -c 1500 "$WORK/ncu.csv" | grep -v '^==' | head -4 | cut -c1-300
	tail -3 "$WORK/ncu.err"
	echo '```'
} > "$OUT/ncu-next.md"
cat "$OUT/ncu-next.md"
