#!/bin/bash
# SPDX-License-Identifier: MIT
# Where gpuspy+CUPTI's cost beyond the bare collector goes on the JAX step
# (issue 37). Three parts, results under $OUT:
#   cupti_costs.md  what each way of joining GPU records to their calls
#                   costs a driver call (bench/gpu/cupti_costs.cu);
#   jax_calls.md    the records a JAX step makes, host and GPU, by call:
#                   the difference between a 4000- and a 2000-step run;
#   cost-toggle-jax.md  bench/gpu/cost_toggle.sh with the modes in
#                   CC_TOGGLE_MODES (default: gpuspy and gpuspy+cupti).
# From the repository root on the GPU machine (carry: tools/gpuspy .gpu):
#   bash bench/gpu/cupti_costs.sh
. tests/gpu/setup.sh /tmp/gpuspy-cupti-costs
nvcc -O2 -o "$WORK/cupti_costs" bench/gpu/cupti_costs.cu -lcuda -lcupti || exit 1
"$WORK/cupti_costs" "${CC_ROUNDS:-25}" | tee "$OUT/cupti_costs.md"
for n in 2000 4000; do
	d=$WORK/calls-$n; mkdir -p "$d"
	LD_PRELOAD=$ROOT/lib/libgpuspy.so GPUSPY_CUPTI=on GPUSPY_DIR=$d \
		python3 tests/gpu/loops.py jax --steps $n --window 1000 > "$d/out.txt" 2>&1
	tools/gpuspy dump "$d"/*.gspy 2>/dev/null > "$d/dump.jsonl"
done
python3 - "$WORK/calls-2000/dump.jsonl" "$WORK/calls-4000/dump.jsonl" > "$OUT/jax_calls.md" <<'PY'
import collections, json, sys
def count(p):
    c = collections.Counter()
    for l in open(p):
        e = json.loads(l)
        if e.get("type") == "event":
            c[(e["kind"], e["api"])] += 1
    return c
a, b = count(sys.argv[1]), count(sys.argv[2])
print("Records per JAX step (loops.py jax, gpuspy+CUPTI): (4000-step run - 2000-step run) / 2000\n")
print("| kind | call | per step |")
print("| --- | --- | --- |")
for k in sorted(set(a) | set(b), key=lambda k: -(b[k] - a[k])):
    d = (b[k] - a[k]) / 2000
    if abs(d) >= 0.005:
        print(f"| {k[0]} | {k[1]} | {d:.2f} |")
PY
cat "$OUT/jax_calls.md"
TOGGLE_MODES=${CC_TOGGLE_MODES:-"gpuspy;gpuspy+cupti"} \
	TOGGLE_REPS=${CC_TOGGLE_REPS:-4} bash bench/gpu/cost_toggle.sh
