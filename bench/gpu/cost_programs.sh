#!/bin/bash
# SPDX-License-Identifier: MIT
# What gpuspy costs on real programs (issue 37): the lock step of
# bench/gpu_lockstep.py on the zoo's torchvision ResNet-18 with DataLoader
# workers, its transformers GPT-2 and a JAX jitted step (tests/gpu/loops.py
# resnet|gpt2|jax), every mode alive at once and taking turns window by
# window: untraced (twice, the A/A check), gpuspy without CUPTI, with
# CUPTI, events mode, preloaded and paused (LOOP_PAUSED=1), the bare CUPTI
# collector (tests/gpu/cupti_count.c) and, for the PyTorch programs,
# torch.profiler with CUDA activity. Per program $OUT/cost-LOOP.md (the
# table) and cost-LOOP_rates.txt; then bench/overhead_table.py pools them
# with 95% intervals into $OUT/cost-programs.md.
# From the repository root, on the GPU machine (carry: tools/gpuspy .gpu):
#   bash bench/gpu/cost_programs.sh        COST_LOOPS="jax" COST_WINDOWS=10 ...
# COST_EXTRA="gpuspy GPUSPY_STACKS=0,..." adds modes that split gpuspy's cost;
# COST_MODES replaces the base modes and torch.profiler (untraced must stay
# first). The sampler's cost (issue 32; docs/telemetry.md):
#   COST_LOOPS="mlp resnet" COST_MODES="untraced,untraced b,gpuspy GPUSPY_NVML_MS=0,gpuspy"
. tests/gpu/setup.sh /tmp/gpuspy-lockstep
W=$WORK
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o "$W/libcupti_count.so" \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
BASE=${COST_MODES:-"untraced,untraced b,gpuspy,gpuspy+cupti,gpuspy events,gpuspy LOOP_PAUSED=1,bare cupti"}
rates=()
for loop in ${COST_LOOPS:-resnet gpt2 jax}; do
	modes=$BASE
	[ "$loop" = jax ] || [ -n "${COST_MODES:-}" ] || modes="$modes,torch.profiler"
	[ -n "${COST_EXTRA:-}" ] && modes="$modes,$COST_EXTRA"
	rm -rf "$W"/lockstep-*
	echo "== $loop: $modes"
	mkdir -p "$W/out-$loop"
	# JAX's step is ~60 us: 1000-step windows (~60 ms), the others' 50 (~5-10 ms).
	win=50; [ "$loop" = jax ] && win=1000
	LOOP=$loop MODES=$modes WINDOWS=${COST_WINDOWS:-16} LOCKSTEP_TIMEOUT=420 LOCKSTEP_WINDOW=$win \
		python3 bench/gpu_lockstep.py "$W" "$W/out-$loop" > "$W/$loop.log" 2>&1
	rc=$?
	tail -20 "$W/$loop.log"
	[ $rc = 0 ] || { echo "$loop: lock step failed ($rc)"; continue; }
	cp "$W/out-$loop/lockstep.md" "$OUT/cost-$loop.md"
	cp "$W/out-$loop/lockstep_rates.txt" "$OUT/cost-${loop}_rates.txt"
	rates+=("$OUT/cost-${loop}_rates.txt")
	# What the report says gpuspy cost, from the CUPTI mode's trace.
	t=$(ls "$W"/lockstep-gpuspy_cupti/*.gspy 2>/dev/null | head -1)
	[ -n "$t" ] && tools/gpuspy report "$t" 2>/dev/null | grep -E "gpuspy's own time|traced," |
		sed "s/^/$loop report: /" | tee -a "$OUT/cost-report-lines.txt"
	du -b "$W"/lockstep-gpuspy*/ | sed "s/^/$loop trace dir bytes: /" >> "$OUT/cost-report-lines.txt"
done
[ ${#rates[@]} -gt 0 ] && python3 bench/overhead_table.py "${rates[@]}" > "$OUT/cost-programs.md"
cat "$OUT/cost-programs.md" 2>/dev/null
