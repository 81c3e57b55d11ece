#!/bin/bash
# SPDX-License-Identifier: MIT
# Every H200 check in one device call (the device tool brings back at most 8
# files): recording counts, phases and examples, driver/CUPTI threads
# (run.sh), call stacks (stacks.sh), CUPTI (cupti_check.sh), GPU time
# from CUDA events (events_check.sh) and the runtime families of
# tests/progs/prog_rt_more.c on the real runtime (rt_families.sh). Each writes
# into its own folder; this bundles them as $OUT/gpu-results.tgz and prints
# the summaries. From the repository root after `make gpu-carry`:
#   bash tests/gpu/all.sh
set -u
FINAL=${OUT:-/tmp/gpuspy-gpu}
R=/tmp/gpuspy-all
rm -rf "$R"; mkdir -p "$R" "$FINAL"
rc=0
for s in run stacks cupti_check events_check rt_families; do
	mkdir -p "$R/$s"
	OUT="$R/$s" timeout "${GPU_STEP_TIMEOUT:-280}" bash "tests/gpu/$s.sh" > "$R/$s/log.txt" 2>&1
	r=$?
	echo "$s.sh: exit $r" | tee -a "$R/status.txt"
	[ $r = 0 ] || rc=1
done
cat "$R"/run/summary.md "$R"/run/phases.txt "$R"/run/threads.txt "$R"/stacks/stacks.txt \
	"$R"/cupti_check/cupti_check.md "$R"/events_check/events.txt "$R"/rt_families/rt_families.txt \
	2>/dev/null > "$FINAL/summary.txt"
cp "$R/status.txt" "$FINAL/"
( cd "$R" && tar czf "$FINAL/gpu-results.tgz" . )
cat "$FINAL/summary.txt"
exit $rc
