#!/bin/bash
# SPDX-License-Identifier: MIT
# What CUPTI's activity records cost the what-if suite's host-bound
# programs beyond the calls the replay prices, inside one process
# (cupti_toggle.c: records on and off every 200 ms, every driver call
# timed; cupti_toggle.py: the windows compared). The JAX loop's replayed
# slow step sat 12-35 us over its untraced median in run3-run6, in
# processes that ran traced; across processes that could not be told from
# chance (tests/gpu/results/round3/jax-spread-h100.md). No gpuspy here.
# TG_REPS processes of each program (default 2). Results:
# $OUT/cupti_toggle.md. From the repository root (carry .gpu):
#   bash tests/gpu/whatif/cupti_toggle.sh
. tests/gpu/setup.sh /tmp/gpuspy-toggle
. tests/gpu/whatif/programs.sh
gcc -O2 -shared -fPIC -I/usr/local/cuda/include "$W/cupti_toggle.c" -o "$WORK/libcupti_toggle.so" \
	-L/usr/local/cuda/lib64 -lcupti -lpthread -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
# program: the arguments that make it run 5-10 s
PROGS=${TG_PROGS:-"jax_hostbound:--steps=60000 jax_hostbound:--fix,--steps=60000 decode:--steps=3000 launch_bound:--steps=2000 empty_cache:--steps=150"}
{
	echo "# tests/gpu/whatif/cupti_toggle.sh, TG_REPS=${TG_REPS:-2}, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
	for r in $(seq "${TG_REPS:-2}"); do
		for pa in $PROGS; do
			p=${pa%%:*}; args=$(echo "${pa#*:}" | tr ',' ' ')
			o="$WORK/$p-$r"
			TOGGLE_OUT="$o.bin" CUDA_INJECTION64_PATH="$WORK/libcupti_toggle.so" \
				timeout --foreground 120 $(command_of "$p") $args > "$o.out" 2> "$o.err"
			echo; echo "$p $args, process $r: exit $?, $(grep -h 'whatif' "$o.out") $(tail -1 "$o.bin.names" 2> /dev/null)"
			timeout 120 python3 "$W/cupti_toggle.py" "$p $args ($r)" "$o.bin" 2>&1 | tail -n +2
		done
	done
} > "$OUT/cupti_toggle.md"
cat "$OUT/cupti_toggle.md"
