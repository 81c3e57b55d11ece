#!/bin/bash
# SPDX-License-Identifier: MIT
# Instructions per training step that gpuspy's PyTorch helper adds, counted
# by callgrind (repeatable, unlike times): bench/mlp_cpu.py under gpuspy with
# the helper (default: its per-call work in libgpuspy's builtins), with the
# helper's Python version (bench/helper_probe, GPUSPY_PROBE=python) and
# without the helper (GPUSPY_TORCH=0), each run for 20 and for 120 steps;
# per step = (count at 120 - count at 20) / 100, which takes the start-up
# (importing torch) out. Needs Debian's CPU PyTorch (python3-torch) and
# valgrind; ~5 minutes on 2 cores. From the repository root, after make:
#   bash bench/helper_callgrind.sh
set -eu
PY=${PYTHON:-/usr/bin/python3}
export PYTHONHASHSEED=0 # the same dict layouts from run to run
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
one() { # name VAR=VAL steps
	env GPUSPY_DIR=$T "$2" PYTHONPATH="$PWD/bench/helper_probe" LD_PRELOAD=$PWD/lib/libgpuspy.so \
		valgrind --tool=callgrind --callgrind-out-file=$T/cg.$1.$3 "$PY" bench/mlp_cpu.py "$3" \
		2> "$T/log.$1.$3" > /dev/null
	awk '/Collected/ {print $4}' "$T/log.$1.$3" > "$T/n.$1.$3"
}
for m in on:GPUSPY_PROBE= python:GPUSPY_PROBE=python off:GPUSPY_TORCH=0; do
	one "${m%%:*}" "${m#*:}" 20 & one "${m%%:*}" "${m#*:}" 120 & wait
done
per() { echo $((($(cat $T/n.$1.120) - $(cat $T/n.$1.20)) / 100)); }
on=$(per on) py=$(per python) off=$(per off)
echo "instructions per step: helper (builtins) $on, its Python version $py, off (GPUSPY_TORCH=0) $off;" \
	"added: builtins $((on - off)), Python version $((py - off))"
