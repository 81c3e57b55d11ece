#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs pending.sh's parts in order while one device call's time allows,
# and remembers on the machine which are done, so that the same command,
# called again while the machine is warm, goes on where the last call
# stopped. Each part it runs writes summary.md and its tarball under
# $OUT/PART (the device tool brings back 8 files: four parts a call).
#   PARTS="52w1 52w2 52w3 52w5 52w4 54" CALL_SECS=560 bash tests/gpu/parts.sh
# A part starts only if its expected time fits what is left of CALL_SECS:
# its time on a fast H100 (run8's calls, tests/gpu/results/round3/
# whatif-run6-h100.md, its last part) times how much slower this machine
# ran the parts before it (at least 1), and a fifth more (run9's machine
# ran 52w5 in 1.64 times run8's, its 52w1 in 1.28). A what-if part that
# runs over is cut 20 s before the call's end (STEP_SECS), so that its
# programs done come back. The variables pending.sh reads
# (HOST_ROUNDS, ROUNDS, EXITS, ZOO_SECS) pass through; HOST_ROUNDS is set
# by part as in run8 unless given: 5 for 52w3 and 52w5, 8 for 52w4.
set -u
B=${OUT:-/tmp/gpuspy-gpu}
DONE=/tmp/gpuspy-parts.done
CALL_SECS=${CALL_SECS:-560}
touch "$DONE"
expect() { # a part's seconds on a fast H100
	case $1 in
	52w1) echo 321 ;; 52w2) echo 211 ;; 52w3) echo 130 ;; 52w4) echo 115 ;;
	52w5) echo 175 ;; 54) echo 171 ;; *) echo 300 ;;
	esac
}
# slowness: this machine's time over the fast H100's, in percent, from the
# parts done on it before (kept in $DONE as "part seconds expected").
slowness() {
	awk '{ t += $2; e += $3 } END { s = e ? int(100 * t / e) : 100; print (s < 100 ? 100 : s) }' "$DONE"
}
start=$SECONDS
for p in ${PARTS:-52w1 52w2 52w3 52w5 52w4 54}; do
	grep -q "^$p " "$DONE" && { echo "$p: done in an earlier call"; continue; }
	want=$(( $(expect "$p") * $(slowness) * 120 / 10000 ))
	left=$(( CALL_SECS - (SECONDS - start) ))
	step=$(( left - 20 )); [ $step -gt 560 ] && step=560
	if [ "$want" -gt "$left" ]; then
		echo "$p: left for the next call (expects $want s, $left s left)"
		continue
	fi
	hr=${HOST_ROUNDS:-}
	[ -z "$hr" ] && case $p in 52w3 | 52w5) hr=5 ;; 52w4) hr=8 ;; esac
	t0=$SECONDS
	if [ -n "$hr" ]; then
		OUT=$B/$p PART=$p STEP_SECS=$step HOST_ROUNDS=$hr bash tests/gpu/pending.sh > /dev/null 2>&1
	else
		OUT=$B/$p PART=$p STEP_SECS=$step bash tests/gpu/pending.sh > /dev/null 2>&1
	fi
	t=$(( SECONDS - t0 ))
	if grep -q ': exit 124' "$B/$p/summary.md" 2> /dev/null; then
		echo "$p: cut short after $t s (expected $want s): its programs done came back; not marked done"
	else
		echo "$p $t $(expect "$p")" >> "$DONE"
		echo "$p: $t s (expected $want s on this machine)"
	fi
	cat "$B/$p/summary.md" 2> /dev/null
done
