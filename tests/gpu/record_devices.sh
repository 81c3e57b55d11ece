#!/bin/bash
# SPDX-License-Identifier: MIT
# The device of every launch, copy and memset that the zoo's JAX step and
# ResNet-18 (DataLoader workers, pinned-memory thread) record, on the H200:
# with one GPU each should be 0 (-1 would be a call whose thread's current
# context gpuspy lost; lib/devices.c caches it per thread). Results:
# $OUT/record_devices.md. From the repository root (carry: tools/gpuspy .gpu):
#   bash tests/gpu/record_devices.sh
. tests/gpu/setup.sh /tmp/gpuspy-record-devices
for p in jax_step resnet_loader; do
	d=$WORK/$p; mkdir -p "$d"
	GPUSPY_DIR=$d LD_PRELOAD=$ROOT/lib/libgpuspy.so python3 tests/gpu/zoo/$p.py > "$d/out.txt" 2>&1 ||
		echo "$p: exit $?"
	for f in "$d"/*.gspy; do tools/gpuspy dump "$f" 2>/dev/null; done > "$d/dump.jsonl"
done
python3 - "$WORK" > "$OUT/record_devices.md" <<'PY'
import collections, json, os, sys
print("| program | kind | device | records |")
print("| --- | --- | --- | --- |")
for p in ("jax_step", "resnet_loader"):
    c = collections.Counter()
    for l in open(os.path.join(sys.argv[1], p, "dump.jsonl")):
        e = json.loads(l)
        if e.get("type") == "event" and e["kind"] in ("launch", "copy", "memset"):
            c[(e["kind"], e.get("device"))] += 1
    for (k, d), n in sorted(c.items(), key=str):
        print(f"| {p} | {k} | {d} | {n} |")
PY
cat "$OUT/record_devices.md"
