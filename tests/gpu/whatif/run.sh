#!/bin/bash
# SPDX-License-Identifier: MIT
# The what-if suite on the H200, from the repository root:
#
#   bash tests/gpu/whatif/run.sh [PROG...]     (default: all ten)
#
# For each program, ROUNDS rounds (default 3; docs/measurements.md says
# why): the slow program and its fix untraced, and the slow program
# traced with libgpuspy's defaults, with its report (--json), in a new
# random order each round. Processes of
# one program differ by 20-30% on the H200 (docs/measurements.md), a traced one
# as much as the others: so each round has its own traced run, and the
# prediction is the median of the rounds' predictions, as the realized
# saving is median(slow) - median(fixed). Then the fixed program is traced
# once: its report must not make the diagnosis it fixed. summarize.py
# writes the table (whatif.md, whatif.json); the traces of the round
# whose prediction is the median come back in traces.tar.xz
# (import.py makes them the fixtures). Carry tools/gpuspy and .gpu
# (make gpu-carry).
set -u
. tests/gpu/setup.sh /tmp/gpuspy-whatif
. tests/gpu/whatif/programs.sh
ROUNDS=${ROUNDS:-3}
# upload_once and healthy have no saving to predict, only diagnoses to
# check: QUIET_ROUNDS (default ROUNDS) can run them fewer rounds. The
# host-bound programs' speed moves most between processes (the JAX
# loop's slow step 0.082 to 0.185 ms over 16: tests/gpu/results/round3/
# jax-spread-h100.md), so that fewer rounds than eight cannot give their
# saving: HOST_ROUNDS (default 8) runs them more.
QUIET_ROUNDS=${QUIET_ROUNDS:-$ROUNDS}
HOST_ROUNDS=${HOST_ROUNDS:-8}
LIMIT=${LIMIT:-120} # seconds a run may take
PROGS=${*:-pageable dataloader item launch_bound decode empty_cache jax_hostbound sync_copies upload_once healthy}
nvidia-smi -i 0 --query-gpu=name --format=csv,noheader > "$OUT/card.txt" 2> /dev/null
build_sync_copies || exit 1
step_ms() { sed -n 's/^whatif step_ms=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
# The machine's CPU time by state (/proc/stat's cpu line: user ... steal)
# before and after each run, in RUN.stat: whether a process that ran slow
# shared its CPUs (steal: the hypervisor's other guests; busy: this one's).
cpu_stat() { head -1 /proc/stat >> "$1"; }
traced() { # dir slow|fixed round command [--fix]: traced, then its reports
	local d=$1 v=$2 r=$3 t0=$SECONDS t1; shift 3
	mkdir -p "$d/$v-t$r"
	cpu_stat "$d/$v-traced-$r.stat"
	GPUSPY_DIR="$d/$v-t$r" LD_PRELOAD="$ROOT/lib/libgpuspy.so" timeout --foreground $LIMIT "$@" > "$d/$v-traced-$r.out" 2> "$d/$v-traced-$r.err"
	cpu_stat "$d/$v-traced-$r.stat"
	t1=$SECONDS
	./tools/gpuspy report --json "$d/$v-t$r" > "$d/$v-report-$r.json" 2> "$d/$v-report-$r.err"
	./tools/gpuspy report --color never "$d/$v-t$r" > "$d/$v-report-$r.txt" 2>> "$d/$v-report-$r.err"
	# The seconds the traced run took, then its two reports: where a part's time goes.
	echo "$(basename "$d") $v traced round $r: $(step_ms "$d/$v-traced-$r.out") ms ($((t1 - t0)) s, reports $((SECONDS - t1)) s)"
}
for p in $PROGS; do
	d="$WORK/$p"; mkdir -p "$d"
	c=$(command_of "$p")
	n=$ROUNDS
	case $p in
	upload_once | healthy) n=$QUIET_ROUNDS ;;
	launch_bound | decode | jax_hostbound) n=$HOST_ROUNDS ;;
	esac
	for r in $(seq "$n"); do
		# The three runs in a new random order each round (written to
		# order-R.txt), so that no variant always follows another: in
		# runs 1-4 the traced one always followed the fixed one, and the
		# traced pageable program ran faster than the untraced one in all
		# four (tests/gpu/results/round3/whatif-run4-h100.md).
		order=$(printf '%s\n' slow fixed traced | shuf | tr '\n' ' ')
		echo "$order" > "$d/order-$r.txt"
		for v in $order; do
			if [ $v = traced ]; then
				traced "$d" slow "$r" $c
				continue
			fi
			f=; [ $v = fixed ] && f=--fix
			cpu_stat "$d/$v-$r.stat"
			t0=$SECONDS
			timeout --foreground $LIMIT $c $f > "$d/$v-$r.out" 2> "$d/$v-$r.err"
			rc=$?
			cpu_stat "$d/$v-$r.stat"
			echo "$p $v round $r: $(step_ms "$d/$v-$r.out") ms (exit $rc, $((SECONDS - t0)) s)"
		done
	done
	traced "$d" fixed 1 $c --fix
	# What is done so far comes back even if a later program runs out the
	# clock: each file written beside, then renamed over the last one (a
	# cut while writing keeps the programs before).
	done_progs="${done_progs:-} $p"
	python3 "$W/summarize.py" "$WORK" $done_progs > "$OUT/whatif.md.new" && mv "$OUT/whatif.md.new" "$OUT/whatif.md"
	cp "$WORK/whatif.json" "$OUT/whatif.json.new" 2>/dev/null && mv "$OUT/whatif.json.new" "$OUT/whatif.json"
	(cd "$WORK" && tar cJf "$OUT/traces.new.tar.xz" $(for q in $done_progs; do
		m=$(cat "$q/median_round" 2>/dev/null || echo 1)
		echo $q/slow-t$m $q/fixed-t1 $q/*.txt $q/*.out $q/*.err $q/*.stat; done)) &&
		mv "$OUT/traces.new.tar.xz" "$OUT/traces.tar.xz"
done
cat "$OUT/whatif.md"
ls -la "$OUT"
