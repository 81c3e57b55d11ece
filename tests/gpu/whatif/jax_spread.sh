#!/bin/bash
# SPDX-License-Identifier: MIT
# Where the host-bound JAX loop's prediction error comes from, on a lent
# GPU, from the repository root (carry .gpu and tools/gpuspy):
#
#   ROUNDS=8 bash tests/gpu/whatif/jax_spread.sh
#
# (PIN_CORES= leaves the pinned runs out; PIN_CORES=0-7 pins to others.)
# Each round, in this order: the slow loop and its fix untraced (as
# run.sh), the same two pinned to four cores (taskset -c 0-3), both in one
# process in turn (jax_hostbound.py --ab 5: what the fix saves at that
# process's own speed), and the slow loop traced with its report. The
# table says, a round a row, each one's ms a step and the report's
# prediction with the traced step it replayed, so that the spread of the
# untraced truth, of the traced step and of the prediction can be told
# apart. Writes $OUT/jax_spread.md and $OUT/jax_spread.tar.xz (each
# round's outputs and reports, and traces).
set -u
. tests/gpu/setup.sh /tmp/gpuspy-jax-spread
ROUNDS=${ROUNDS:-8}
LIMIT=${LIMIT:-120}
P="python3 tests/gpu/whatif/jax_hostbound.py --steps 5000" # as its results ran
PIN=; [ "${PIN_CORES-0-3}" ] && command -v taskset > /dev/null && PIN="taskset -c ${PIN_CORES:-0-3}"
{
	echo "# ROUNDS=$ROUNDS PIN_CORES=${PIN_CORES-0-3} bash tests/gpu/whatif/jax_spread.sh"
	echo
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	echo "$(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
	echo
	echo "| round | slow | fixed | realized | slow pinned | fixed pinned | in one process: slow, fixed, saved | traced step | replayed step | predicted | predicted / replayed step |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
} > "$OUT/jax_spread.md"
for r in $(seq "$ROUNDS"); do
	d="$WORK/r$r"; mkdir -p "$d/t"
	timeout --foreground $LIMIT $P > "$d/slow.out" 2>&1
	timeout --foreground $LIMIT $P --fix > "$d/fixed.out" 2>&1
	if [ -n "$PIN" ]; then
		timeout --foreground $LIMIT $PIN $P > "$d/slow-pin.out" 2>&1
		timeout --foreground $LIMIT $PIN $P --fix > "$d/fixed-pin.out" 2>&1
	fi
	timeout --foreground $LIMIT $P --ab 5 > "$d/ab.out" 2>&1
	GPUSPY_DIR="$d/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" timeout --foreground $LIMIT $P > "$d/traced.out" 2>&1
	./tools/gpuspy report --json "$d/t" > "$d/report.json" 2> "$d/report.err"
	./tools/gpuspy report --color never "$d/t" > "$d/report.txt" 2>> "$d/report.err"
	python3 - "$d" "$r" >> "$OUT/jax_spread.md" <<'EOF'
import json, os, re, sys
d, r = sys.argv[1], sys.argv[2]
def ms(name, key="step_ms"):
    try:
        m = re.search(r"^whatif .*?\b" + key + r"=([0-9.]+)", open(os.path.join(d, name)).read(), re.M)
    except OSError:
        return None
    return float(m.group(1)) if m else None
f = lambda v: "-" if v is None else f"{v:.4f}"
s, x = ms("slow.out"), ms("fixed.out")
a_s, a_f = ms("ab.out", "slow_ms"), ms("ab.out", "fixed_ms")
pred = step = None
try:
    first = json.load(open(os.path.join(d, "report.json")))["diagnoses"][0]
    pred = first["saving"]["per_step_ns"] / 1e6
    m = re.search(r"steady steps of ([0-9.]+) us", first["saving"]["how"])
    step = float(m.group(1)) / 1e3 if m else None
    print(f"round {r}: {first['id']}", file=sys.stderr)
except (OSError, ValueError, KeyError, IndexError, TypeError):
    pass
print(f"| {r} | {f(s)} | {f(x)} | {f(s - x) if s and x else '-'} | {f(ms('slow-pin.out'))} | {f(ms('fixed-pin.out'))} "
      f"| {f(a_s)}, {f(a_f)}, {f(a_s - a_f) if a_s and a_f else '-'} | {f(ms('traced.out'))} | {f(step)} | {f(pred)} "
      f"| {f'{pred / step:.2f}' if pred and step else '-'} |")
EOF
	tail -1 "$OUT/jax_spread.md"
done
(cd "$WORK" && tar cJf "$OUT/jax_spread.tar.xz" r*/*.out r*/report.* r*/t 2> /dev/null)
cat "$OUT/jax_spread.md"
