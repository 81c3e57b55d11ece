#!/bin/bash
# SPDX-License-Identifier: MIT
# Telemetry on the H200 (issue 32): the zoo's ResNet-18 loop under gpuspy
# (GPUSPY_NVML_MS=100, CUPTI on) while nvidia-smi samples the same GPU at
# the same period; tests/gpu/telemetry_check.py compares the two over the
# window both cover. Then the same loop with two processes on the GPU: one
# samples, the other's header names it. From the repository root (carry:
# tools/gpuspy .gpu):   bash tests/gpu/telemetry.sh   (results: $OUT/telemetry*)
. tests/gpu/setup.sh /tmp/gpuspy-telemetry
W=$WORK
Q=timestamp,utilization.gpu,utilization.memory,memory.used,power.draw,power.limit,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,clocks_event_reasons.active,pcie.link.gen.current,pcie.link.width.current
nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits -lms 100 > "$W/smi.csv" 2> "$W/smi.err" &
smi=$!
sleep 1
mkdir -p "$W/t1"
GPUSPY_DIR="$W/t1" GPUSPY_NVML_MS=100 LD_PRELOAD="$ROOT/lib/libgpuspy.so" \
	timeout 300 python3 tests/gpu/loops.py resnet --steps ${TELEMETRY_STEPS:-1500} > "$W/t1.out" 2>&1
echo "traced loop exit $?"
sleep 1
kill $smi; wait $smi 2>/dev/null
t=$(ls "$W"/t1/*.gspy | head -1)
tools/gpuspy report --color never "$t" > "$OUT/telemetry-report.txt" 2>&1
tools/gpuspy dump "$t" > "$W/t1.jsonl"
python3 tests/gpu/telemetry_check.py "$W/t1.jsonl" "$W/smi.csv" | tee "$OUT/telemetry.md"
sed -n '/Telemetry/,/^$/p' "$OUT/telemetry-report.txt"
grep -A3 "clocks_throttled\|power_below\|GPU-Util averaged\|held back\|drew under" "$OUT/telemetry-report.txt" | head -20
# Two processes on one GPU: one samples it.
mkdir -p "$W/t2"
for i in 1 2; do
	GPUSPY_DIR="$W/t2" LD_PRELOAD="$ROOT/lib/libgpuspy.so" timeout 200 python3 tests/gpu/loops.py mlp --steps 3000 \
		> "$W/t2-$i.out" 2>&1 &
done
wait
for f in "$W"/t2/*.gspy; do
	tools/gpuspy dump "$f" | python3 tests/gpu/telemetry_check.py --sampler
done | tee "$OUT/telemetry-two.txt"
