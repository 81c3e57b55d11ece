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
# by part as in run8 unless given: 5 for 52w3 and 52w5, 8 for 52w4; 54
# runs EXITS=fault and the zoo cut at ZOO_SECS=200 (run8's), or sooner to
# end within the call. A part is marked done when its every step exited 0
# (the zoo cut by its time too); ONLY is refused (a part run in part).
set -u
B=${OUT:-/tmp/gpuspy-gpu}
DONE=/tmp/gpuspy-parts.done
CALL_SECS=${CALL_SECS:-560}
touch "$DONE"
expect() { # a part's seconds on a fast H100 (52j, 52f, 52z: estimates; they have not run)
	case $1 in
	52w1) echo 321 ;; 52w2) echo 211 ;; 52w3) echo 130 ;; 52w4) echo 115 ;;
	52w5) echo 215 ;; 54) echo 171 ;; 52z) echo 300 ;; 52j) echo 160 ;; 52f) echo 200 ;; 52m) echo 300 ;; 52l) echo 240 ;; *) echo 300 ;;
	esac
}
# slowness: this machine's time over the fast H100's, in percent, from the
# parts done on it before (kept in $DONE as "part seconds expected").
slowness() {
	awk '{ t += $2; e += $3 } END { s = e ? int(100 * t / e) : 100; print (s < 100 ? 100 : s) }' "$DONE"
}
# Whether a part's every step ended well (summary.md's "NAME: exit N"
# lines), the zoo cut by its ZOO_SECS aside.
whole() {
	[ -s "$1" ] && grep -q ': exit ' "$1" && ! grep -E '^[a-z]+: exit [0-9]+$' "$1" |
		grep -v ': exit 0$' | grep -qv '^zoo: exit 124$'
}
if [ -n "${ONLY:-}" ]; then
	echo "parts.sh: ONLY would run a part in part and mark it done; call pending.sh for that" >&2
	exit 2
fi
start=$SECONDS
for p in ${PARTS:-52w1 52w2 52w3 52w5 52w4 54}; do
	grep -q "^$p " "$DONE" && { echo "$p: done in an earlier call"; continue; }
	want=$(( $(expect "$p") * $(slowness) * 120 / 10000 ))
	left=$(( CALL_SECS - (SECONDS - start) ))
	step=$(( left - 20 )); [ $step -gt 560 ] && step=560
	if [ "$want" -gt $(( CALL_SECS - 20 )) ]; then
		echo "$p: expects $want s, more than one call of CALL_SECS=$CALL_SECS gives it"
		continue
	elif [ "$want" -gt "$step" ]; then
		echo "$p: left for the next call (expects $want s, $step s left)"
		continue
	fi
	vars=(OUT="$B/$p" PART="$p" STEP_SECS="$step")
	case $p in
	52w3 | 52w5) vars+=(HOST_ROUNDS="${HOST_ROUNDS:-5}") ;;
	52w4) vars+=(HOST_ROUNDS="${HOST_ROUNDS:-8}") ;;
	54) # the exits' 100 s, the zoo, 30 s for its table: within the step
		z=${ZOO_SECS:-200}; [ "$z" -gt $(( step - 130 )) ] && z=$(( step - 130 ))
		vars+=(EXITS="${EXITS:-fault}" ZOO_SECS="$z") ;;
	esac
	t0=$SECONDS
	env "${vars[@]}" bash tests/gpu/pending.sh > /dev/null 2>&1
	t=$(( SECONDS - t0 ))
	if whole "$B/$p/summary.md"; then
		echo "$p $t $(expect "$p")" >> "$DONE"
		echo "$p: $t s (expected $want s on this machine)"
	else
		echo "$p: cut short or failed after $t s (expected $want s): what it finished came back; not marked done"
	fi
	cat "$B/$p/summary.md" 2> /dev/null
done
