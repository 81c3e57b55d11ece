#!/bin/bash
# SPDX-License-Identifier: MIT
# What gpuspy's code does per JAX step, counted by cachegrind (repeatable,
# unlike times): bench_call jax-cold (a step's calls as XLA makes them on
# the H200: its context made current, the module's NVTX range, 20 thunk
# ranges inside it, a stream's wait on an event, a graph launch, a host
# function) against the driver double, for 20 and for 60 steps; per step
# = (count at 60 - count at 20) / 40, by function of libgpuspy:
#   * instructions;
#   * cache lines it finds cold: before each call the bench reads 1.5 MiB
#     of other data and runs 64 KiB of other code (as XLA's work between
#     two calls does), which empties the simulated caches (32 KiB I1,
#     48 KiB D1, 1 MiB last level) of all but the stack; a line missed in
#     the last level is a line the call brings from memory. Code lines and
#     data lines are counted apart.
# It is a model: on the H200 XLA's work between two calls may leave some
# of those lines in the L2, most of all between the thunk ranges. Fewer
# lines a call is what lowered gpuspy's time in place (docs/measurements.md).
# LIB=PATH counts another build of libgpuspy.so (SRC: the tree it was built
# in, where its debug information names its sources). From the repository
# root, after make test-build:
#   bash bench/jax_step_instr.sh
set -eu
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$PWD/tests/bin GPUSPY_DIR=$T GPUSPY_CUPTI=off
export BENCH_EVICT_KB=1536 BENCH_EVICT_CODE_KB=64 BENCH_WARMUP=20
for n in 20 60; do
	LD_PRELOAD=${LIB:-$PWD/lib/libgpuspy.so} valgrind --tool=cachegrind --cache-sim=yes \
		--I1=32768,8,64 --D1=49152,12,64 --LL=1048576,16,64 \
		--cachegrind-out-file=$T/cg.$n tests/bin/bench_call jax-cold 1 $n > /dev/null 2> $T/log.$n
	# columns: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw file:function
	cg_annotate --show-percs=no --threshold=0 --auto=no $T/cg.$n 2> /dev/null |
		awk -v root="${SRC:-$PWD}/" '$10 ~ /^\/.*:/ && index($10, root "lib/") + index($10, root "include/gpuspy/") {
			split($10, a, ":"); f = a[2]; sub(/\.(constprop|part|isra)\.[0-9]+/, "", f); fn[f] = 1
			for (i = 1; i <= 9; i++) { gsub(",", "", $i); v[f, i] += $i }
		} END { for (f in fn) print f, v[f, 1], v[f, 3], v[f, 6] + v[f, 9] }' > $T/fn.$n
done
python3 - "$T/fn.20" "$T/fn.60" <<'PY'
import sys
a, b = ({l.split()[0]: [int(x) for x in l.split()[1:]] for l in open(p)} for p in sys.argv[1:])
per = {f: [(y - x) / 40 for x, y in zip(a.get(f, [0] * 3), b.get(f, [0] * 3))] for f in set(a) | set(b)}
tot = [sum(v[i] for v in per.values()) for i in range(3)]
print(f"libgpuspy per JAX step: {tot[0]:.0f} instructions, {tot[1]:.0f} code lines "
      f"and {tot[2]:.0f} data lines cold")
print("  instr   code   data  function")
for f, v in sorted(per.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
    if v[0] >= 1 or v[1] + v[2] >= 1:
        print(f"  {v[0]:5.0f}  {v[1]:5.0f}  {v[2]:5.0f}  {f}")
PY
