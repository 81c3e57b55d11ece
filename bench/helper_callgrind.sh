#!/bin/bash
# SPDX-License-Identifier: MIT
# Instructions per training step that gpuspy's PyTorch helper adds, counted
# by callgrind (repeatable, unlike times): bench/mlp_cpu.py under gpuspy with
# the helper (default) and without (GPUSPY_TORCH=0), each run for 20 and for
# 120 steps; per step = (count at 120 - count at 20) / 100, which takes the
# start-up (importing torch) out. Needs Debian's CPU PyTorch (python3-torch)
# and valgrind; ~3 minutes on 2 cores. From the repository root, after make:
#   bash bench/helper_callgrind.sh
set -eu
PY=${PYTHON:-/usr/bin/python3}
export PYTHONHASHSEED=0 # the same dict layouts from run to run
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
one() { # helper(1|0) steps
	GPUSPY_DIR=$T GPUSPY_TORCH=$1 LD_PRELOAD=$PWD/lib/libgpuspy.so \
		valgrind --tool=callgrind --callgrind-out-file=$T/cg.$1.$2 "$PY" bench/mlp_cpu.py "$2" \
		2> "$T/log.$1.$2" > /dev/null
	awk '/Collected/ {print $4}' "$T/log.$1.$2" > "$T/n.$1.$2"
}
one 1 20 & one 0 20 & wait
one 1 120 & one 0 120 & wait
per() { echo $((($(cat $T/n.$1.120) - $(cat $T/n.$1.20)) / 100)); }
on=$(per 1) off=$(per 0)
echo "instructions per step: helper on $on, off (GPUSPY_TORCH=0) $off, added $((on - off))"
