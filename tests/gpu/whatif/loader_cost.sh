#!/bin/bash
# SPDX-License-Identifier: MIT
# Where loader workers begin to pay: compiled_loader.py (the zoo's
# torch.compile loop, batches of 64 from a TensorDataset) with each batch
# costing LOADS ms more to load (0: the dataset as it is), loaded in the
# main process and by each count of WORKERS workers (pinned, persistent),
# untraced, in ROUNDS rounds of random order; the median step of each.
# From the repository root, on the GPU machine:
#   ROUNDS=3 LOADS="0 1 3" WORKERS=2 bash tests/gpu/whatif/loader_cost.sh
#   ROUNDS=2 LOADS=3 WORKERS="2 3" bash tests/gpu/whatif/loader_cost.sh
set -u
. tests/gpu/setup.sh /tmp/gpuspy-loader-cost > /dev/null
ROUNDS=${ROUNDS:-3}
for w in ${WORKERS:-2}; do # (0 workers is the main process, which each round runs anyway)
	[ "$w" -ge 1 ] 2> /dev/null || { echo "loader_cost.sh: WORKERS takes counts of 1 or more, not '$w'" >&2; exit 2; }
done
P="python3 tests/gpu/whatif/compiled_loader.py --steps ${STEPS:-300}"
for r in $(seq "$ROUNDS"); do
	for run in $(for l in ${LOADS:-0 1 3}; do echo "$l:main"; for w in ${WORKERS:-2}; do echo "$l:$w"; done; done | shuf); do
		l=${run%%:*} v=${run##*:}
		f=; [ "$v" != main ] && f="--fix --workers $v"
		ms=$(timeout 120 $P --load-ms "$l" $f 2> /dev/null | sed -n 's/^whatif step_ms=\([0-9.]*\).*/\1/p')
		echo "$r $l $v ${ms:-none}"
	done
done | tee "$OUT/loader_cost.txt"
python3 - "$OUT/loader_cost.txt" <<'P' | tee "$OUT/loader_cost.md"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ws = sorted({r[2] for r in rows if r[2] != "main"}, key=int)
print("| load ms a batch | main process ms/step | " + " | ".join(f"{w} workers ms/step, saved" for w in ws) + " |")
print("| --- | --- |" + " --- |" * len(ws))
for l in sorted({r[1] for r in rows}, key=float):
    m = {v: [float(r[3]) for r in rows if r[1] == l and r[2] == v and r[3] != "none"] for v in ["main"] + ws}
    m = {v: statistics.median(x) if x else None for v, x in m.items()}  # None: every run of it failed
    cell = lambda w: "none" if m[w] is None else f"{m[w]:.3f}" + ("" if m["main"] is None else f", {m['main'] - m[w]:+.3f}")
    main = "none" if m["main"] is None else f"{m['main']:.3f}"
    print(f"| {l} | {main} | " + " | ".join(cell(w) for w in ws) + " |")
P
