#!/bin/bash
# SPDX-License-Identifier: MIT
# Ranks on the H200 (issue 34): DDP over gloo with 2 and 4 ranks on the one
# GPU (tests/gpu/ddp_gloo.py, torchrun), one rank sleeping RANKS_SLOW_MS
# (30) before each forward pass; untraced first (its output and exit
# status), then under gpuspy (CUPTI on). Each run has a time limit; `gpuspy
# report` and --json over the run's rank files go to $OUT, the traces to
# $OUT/ranks-traces.tar.gz (fixtures). tests/gpu/ranks_check.py checks the
# straggler and writes $OUT/ranks.md. Then, with RANKS_SCALE=1,
# bench/ranks_scale.py on this machine's cores ($OUT/ranks-scale.md).
# From the repository root, on the GPU machine (carry: tools/gpuspy .gpu):
#   bash tests/gpu/ranks.sh        RANKS_N="2 4" RANKS_SLOW_MS=30
. tests/gpu/setup.sh /tmp/gpuspy-ranks
G=$ROOT/tools/gpuspy
slow=${RANKS_SLOW_MS:-30}
for n in ${RANKS_N:-2 4}; do
	for how in untraced gpuspy; do
		d=$WORK/ddp$n-$how
		mkdir -p "$d"
		pre=()
		[ $how = gpuspy ] && pre=(env GPUSPY_DIR=$d LD_PRELOAD=$ROOT/lib/libgpuspy.so)
		timeout 240 "${pre[@]}" python3 -m torch.distributed.run --standalone --nproc-per-node "$n" \
			tests/gpu/ddp_gloo.py --slow-rank 1 --slow-ms "$slow" > "$d/out.txt" 2>&1
		echo "ddp$n $how: exit $?" | tee -a "$OUT/ranks-runs.txt"
		grep "^rank" "$d/out.txt" | sort | tee -a "$OUT/ranks-runs.txt"
		if [ $how = gpuspy ]; then
			timeout 120 $G report --color never "$d" > "$OUT/ranks-ddp$n.txt" 2>&1
			timeout 120 $G report --json "$d" > "$OUT/ranks-ddp$n.json" 2> /dev/null
		fi
	done
done
(cd "$WORK" && tar czf "$OUT/ranks-traces.tar.gz" ddp*-gpuspy/*.gspy)
python3 tests/gpu/ranks_check.py "$OUT" "$slow" | tee "$OUT/ranks.md"
if [ "${RANKS_SCALE:-0}" = 1 ]; then
	make -s tests/bin/mktrace > /dev/null
	SCALE_CORES=${SCALE_CORES:-4,all} timeout 200 python3 bench/ranks_scale.py 256 1000000 "$WORK/scale" \
		> "$OUT/ranks-scale.md" 2>&1
	cat "$OUT/ranks-scale.md"
	rm -rf "$WORK/scale"
fi
