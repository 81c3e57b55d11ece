#!/bin/bash
# SPDX-License-Identifier: MIT
# What tracing adds to the what-if suite's host-bound steps, part by part,
# so that the replay can take it off (docs/measurements.md: traced, the
# JAX loop's step ran 1.5 times its untraced one, and the prediction
# inherited it: tests/gpu/results/round3/whatif-jax-h100.md). For each
# program (default: jax_hostbound, slow and --fix; TC_PROGS and
# TC_VARIANTS to change) and each mode (TC_MODES, default the first
# five), ROUNDS rounds (default 4), the modes in a new order each round:
#   none     untraced
#   bare     the independent CUPTI counter alone (tests/gpu/cupti_count.c,
#            kernel, copy and memset activity records): CUPTI's own cost
#   nocupti  gpuspy with GPUSPY_CUPTI=off: gpuspy's host recording
#   gpuspy   gpuspy's defaults (CUPTI on)
#   lean     gpuspy with CUPTI, without NVTX ranges and NVML sampling
#            (GPUSPY_NVTX=0 GPUSPY_NVML_MS=0): what those add to it
#   nostacks gpuspy with CUPTI, without call stacks (GPUSPY_STACKS=off)
#   notorch  gpuspy with CUPTI, without its PyTorch helper (GPUSPY_TORCH=0:
#            no phases, no module hooks)
#   launches gpuspy's defaults and GPUSPY_STACK_LAUNCHES=TC_LAUNCH_EVERY
#            (default 64): what a stack on one launch in N costs, and the
#            function the report then says the step's launches come from
#            (each gpuspy run's launches_from and first diagnosis, listed
#            after the tables)
#   nolaunches gpuspy's defaults and GPUSPY_STACK_LAUNCHES=0: no launch
#            keeps a stack (against gpuspy: what the default's one a
#            thread every GPUSPY_STACK_LAUNCH_PERIOD, 10 ms, costs)
#   busy     untraced, beside a shell loop that keeps a CPU busy for the
#            run (the scheduler's choice of which): whether a traced process's copies from pageable
#            memory run faster (the what-if suite's run7) for gpuspy's own
#            threads being awake, a state of the machine, not a change
# Each run prints its steady step (whatif step_ms=...); each gpuspy run's
# report gives the step its replay makes of it with tracing's cost taken
# off (the "replayed" table: against none's, what the replay leaves or
# takes too much; nocupti's replay has no GPU records to replay, and is
# not comparable). The first two rounds' traces come back
# (traces.tar.xz). For the JAX loop, the first round's traces (nocupti,
# gpuspy) are read part by part (step_parts.py): what CUPTI adds to each
# call and gap of the step. Then (unless TC_BENCH=0)
# bench/gpu/cupti_costs.cu (none against bare) for a graph of 4 and of 28
# kernels (the JAX step's graph): what CUPTI adds to one launch call.
# Results: $OUT/traced_cost.md. From the repository root, after
# `make gpu-carry`, carrying .gpu and tools/gpuspy:
#   bash tests/gpu/whatif/traced_cost.sh
. tests/gpu/setup.sh /tmp/gpuspy-traced-cost
. tests/gpu/whatif/programs.sh
ROUNDS=${ROUNDS:-4}
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o "$WORK/libcupti_count.so" \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
run_mode() { # mode out args...
	local m=$1 o=$2; shift 2
	mkdir -p "$WORK/t" # (gpuspy makes no directory: without it, no trace, no cost)
	case $m in
	none) timeout --foreground 120 "$@" ;;
	busy) (while :; do :; done) &
		local spin=$!
		timeout --foreground 120 "$@"
		kill $spin 2> /dev/null; wait $spin 2> /dev/null ;;
	bare) timeout --foreground 120 env CUPTI_COUNT_OUT="$WORK/count-%p.json" \
		CUDA_INJECTION64_PATH="$WORK/libcupti_count.so" "$@" ;;
	nocupti) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" GPUSPY_CUPTI=off LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	gpuspy) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	lean) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" GPUSPY_NVTX=0 GPUSPY_NVML_MS=0 \
		LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	nostacks) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" GPUSPY_STACKS=off \
		LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	launches) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" GPUSPY_STACK_LAUNCHES="${TC_LAUNCH_EVERY:-64}" \
		LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	nolaunches) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" GPUSPY_STACK_LAUNCHES=0 \
		LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	notorch) timeout --foreground 120 env GPUSPY_DIR="$WORK/t" GPUSPY_TORCH=0 \
		LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" ;;
	esac > "$o" 2> "$o.err"
	# The replay's step of a traced run, ms (the report's replayed_step_ns).
	[ -d "$WORK/t" ] && ls "$WORK"/t/*.gspy > /dev/null 2>&1 && timeout 120 ./tools/gpuspy report --json "$WORK/t" 2> /dev/null |
		python3 -c 'import json, sys
o = json.load(sys.stdin)
s, d = o["processes"][0].get("step", {}), (o.get("diagnoses") or [{}])[0]
print(s.get("replayed_step_ns", 0) / 1e6)
t = d.get("text", "").split("\n")[0][:240]
open(sys.argv[1], "a").write("%s: from %s; %s: %s\n" % (sys.argv[2], s.get("launches_from", "-"), d.get("id"), t))' \
		"$WORK/from.txt" "$p $v $m, round $r" >> "$WORK/replayed-$m.txt" # (the caller's p v m r)
	# The first round's traces of each gpuspy mode stay, to be read part
	# by part (step_parts.py).
	[ -d "$WORK/t" ] && [ ! -e "$o.gspy" ] && mv "$(ls "$WORK"/t/*.gspy | head -1)" "$o.gspy" 2> /dev/null
	rm -rf "$WORK/t"
	sed -n 's/^whatif step_ms=\([0-9.]*\).*/\1/p' "$o" | tail -1
}
MODES=${TC_MODES:-none bare nocupti gpuspy lean} # none first: the others are over it
{
	echo "# tests/gpu/whatif/traced_cost.sh, ROUNDS=$ROUNDS, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
	echo
	echo "| program | round | table | $(echo $MODES | sed 's/ / | /g') |"
	echo "| --- | --- | --- |$(for m in $MODES; do printf ' --- |'; done)"
} > "$OUT/traced_cost.md"
case " ${TC_PROGS:-} " in *" sync_copies "*) build_sync_copies || exit 1 ;; esac
for p in ${TC_PROGS:-jax_hostbound}; do
	for v in ${TC_VARIANTS:-slow fixed}; do
		f=; [ $v = fixed ] && f=--fix
		for r in $(seq "$ROUNDS"); do
			declare -A got=()
			rm -f "$WORK"/replayed-*.txt
			for m in $(printf '%s\n' $MODES | shuf); do
				o="$WORK/$p-$v-$m-$r.out"; [ "$r" = 1 ] || o="$WORK/$p-$v-$m-n.out"
				got[$m]=$(run_mode "$m" "$o" $(command_of "$p") $f)
			done
			echo "| $p $v | $r | step |$(for m in $MODES; do printf ' %s |' "${got[$m]}"; done)" >> "$OUT/traced_cost.md"
			echo "| $p $v | $r | replayed |$(for m in $MODES; do printf ' %s |' "$(cat "$WORK/replayed-$m.txt" 2> /dev/null)"; done)" >> "$OUT/traced_cost.md"
			unset got
		done
	done
done
python3 - "$OUT/traced_cost.md" $MODES >> "$OUT/traced_cost.md" <<'PY'
import statistics, sys
modes = sys.argv[2:]
rows = {}
for l in open(sys.argv[1]):
    c = [x.strip() for x in l.strip().strip("|").split("|")]
    if len(c) == 3 + len(modes) and c[1].isdigit():
        # A trace whose report found no step replays 0: missing, not 0.
        rows.setdefault((c[0], c[2]), []).append([float(x) if x and float(x) else None for x in c[3:]])
print("\nMedians, ms a step (the step each run timed, and the step the replay makes of each traced run), "
      "and each over none's step:\n")
print("| program | table | " + " | ".join(modes) + " | " + " | ".join(f"{m}/none" for m in modes[1:]) + " |")
print("| --- | --- |" + " --- |" * (2 * len(modes) - 1))
for (k, t), v in rows.items():
    med = [statistics.median([r[i] for r in v if r[i] is not None] or [0]) for i in range(len(modes))]
    none = statistics.median([r[0] for r in rows.get((k, "step"), []) if r[0]] or [0])
    print(f"| {k} | {t} | " + " | ".join(f"{x:.4f}" if x else "-" for x in med) + " | " +
          " | ".join(f"{x / none:.3f}" if none and x else "-" for x in med[1:]) + " |")
PY
[ -s "$WORK/from.txt" ] && {
	echo; echo "Each traced run's launches_from and first diagnosis:"; echo
	sed 's/^/    /' "$WORK/from.txt"
} >> "$OUT/traced_cost.md"
# The first two rounds' traces come back, to be replayed again as the model changes.
(cd "$WORK" && ls *.gspy > /dev/null 2>&1 && tar cJf "$OUT/traces.tar.xz" *.gspy)
case " ${TC_PROGS:-jax_hostbound} " in *" jax_hostbound "*) # step_parts.py reads graph launches
	{
		echo; echo "The first round's step on its launching thread, part by part (step_parts.py), without CUPTI and with it:"
		timeout 120 python3 "$W/step_parts.py" "$ROOT/tools/gpuspy" "$WORK"/jax_hostbound-*-1.out.gspy
	} >> "$OUT/traced_cost.md" ;;
esac
[ "${TC_BENCH:-1}" = 0 ] && { cat "$OUT/traced_cost.md"; exit 0; }
nvcc -O2 -o "$WORK/cupti_costs" bench/gpu/cupti_costs.cu -lcuda -lcupti || exit 1
for n in 4 28; do
	echo; echo "bench/gpu/cupti_costs.cu, CC_GRAPH_NODES=$n:"; echo
	CC_GRAPH_NODES=$n "$WORK/cupti_costs" "${CC_ROUNDS:-15}"
done >> "$OUT/traced_cost.md"
cat "$OUT/traced_cost.md"
