#!/bin/bash
# SPDX-License-Identifier: MIT
# Two GPUs (the nvidia-h200-x2 machine): tests/gpu/devices.py traced with
# CUPTI, then check_devices.py: each launch, copy and GPU record on the
# device it ran on, and the report's GPU busy per device. From the
# repository root after `make gpu-carry`:
#   bash tests/gpu/devices_check.sh   (results in $OUT)
. tests/gpu/setup.sh /tmp/gpuspy-devices
nvidia-smi -L > "$OUT/devices-machine.txt" 2>&1
d="$WORK/run"
./tools/gpuspy run --dir "$d" --cupti on --no-report -- python3 tests/gpu/devices.py \
	> "$WORK/stdout" 2> "$WORK/stderr"
echo "devices.py: exit $?; $(tail -1 "$WORK/stdout")" | tee "$OUT/devices.txt"
tail -3 "$WORK/stderr"
f=$(ls "$d"/*.gspy | head -1)
./tools/gpuspy dump "$f" -o "$WORK/dump.jsonl"
./tools/gpuspy report --json "$d" > "$WORK/report.json"
./tools/gpuspy report --color never "$d" > "$OUT/devices.report.txt"
python3 tests/gpu/check_devices.py "$WORK/dump.jsonl" "$WORK/report.json" | tee -a "$OUT/devices.txt"
exit "${PIPESTATUS[0]}"
