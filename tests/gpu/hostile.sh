#!/bin/bash
# SPDX-License-Identifier: MIT
# Programs that once hung gpuspy, on the H200 (issue 30.1, 38.1): cuBLAS on
# per-thread streams over managed memory from OpenMP threads, and a shared
# library whose C++ global creates a stream before libgpuspy's constructor
# runs. Each runs untraced, then under gpuspy with its defaults (CUPTI on),
# with CUPTI off, and (cuBLAS) with OMP_NUM_THREADS=1, each within 120 s:
# same output and exit code, and a trace. Then once with gpuspy (CUPTI off)
# and the independent CUPTI counter (tests/gpu/cupti_count.c) in the same
# process: kernels and copies equal. From the repository root:
#   bash tests/gpu/hostile.sh      (results in $OUT/hostile.md)
. tests/gpu/setup.sh /tmp/gpuspy-hostile
Z=tests/gpu/zoo
nvcc -O2 -Xcompiler -fopenmp "$Z/um_streams_cublas.cu" -lcublas -o "$WORK/um_streams_cublas" || exit 1
nvcc -O2 -Xcompiler -fPIC -shared -cudart shared -DLIB "$Z/ctor_stream.cu" -o "$WORK/libctor_stream.so" || exit 1
nvcc -O2 -cudart shared "$Z/ctor_stream.cu" -L"$WORK" -Xlinker --no-as-needed -lctor_stream \
	-Xlinker -rpath="$WORK" -o "$WORK/ctor_stream" || exit 1
gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c -o "$WORK/libcupti_count.so" \
	-L/usr/local/cuda/lib64 -lcupti -Wl,-rpath,/usr/local/cuda/lib64 || exit 1
R="$OUT/hostile.md"
rc=0
echo "| program | mode | exit | seconds | output as untraced | traces | events |" > "$R"
echo "| --- | --- | --- | --- | --- | --- | --- |" >> "$R"
one() { # prog mode env...
	local prog=$1 mode=$2; shift 2
	local d="$WORK/$prog-$mode"; mkdir -p "$d"
	local t0=$(date +%s.%N)
	if [ "$mode" = untraced ]; then
		timeout 120 env "$@" "$WORK/$prog" > "$d/stdout" 2> "$d/stderr"
	else
		timeout 120 env GPUSPY_DIR="$d" LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$@" "$WORK/$prog" > "$d/stdout" 2> "$d/stderr"
	fi
	local r=$? t1=$(date +%s.%N)
	local same=yes n=0 ev=0
	cmp -s "$d/stdout" "$WORK/$prog-untraced/stdout" || same=no
	for f in "$d"/*.gspy; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		ev=$((ev + $(./tools/gpuspy dump "$f" | grep -c '"type":"event"')))
	done
	echo "| $prog | $mode | $r | $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") | $same | $n | $ev |" >> "$R"
	if [ "$mode" != untraced ] && { [ $r != 0 ] || [ $same = no ] || [ $n = 0 ]; }; then rc=1; fi
	if [ "$mode" = untraced ] && [ $r != 0 ]; then rc=1; fi
}
for p in um_streams_cublas ctor_stream; do
	one $p untraced
	one $p default
	one $p cupti-off GPUSPY_CUPTI=off
done
one um_streams_cublas omp1 OMP_NUM_THREADS=1
# Counts against the independent counter, in the same process.
echo >> "$R"
echo "| program | gpuspy kernels | CUPTI kernels | gpuspy H2D+D2H copies | CUPTI H2D+D2H copies |" >> "$R"
echo "| --- | --- | --- | --- | --- |" >> "$R"
for p in um_streams_cublas ctor_stream; do
	d="$WORK/$p-count"; mkdir -p "$d"
	timeout 120 env GPUSPY_DIR="$d" GPUSPY_CUPTI=off CUPTI_COUNT_OUT="$d/cupti.json" \
		CUDA_INJECTION64_PATH="$WORK/libcupti_count.so" LD_PRELOAD="$ROOT/lib/libgpuspy.so" "$WORK/$p" > "$d/stdout" 2>&1
	./tools/gpuspy dump "$d"/*.gspy > "$d/dump.jsonl"
	python3 - "$d" "$p" >> "$R" <<'PY' || rc=1
import json, sys
d, p = sys.argv[1], sys.argv[2]
ev = [json.loads(l) for l in open(d + "/dump.jsonl") if '"type":"event"' in l]
c = json.load(open(d + "/cupti.json"))
k = sum(1 for e in ev if e["kind"] == "launch" and e.get("result", 0) == 0)
cp = sum(1 for e in ev if e["kind"] == "copy" and e.get("dir") in ("h2d", "d2h") and e.get("result", 0) == 0)
ck, cc = c["kernels"], c.get("h2d", 0) + c.get("d2h", 0)
print(f"| {p} | {k} | {ck} | {cp} | {cc} |")
sys.exit(0 if (k, cp) == (ck, cc) else 1)
PY
done
cat "$R"
exit $rc
