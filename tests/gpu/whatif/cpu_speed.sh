#!/bin/bash
# SPDX-License-Identifier: MIT
# Whether the host-bound what-if programs' spread by process is the CPU
# they land on, on a lent GPU machine, from the repository root (carry
# .gpu and tools/gpuspy):
#
#   SWEEPS=3 ROUNDS=6 bash tests/gpu/whatif/cpu_speed.sh
#
# Processes of the JAX loop ran its slow step 0.07 to 0.185 ms on H100s,
# in two modes (tests/gpu/results/round3/jax-spread-h100.md), while its
# GPU-bound fix held within 2%; pinned to CPUs 0-3 they spread as much.
# First the machine's CPUs and the GPU's affinity; then SWEEPS sweeps, each
# timing a pure-Python loop pinned to each CPU in turn (cpu_speed.py), with
# each CPU's steal over the sweep (/proc/stat); then ROUNDS rounds of the
# JAX loop's slow program untraced: unpinned, on the four CPUs fastest in
# the sweeps, and on the four slowest. If the spread is the CPU's, the
# fast four hold tight. Writes $OUT/cpu_speed.md.
set -u
. tests/gpu/setup.sh /tmp/gpuspy-cpu-speed
SWEEPS=${SWEEPS:-3}
ROUNDS=${ROUNDS:-6}
CPUS=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))') # those it may use
P="python3 tests/gpu/whatif/jax_hostbound.py --steps 5000" # as jax_spread.sh's
step_ms() { sed -n 's/^whatif step_ms=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
steal() { awk '/^cpu[0-9]/ { print substr($1, 4), $9 }' /proc/stat; }
M="$OUT/cpu_speed.md"
{
	echo "# SWEEPS=$SWEEPS ROUNDS=$ROUNDS bash tests/gpu/whatif/cpu_speed.sh"
	echo
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	echo "CPUs $CPUS; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
	echo
	echo '```'
	lscpu -e 2>&1 | head -40
	nvidia-smi topo -m 2>&1 | head -12
	echo '```'
	echo
} > "$M"
for s in $(seq "$SWEEPS"); do
	steal > "$WORK/steal-$s.a"
	for c in $CPUS; do
		echo "$c $(taskset -c "$c" python3 tests/gpu/whatif/cpu_speed.py)"
	done > "$WORK/sweep-$s.txt"
	steal > "$WORK/steal-$s.b"
done
# ns an iteration by CPU, each sweep, the median, and steal (jiffies) over each sweep
python3 - "$WORK" "$SWEEPS" >> "$M" <<'PY'
import statistics, sys
w, n = sys.argv[1], int(sys.argv[2])
ns = {}
st = {}
for s in range(1, n + 1):
    for line in open(f"{w}/sweep-{s}.txt"):
        c, v = line.split()
        ns.setdefault(int(c), []).append(float(v))
    a = dict(l.split() for l in open(f"{w}/steal-{s}.a"))
    b = dict(l.split() for l in open(f"{w}/steal-{s}.b"))
    for c in a:
        st.setdefault(int(c), []).append(int(b[c]) - int(a[c]))
print("| CPU | " + " | ".join(f"sweep {s} ns" for s in range(1, n + 1)) + " | median | steal, jiffies a sweep |")
print("| --- |" + " --- |" * (n + 2))
for c in sorted(ns):
    print(f"| {c} | " + " | ".join(f"{v:.2f}" for v in ns[c]) + f" | {statistics.median(ns[c]):.2f} | "
          + ", ".join(map(str, st.get(c, []))) + " |")
order = sorted(ns, key=lambda c: statistics.median(ns[c]))
open(f"{w}/fast", "w").write(",".join(map(str, order[:4])))
open(f"{w}/slow", "w").write(",".join(map(str, order[-4:])))
print(f"\nfastest four: {order[:4]}; slowest four: {order[-4:]}\n")
PY
FAST=$(cat "$WORK/fast") SLOW=$(cat "$WORK/slow")
{
	echo "The JAX loop's slow program, untraced, ms a step:"
	echo
	echo "| round | unpinned | on CPUs $FAST | on CPUs $SLOW |"
	echo "| --- | --- | --- | --- |"
} >> "$M"
for r in $(seq "$ROUNDS"); do
	timeout --foreground 120 $P > "$WORK/free-$r.out" 2>&1
	timeout --foreground 120 taskset -c "$FAST" $P > "$WORK/fast-$r.out" 2>&1
	timeout --foreground 120 taskset -c "$SLOW" $P > "$WORK/slow-$r.out" 2>&1
	f=$(step_ms "$WORK/free-$r.out") q=$(step_ms "$WORK/fast-$r.out") s=$(step_ms "$WORK/slow-$r.out")
	echo "| $r | $f | $q | $s |" >> "$M"
done
cat "$M"
