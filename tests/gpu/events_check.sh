#!/bin/bash
# SPDX-License-Identifier: MIT
# GPUSPY_CUPTI=events on the H200: the MLP loop (docs/design.md#the-mlp-loop) through a
# DataLoader (tests/gpu/mlp.py --loader), traced once with CUDA events at
# phase boundaries and once with CUPTI, each process on its own; then
# check_events.py compares each phase's GPU span with the GPU time CUPTI
# measured for the same phase. From the repository root after
# `make gpu-carry`:   bash tests/gpu/events_check.sh   (results in $OUT)
. tests/gpu/setup.sh /tmp/gpuspy-events
for mode in events on; do
	d="$WORK/$mode"
	./tools/gpuspy run --dir "$d" --cupti $mode --no-report -- python3 tests/gpu/mlp.py 60 --loader \
		> "$WORK/$mode.stdout" 2> "$WORK/$mode.stderr"
	echo "$mode: exit $?; $(tail -1 "$WORK/$mode.stdout")"
	./tools/gpuspy report --color never "$d" > "$OUT/events-$mode.report.txt"
	./tools/gpuspy report --json "$d" > "$WORK/$mode.json"
done
python3 tests/gpu/check_events.py "$WORK/events.json" "$WORK/on.json" | tee "$OUT/events.txt"
exit "${PIPESTATUS[0]}"
