#!/bin/bash
# SPDX-License-Identifier: MIT
# The what-if suite on the H200, from the repository root:
#
#   bash tests/gpu/whatif/run.sh [PROG...]     (default: all ten)
#
# For each program: ROUNDS rounds (default 3) of the slow program and its
# fix, untraced and interleaved (slow, fixed, slow, fixed...), each printing
# its steady-state step time; then the slow program and the fixed one
# traced with libgpuspy's defaults, and their reports (--json). The realized
# saving is median(slow) - median(fixed); summarize.py sets the report's
# first diagnosis and its predicted saving beside it (whatif.md, the table
# docs/measurements.md cites). The traces come back in traces.tar.xz, so
# that the prediction can be worked on without the GPU. Carry tools/gpuspy
# and .gpu (make gpu-carry).
set -u
. tests/gpu/setup.sh /tmp/gpuspy-whatif
W=tests/gpu/whatif
ROUNDS=${ROUNDS:-3}
LIMIT=${LIMIT:-120} # seconds a run may take
PROGS=${*:-pageable dataloader item launch_bound decode empty_cache jax_hostbound sync_copies upload_once healthy}
mkdir -p "$WORK/bin" && nvcc -O2 -o "$WORK/bin/sync_copies" "$W/sync_copies.cu" || exit 1
command_of() { # prog -> its command line
	case $1 in
	sync_copies) echo "$WORK/bin/sync_copies" ;;
	*) echo "python3 $W/$1.py" ;;
	esac
}
step_ms() { sed -n 's/^whatif step_ms=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
for p in $PROGS; do
	d="$WORK/$p"; mkdir -p "$d/slow" "$d/fixed"
	c=$(command_of "$p")
	for r in $(seq "$ROUNDS"); do
		for v in slow fixed; do
			f=; [ $v = fixed ] && f=--fix
			timeout $LIMIT $c $f > "$d/$v-$r.out" 2> "$d/$v-$r.err"
			echo "$p $v round $r: $(step_ms "$d/$v-$r.out") ms (exit $?)"
		done
	done
	for v in slow fixed; do
		f=; [ $v = fixed ] && f=--fix
		GPUSPY_DIR="$d/$v" LD_PRELOAD="$ROOT/lib/libgpuspy.so" timeout $LIMIT $c $f > "$d/$v-traced.out" 2> "$d/$v-traced.err"
		echo "$p $v traced: $(step_ms "$d/$v-traced.out") ms"
		./tools/gpuspy report --json "$d/$v" > "$d/$v-report.json" 2> "$d/$v-report.err"
		./tools/gpuspy report --color never "$d/$v" > "$d/$v-report.txt" 2>> "$d/$v-report.err"
	done
	# What is done so far comes back even if a later program runs out the clock.
	done_progs="${done_progs:-} $p"
	python3 "$W/summarize.py" "$WORK" $done_progs > "$OUT/whatif.md"
	cp "$WORK/whatif.json" "$OUT/" 2>/dev/null
	(cd "$WORK" && tar cJf "$OUT/traces.tar.xz" $(for q in $done_progs; do echo $q/slow $q/fixed $q/*.txt $q/*.out $q/*.err; done))
done
cat "$OUT/whatif.md"
ls -la "$OUT"
