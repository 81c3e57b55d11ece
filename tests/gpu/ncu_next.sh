#!/bin/bash
# SPDX-License-Identifier: MIT
# The report's "next tool" lines work as printed: for the ResNet fixture's
# program, run the ncu command the report prints for its top kernel (CMD
# replaced by the program) and check that Nsight Compute profiled exactly
# one kernel, of that name. From the repository root, after `make gpu-carry`:
#   bash tests/gpu/ncu_next.sh        (results: $OUT/ncu-next.md)
. tests/gpu/setup.sh /tmp/gpuspy-ncu-next
make -s tools/gpuspy > /dev/null || exit 1
prog="python3 tests/gpu/zoo/resnet_loader.py"
GPUSPY_DIR="$WORK/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" $prog > /dev/null 2>&1
./tools/gpuspy report --color never "$WORK/t" > "$WORK/report.txt" 2>&1
line=$(grep -m1 '^    ncu --kernel-name-base' "$WORK/report.txt")
cmd=${line/CMD/$prog}
{
	echo "# The report's ncu line, run (tests/gpu/ncu_next.sh, nvidia-h200)"
	echo
	echo "Printed: \`${line# *}\`"
	echo
	echo '```'
	eval "timeout 400 $cmd --csv --page raw --metrics gpu__time_duration.sum" > "$WORK/ncu.csv" 2> "$WORK/ncu.err"
	echo "exit $?"
	grep -c '"gpu__time_duration.sum"' "$WORK/ncu.csv" | sed 's/^/header lines: /'
	python3 - "$WORK/ncu.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, data = rows[0], [r for r in rows[2:] if r and r[0].isdigit()]
name = head.index("Kernel Name") if "Kernel Name" in head else None
print(f"kernels profiled: {len(data)}")
for r in data:
    print("kernel:", r[name][:100] if name is not None else r[:5])
PY
	tail -3 "$WORK/ncu.err"
	echo '```'
} > "$OUT/ncu-next.md"
cat "$OUT/ncu-next.md"
