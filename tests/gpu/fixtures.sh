#!/bin/bash
# SPDX-License-Identifier: MIT
# Real traces for the report's tests (tests/fixtures/h200/), captured the
# way a user would: the Python wheel (dist/, from `make packages`, carried)
# installed into a venv of its own (or, where the image cannot make one,
# with pip --target), and `gpuspy run` from it on the image's python3, with
# default options plus Python frames. Each
# program's traces come back as $OUT/NAME.tar.gz, its report beside them in
# $OUT/fixtures.md. From the repository root:
#   bash tests/gpu/fixtures.sh          (carry: dist)
#   FIXTURES="oom leak" bash tests/gpu/fixtures.sh
#   FIXTURES="torch_compile_ro lightning_fit" COST=0 bash tests/gpu/fixtures.sh
#        (COST=0: without the Python frames' cost runs at the end)
#   FIXTURES="um_streams_cublas dynpar vmm ipc callbacks ctx_migrate" COST=0 bash tests/gpu/fixtures.sh
#        (the zoo's C programs, built as zoo.sh builds them)
set -u
OUT=${OUT:-/tmp/gpuspy-gpu}
WORK=/tmp/gpuspy-fixtures
rm -rf "$WORK"; mkdir -p "$OUT" "$WORK"
export PYTHONUNBUFFERED=1
Z=tests/gpu/zoo
md="$OUT/fixtures.md"
if python3 -m venv "$WORK/venv" > "$WORK/venv.log" 2>&1; then
	"$WORK/venv/bin/pip" install -q --no-index --no-deps dist/gpuspy-*.whl || exit 1
	G="$WORK/venv/bin/gpuspy"; how="into a venv"
else # the command the console script runs, from the package itself
	python3 -m pip install -q --no-index --no-deps --target "$WORK/wheel" dist/gpuspy-*.whl || exit 1
	G="$WORK/wheel/gpuspy/bin/gpuspy"; how="with pip --target (no venv here: $(tail -1 "$WORK/venv.log"))"
fi
{
	card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
	echo "# Fixtures: real traces from the GPU machine"
	echo
	echo "\`tests/gpu/fixtures.sh\`, on ${card:-a GPU nvidia-smi did not name}, with \`$("$G" --version)\` installed from its wheel $how"
	echo "(\`pip install dist/gpuspy-*.whl\`): \`gpuspy run\` with \`GPUSPY_PYTHON_FRAMES=1\`."
	echo
} > "$md"
CASES="${FIXTURES:-resnet_loader transformers_adamw jax_step cupy_kernels oom leak graph_nodes}"
# The device tool brings back 8 files: fixtures.md and 7 tarballs.
[ "$(echo $CASES | wc -w)" -le 7 ] || { echo "fixtures.sh: 7 fixtures a call at most (8 files come back)" >&2; exit 2; }
mkdir -p "$WORK/bin"
for name in $CASES; do # the zoo's C programs, built as tests/gpu/zoo.sh builds them
	[ -e "$Z/$name.cu" ] || continue
	case $name in
	um_streams_cublas) flags="-Xcompiler -fopenmp -lcublas" ;;
	dynpar) flags="-rdc=true -lcudadevrt" ;;
	vmm | ctx_migrate) flags=-lcuda ;;
	*) flags= ;;
	esac
	nvcc -O2 "$Z/$name.cu" $flags -o "$WORK/bin/$name" || exit 1
done
for name in $CASES; do
	cmd=(python3 "$Z/$name.py")
	[ -x "$WORK/bin/$name" ] && cmd=("$WORK/bin/$name")
	d="$WORK/$name"
	t0=$(date +%s)
	GPUSPY_PYTHON_FRAMES=1 timeout 200 "$G" run --dir "$d" --no-report -- "${cmd[@]}" > "$WORK/$name.out" 2>&1
	rc=$?
	"$G" report --color never "$d" > "$WORK/$name.report.txt" 2>&1
	tar -C "$WORK" -czf "$OUT/$name.tar.gz" "$name"
	{
		echo "## $name: exit $rc, $(( $(date +%s) - t0 )) s, $(ls "$d" | wc -l) traces, $(du -sh "$d" | cut -f1) on disk, $(du -h "$OUT/$name.tar.gz" | cut -f1) packed"
		echo
		echo '```'
		tail -3 "$WORK/$name.out"
		echo '```'
		echo
		echo '```'
		head -c 12000 "$WORK/$name.report.txt"
		echo '```'
		echo
	} >> "$md"
	echo "$name: exit $rc, $(du -h "$OUT/$name.tar.gz" | cut -f1)"
done
[ "${COST:-1}" = 0 ] && exit 0
# What a Python frame costs: resnet_loader's stacks with and without
# GPUSPY_PYTHON_FRAMES, interleaved, as the library times them (the trace
# header's stacks_ns over stacks_taken).
{
	echo "## Stack cost with and without Python frames (resnet_loader, 3 runs each, interleaved)"
	echo
	echo "| run | GPUSPY_PYTHON_FRAMES | stacks | us a stack |"
	echo "| --- | --- | --- | --- |"
} >> "$md"
for i in 1 2 3; do
	for pf in 0 1; do
		d="$WORK/cost-$pf-$i"
		GPUSPY_PYTHON_FRAMES=$pf timeout 200 "$G" run --dir "$d" --no-report -- python3 "$Z/resnet_loader.py" > /dev/null 2>&1
		"$G" dump "$(ls "$d"/*.gspy | head -1)" | head -1 | python3 -c "import json,sys; h=json.load(sys.stdin); print('| $i | $pf | %d | %.2f |' % (h['stacks_taken'], h['stacks_ns'] / max(1, h['stacks_taken']) / 1e3))" >> "$md"
	done
done
