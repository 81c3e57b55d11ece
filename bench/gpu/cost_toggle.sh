#!/bin/bash
# SPDX-License-Identifier: MIT
# What gpuspy costs on the JAX jitted step, measured inside one process
# (issue 37): tests/gpu/loops.py jax --toggle alternates 1000-step windows
# recorded and paused (gpuspy_pause), so the process's own speed, which on
# JAX differs between processes by up to 40% (an untraced A/A pair in the
# lock step read 0.61), falls out. toggle_ratio = median recorded window
# rate / median paused window rate. Paused, gpuspy passes every call
# through (0.98 of untraced in the lock step) and, with CUPTI, keeps its
# activity records and drops its callbacks: the bare collector's cost. Each
# mode runs TOGGLE_REPS times (default 3), one process at a time, in turn;
# untraced runs the same alternation switching nothing (the A/A ratio).
# Results: $OUT/cost-toggle-jax.txt (every run) and cost-toggle-jax.md.
# From the repository root on the GPU machine (carry: tools/gpuspy .gpu);
# LOCKSTEP_ALT_LIB=PATH adds the mode "old" with that build of libgpuspy.
. tests/gpu/setup.sh /tmp/gpuspy-toggle
L=$ROOT/lib/libgpuspy.so
MODES=("untraced" "gpuspy" "gpuspy+cupti" "gpuspy events" "gpuspy GPUSPY_STACKS=0" "gpuspy+cupti GPUSPY_STACKS=0")
# TOGGLE_MODES="untraced;gpuspy;gpuspy GPUSPY_NVTX_LIBRARY=all": those instead
[ -n "${TOGGLE_MODES:-}" ] && IFS=';' read -r -a MODES <<< "$TOGGLE_MODES"
[ -n "${LOCKSTEP_ALT_LIB:-}" ] && MODES+=("old gpuspy" "old gpuspy+cupti")
txt=$OUT/cost-toggle-jax.txt
: > "$txt"
for r in $(seq "${TOGGLE_REPS:-3}"); do
	for m in "${MODES[@]}"; do
		d=$WORK/run; rm -rf "$d"; mkdir -p "$d"
		lib=$L; how=$m
		case $how in old\ *) lib=$LOCKSTEP_ALT_LIB; how=${how#old }; esac
		cupti=off
		case $how in gpuspy+cupti*) cupti=on ;; "gpuspy events"*) cupti=events ;; esac
		vars=$(echo "$how" | grep -o '[A-Z_]*=[^ ]*' | tr '\n' ' ')
		if [ "$m" = untraced ]; then
			o=$(python3 tests/gpu/loops.py jax --steps 60000 --window 1000 --toggle 2>&1)
		else
			o=$(env $vars LD_PRELOAD=$lib GPUSPY_CUPTI=$cupti GPUSPY_DIR=$d \
				python3 tests/gpu/loops.py jax --steps 60000 --window 1000 --toggle 2>&1)
		fi
		line=$(echo "$o" | grep toggle_ratio)
		own=$(ls "$d"/*.gspy 2>/dev/null | head -1)
		[ -n "$own" ] && own=$(tools/gpuspy report "$own" 2>/dev/null | grep "gpuspy's own time" | sed 's/^ *//')
		echo "$m | ${line:-failed: $(echo "$o" | tail -2)} | $own" | tee -a "$txt"
	done
done
python3 - "$txt" > "$OUT/cost-toggle-jax.md" <<'PY'
import re, statistics, sys
runs = {}
for l in open(sys.argv[1]):
    m = re.match(r"(.*?) \| toggle_ratio ([0-9.]+)", l)
    if m:
        runs.setdefault(m.group(1), []).append(float(m.group(2)))
print("| mode | recorded / paused window rate, per process | median |")
print("| --- | --- | --- |")
for k, v in runs.items():
    print(f"| {k} | {', '.join(f'{x:.3f}' for x in v)} | {statistics.median(v):.3f} |")
PY
cat "$OUT/cost-toggle-jax.md"
