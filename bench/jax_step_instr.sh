#!/bin/bash
# SPDX-License-Identifier: MIT
# Instructions gpuspy runs per JAX step, counted by cachegrind (repeatable,
# unlike times): bench_call jax-cold (a step's calls as XLA makes them on
# the H200: its context made current, the module's NVTX range, 20 thunk
# ranges inside it, a stream's wait on an event, a graph launch, a host
# function) against the driver double, for 100 and for 300 steps; per step
# = (count at 300 - count at 100) / 200, by function of libgpuspy.
# LIB=PATH counts another build of libgpuspy.so (SRC: the tree it was built
# in, where its debug information names its sources). From the repository root,
# after make test-build:
#   bash bench/jax_step_instr.sh
set -eu
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$PWD/tests/bin GPUSPY_DIR=$T GPUSPY_CUPTI=off BENCH_EVICT_KB=0
for n in 100 300; do
	LD_PRELOAD=${LIB:-$PWD/lib/libgpuspy.so} valgrind --tool=cachegrind --cache-sim=no \
		--cachegrind-out-file=$T/cg.$n tests/bin/bench_call jax-cold 1 $n > /dev/null 2> $T/log.$n
	cg_annotate --show-percs=no --threshold=0 --auto=no $T/cg.$n 2> /dev/null |
		awk -v root="${SRC:-$PWD}/" '$2 ~ /^\/.*:/ && index($2, root "lib/") + index($2, root "include/gpuspy/") {
			gsub(",", "", $1); split($2, a, ":"); f = a[2]; sub(/\.(constprop|part|isra)\.[0-9]+/, "", f); n[f] += $1
		} END { for (f in n) print f, n[f] }' > $T/fn.$n
done
python3 - "$T/fn.100" "$T/fn.300" <<'PY'
import sys
a, b = ({l.split()[0]: int(l.split()[1]) for l in open(p)} for p in sys.argv[1:])
per = {f: (b.get(f, 0) - a.get(f, 0)) / 200 for f in set(a) | set(b)}
rows = sorted(((v, f) for f, v in per.items() if v >= 1), reverse=True)
print(f"libgpuspy instructions per JAX step: {sum(per.values()):.0f}")
for v, f in rows:
    print(f"  {v:7.0f}  {f}")
PY
