#!/bin/bash
# SPDX-License-Identifier: MIT
# The JAX loop's what-if over long runs, on a lent GPU machine, from the
# repository root (carry .gpu, tools/gpuspy, and OLD, a report built
# before a change of the replay's window, to compare):
#
#   ROUNDS=8 STEPS=30000 OLD=build/gpuspy-250ms bash tests/gpu/whatif/jax_long.sh
#
# A process of the host-bound JAX loop moves between a fast and a slow
# speed every few hundred ms (tests/gpu/results/round3/jax-spread-h100.md,
# its jax_modes.sh part): 5000 steps (0.5 s) hold two to five such
# stretches, so the untraced step that a fix is measured against, and the
# traced window a prediction is replayed from, each carry which ones they
# caught. Here each process runs STEPS steps (30000: about 3 s), in
# rounds of a new random order: slow and fixed untraced, slow traced
# with both reports' predictions. Writes $OUT/jax_long.md.
set -u
. tests/gpu/setup.sh /tmp/gpuspy-jax-long
ROUNDS=${ROUNDS:-8}
STEPS=${STEPS:-30000}
OLD=${OLD:-}
LIMIT=${LIMIT:-120}
P="python3 tests/gpu/whatif/jax_hostbound.py --steps $STEPS"
step_ms() { sed -n 's/^whatif step_ms=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
for r in $(seq "$ROUNDS"); do
	d="$WORK/r$r"; mkdir -p "$d/t"
	for v in $(printf '%s\n' slow fixed traced | shuf); do
		case $v in
		slow) timeout --foreground $LIMIT $P ;;
		fixed) timeout --foreground $LIMIT $P --fix ;;
		traced) GPUSPY_DIR="$d/t" LD_PRELOAD="$ROOT/lib/libgpuspy.so" timeout --foreground $LIMIT $P ;;
		esac > "$d/$v.out" 2> "$d/$v.err"
	done
	./tools/gpuspy report --json "$d/t" > "$d/report.json" 2> "$d/report.err"
	[ -n "$OLD" ] && "$OLD" report --json "$d/t" > "$d/report-old.json" 2>> "$d/report.err"
	echo "round $r: slow $(step_ms "$d/slow.out") fixed $(step_ms "$d/fixed.out") traced $(step_ms "$d/traced.out")"
	rm -rf "$d/t" # a trace of 30000 steps is 1M events: not kept
done
{
	echo "# ROUNDS=$ROUNDS STEPS=$STEPS OLD=$OLD bash tests/gpu/whatif/jax_long.sh"
	echo
	nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
	echo
	python3 - "$WORK" "$ROUNDS" <<'PY'
import json, os, re, statistics, sys
w, n = sys.argv[1], int(sys.argv[2])
def ms(path):
    try:
        m = re.search(r"^whatif step_ms=([0-9.]+)", open(path).read(), re.M)
        return float(m.group(1)) if m else None
    except OSError:
        return None
def rep(path):
    try:
        d = json.load(open(path))
        s = d["processes"][0]["step"]
        first = d["diagnoses"][0]
        return first["id"], first["saving"]["per_step_ns"] / 1e6, s["replayed_steps"], s["step_ns"] / 1e6
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None, None, None, None
f = lambda v: "-" if v is None else f"{v:.4f}"
rows = []
print("| round | slow | fixed | traced | first | predicted | window: steps, step | before the change: predicted | its window: steps, step |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in range(1, n + 1):
    d = f"{w}/r{r}"
    s, x, t = ms(f"{d}/slow.out"), ms(f"{d}/fixed.out"), ms(f"{d}/traced.out")
    a, b = rep(f"{d}/report.json"), rep(f"{d}/report-old.json")
    rows.append((s, x, a[1], b[1]))
    print(f"| {r} | {f(s)} | {f(x)} | {f(t)} | {a[0]} | {f(a[1])} | {a[2]}, {f(a[3])} | {f(b[1])} | {b[2]}, {f(b[3])} |")
def med(i):
    v = [q[i] for q in rows if q[i] is not None]
    return statistics.median(v) if v else None
def err(v, real):
    return f"{f(v)} ({100 * (v - real) / real:+.0f}%)" if v is not None and real else f(v)
real = med(0) - med(1) if med(0) is not None and med(1) is not None else None
print(f"\nMedians: slow {f(med(0))}, fixed {f(med(1))}, realized {f(real)}; predicted {err(med(2), real)}, "
      f"before the change {err(med(3), real)}")
PY
} > "$OUT/jax_long.md"
(cd "$WORK" && tar cJf "$OUT/jax_long.tar.xz" r*/*.out r*/*.err r*/*.json 2> /dev/null)
cat "$OUT/jax_long.md"
