#!/bin/bash
# SPDX-License-Identifier: MIT
# Real programs nobody here wrote the like of (issue 30.8), on the H200:
# each runs untraced, then under gpuspy (CUPTI off) with the independent
# CUPTI counter (tests/gpu/cupti_count.c) in the same processes. Checked:
# exit code and output unchanged; kernels, copies and bytes against the
# counter; report, dump and export succeed. Then gpuspy under Nsight
# Compute and compute-sanitizer (issue 30.6). From the repository root
# after `make gpu-carry`:
#   bash tests/gpu/zoo.sh        (results: $OUT/zoo.md, $OUT/zoo.json)
#   ZOO_CASES="graph_nodes jax_step" bash tests/gpu/zoo.sh   (only those)
. tests/gpu/setup.sh /tmp/gpuspy-zoo
Z=tests/gpu/zoo
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o "$WORK/libcupti_count.so" \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
B="$WORK/bin"; mkdir -p "$B"
CASES="${ZOO_CASES:-resnet_loader transformers_adamw torch_compile_ro jax_step cupy_kernels lightning_fit train_eval um_streams_cublas graph_nodes dynpar vmm ipc callbacks ctx_migrate oom}"
build() { # name nvcc-arguments...: the C cases, only those in CASES (a few cases start sooner)
	local name=$1; shift
	case " $CASES " in *" $name "*) nvcc -O2 "$@" -o "$B/$name" ;; esac
}
build um_streams_cublas -Xcompiler -fopenmp "$Z/um_streams_cublas.cu" -lcublas &&
build graph_nodes "$Z/graph_nodes.cu" &&
build dynpar -rdc=true "$Z/dynpar.cu" -lcudadevrt &&
build vmm "$Z/vmm.cu" -lcuda &&
build ipc "$Z/ipc.cu" &&
build callbacks "$Z/callbacks.cu" &&
build ctx_migrate "$Z/ctx_migrate.cu" -lcuda || exit 1
run_pair() { # name command...
	local name=$1; shift
	case " $CASES " in *" $name "*) ;; *) return 0 ;; esac
	local d="$WORK/$name"; mkdir -p "$d/traces"
	local t0=$(date +%s)
	timeout --foreground 150 "$@" > "$d/untraced.out" 2> "$d/untraced.err"; echo $? > "$d/untraced.rc"
	timeout --foreground 150 env GPUSPY_DIR="$d/traces" GPUSPY_CUPTI=off CUPTI_COUNT_OUT="$d/cupti-%p.json" \
		CUDA_INJECTION64_PATH="$WORK/libcupti_count.so" LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" \
		> "$d/traced.out" 2> "$d/traced.err"; echo $? > "$d/traced.rc"
	local ok=0
	for f in "$d"/traces/*.gspy; do
		[ -e "$f" ] || continue
		./tools/gpuspy dump "$f" -o "${f%.gspy}.jsonl" || ok=1
	done
	./tools/gpuspy report --json "$d/traces" > "$d/report.json" 2> "$d/report.err" || ok=1
	./tools/gpuspy report --color never "$d/traces" > "$d/report.txt" 2>> "$d/report.err" || ok=1
	./tools/gpuspy export --format chrome -o "$d/export.json" "$d/traces" 2>> "$d/report.err" || ok=1
	echo $ok > "$d/tools.rc"
	echo "$name: $(( $(date +%s) - t0 )) s, exit $(cat "$d/untraced.rc") / $(cat "$d/traced.rc"), tools $ok"
}
run_pair resnet_loader python3 "$Z/resnet_loader.py"
run_pair transformers_adamw python3 "$Z/transformers_adamw.py"
run_pair torch_compile_ro python3 "$Z/torch_compile_ro.py"
run_pair jax_step python3 "$Z/jax_step.py"
run_pair cupy_kernels python3 "$Z/cupy_kernels.py"
run_pair lightning_fit python3 "$Z/lightning_fit.py"
run_pair train_eval python3 "$Z/train_eval.py"
run_pair um_streams_cublas "$B/um_streams_cublas"
run_pair graph_nodes "$B/graph_nodes"
run_pair dynpar "$B/dynpar"
run_pair vmm "$B/vmm"
run_pair ipc "$B/ipc"
run_pair callbacks "$B/callbacks"
run_pair ctx_migrate "$B/ctx_migrate"
run_pair oom python3 "$Z/oom.py"
python3 tests/gpu/zoo_check.py "$WORK" $CASES > "$OUT/zoo.md"
rc=$?
[ -n "${ZOO_CASES:-}" ] && { cat "$OUT/zoo.md"; exit $rc; } # a few cases: not under the other tools
cp "$WORK/zoo.json" "$OUT/" 2>/dev/null
# Under the other tools that hold CUPTI or inject themselves (30.6).
tool_case() { # name command...
	local name=$1; shift
	local d="$WORK/tool-$name"; mkdir -p "$d"
	timeout --foreground 150 "$@" > "$d/out" 2> "$d/err"
	local r=$? n=0 ev=0
	for f in "$d"/*.gspy; do
		[ -e "$f" ] || continue
		n=$((n + 1)); ev=$((ev + $(./tools/gpuspy dump "$f" | grep -c '"type":"event"')))
	done
	local timing=$(./tools/gpuspy report --json "$d" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("timing","?"))' 2>/dev/null)
	echo "| $name | $r | $n | $ev | $timing | $(grep -o 'gpuspy: [^;]*' "$d/err" | head -1) |" >> "$OUT/zoo.md"
}
{ echo; echo "| under | exit | traces | events | gpu timing | gpuspy said |"; echo "| --- | --- | --- | --- | --- | --- |"; } >> "$OUT/zoo.md"
P="env GPUSPY_DEBUG=1 GPUSPY_DIR=$WORK/tool-NAME LD_PRELOAD=$ROOT/lib/libgpuspy.so"
tool_case ncu ncu --target-processes all -c 3 ${P/NAME/ncu} "$B/graph_nodes"
tool_case ncu-python ncu --target-processes all -c 3 ${P/NAME/ncu-python} python3 "$Z/cupy_kernels.py"
tool_case compute-sanitizer compute-sanitizer --tool memcheck ${P/NAME/compute-sanitizer} "$B/graph_nodes"
command -v nsys > /dev/null && nsys --version > /dev/null 2>&1 && \
	tool_case nsys nsys profile -o "$WORK/nsys-report" ${P/NAME/nsys} "$B/graph_nodes"
for t in "$WORK"/tool-*; do echo "== $t"; grep -v '^==PROF==\|^ ' "$t/err" | head -20; done
cat "$OUT/zoo.md"
exit $rc
