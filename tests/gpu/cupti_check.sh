#!/bin/bash
# SPDX-License-Identifier: MIT
# GPU-side truth on the H200 (issue 5, point 5): for each case, gpuspy with
# CUPTI, and on its own an independent CUPTI counter (tests/gpu/cupti_count.c,
# shares no code with gpuspy); kernel counts, copy bytes and memsets must be
# equal. Also injection mode (CUDA_INJECTION64_PATH), a process killed while
# idle after its GPU work, and coexistence with torch.profiler. Run from the repository root: bash tests/gpu/cupti_check.sh
# (carry tools/gpuspy and .gpu, made by `make gpu-carry`).
. tests/gpu/setup.sh /tmp/gpuspy-cupti
export TORCHINDUCTOR_CACHE_DIR="$WORK/inductor"
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o "$WORK/libcupti_count.so" \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
nvcc -O2 -o "$WORK/static_launches" examples/static_launches.cu || exit 1
mkdir -p "$WORK/bin" && nvcc -O2 -o "$WORK/bin/callbacks" tests/gpu/zoo/callbacks.cu || exit 1
nvcc -O2 -o "$WORK/bin/ctx_migrate" tests/gpu/zoo/ctx_migrate.cu -lcuda || exit 1
python3 tests/gpu/compiled.py 3 > /dev/null 2>&1 # warm the compile cache: both runs below see it warm

check_case() { # name command...
	local name=$1; shift
	local d="$WORK/$name"; mkdir -p "$d"
	CUDA_INJECTION64_PATH="$WORK/libcupti_count.so" CUPTI_COUNT_OUT="$d/cupti.json" "$@" \
		> "$d/counter.out" 2>&1 || echo "$name: counter run failed"
	GPUSPY_DIR="$d" GPUSPY_CUPTI=on LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" > "$d/gpuspy.out" 2>&1 \
		|| echo "$name: gpuspy run failed: $(tail -2 "$d/gpuspy.out")"
	for f in "$d"/*.gspy; do [ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"; done
	echo "$name: done"
}
check_case mlp python3 tests/gpu/loops.py mlp --steps 300
check_case conv python3 tests/gpu/loops.py conv --steps 100
check_case compiled python3 tests/gpu/compiled.py 50
check_case graph python3 tests/gpu/graph.py 50
check_case static "$WORK/static_launches"
# Threads that start at once with streams and callbacks, and a context
# that migrates between threads (issue 54.1, 54.2): 8 and 2 kernels.
check_case callbacks "$WORK/bin/callbacks"
check_case ctx_migrate "$WORK/bin/ctx_migrate"

# Injection mode: no LD_PRELOAD, libgpuspy as the CUDA injection library.
mkdir -p "$WORK/injection"
GPUSPY_DIR="$WORK/injection" GPUSPY_CUPTI=on CUDA_INJECTION64_PATH="$ROOT/lib/libgpuspy.so" \
	"$WORK/static_launches" > "$WORK/injection/out.txt" 2>&1
for f in "$WORK/injection"/*.gspy; do [ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"; done

# Killed while idle after its GPU work: the GPU records must be in the file
# (gpuspy's flusher asks CUPTI for them a second after the program goes
# quiet: within two seconds).
mkdir -p "$WORK/kill"
GPUSPY_DIR="$WORK/kill" GPUSPY_CUPTI=on LD_PRELOAD="$ROOT/lib/libgpuspy.so" \
	python3 tests/gpu/hold.py 2000 > "$WORK/kill/out.txt" 2>&1 &
pid=$!
for _ in $(seq 240); do grep -q ready "$WORK/kill/out.txt" && break; sleep 0.5; done
sleep 3
kill -9 $pid; wait $pid 2> /dev/null
for f in "$WORK/kill"/*.gspy; do [ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"; done

# torch.profiler before and after gpuspy took CUPTI.
for order in first later; do
	mkdir -p "$WORK/coexist_$order"
	GPUSPY_DIR="$WORK/coexist_$order" GPUSPY_CUPTI=on LD_PRELOAD="$ROOT/lib/libgpuspy.so" \
		python3 tests/gpu/coexist.py $order > "$WORK/coexist_$order/out.txt" 2>&1
	echo "coexist $order: exit $?"
	for f in "$WORK/coexist_$order"/*.gspy; do [ -e "$f" ] && ./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl"; done
done
./tools/gpuspy report --color never "$WORK/mlp" > "$OUT/mlp_cupti.report.txt"
./tools/gpuspy report --color never "$WORK/graph" > "$OUT/graph_cupti.report.txt"
python3 tests/gpu/cupti_compare.py "$WORK" | tee "$OUT/cupti_check.md"
rc=${PIPESTATUS[0]}
# The overhead benchmark (bench/gpu_overhead.py) reuses the counter built here.
[ -n "${WITH_OVERHEAD:-}" ] && python3 bench/gpu_overhead.py "$WORK" "$OUT"
exit "$rc"
