#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes tests/golden/gpu.jsonl: a small hand-made trace with GPU-side
(CUPTI) records, so that the report's GPU arithmetic is checked in CI where
there is no GPU. Two steps of: data (an H2D pageable copy, GPU idle while the
host prepares data), forward (2 kernels), then a graph launch running 3
kernels. Times in ns from 1,000,000,000."""
import json

T0 = 1_000_000_000
TID = 100
lines = [{"type": "process", "format_version": 1, "pid": 7, "ppid": 1, "host": "golden", "rank": -1,
          "local_rank": -1, "command": "gpu-golden", "events": 0, "dropped": 0, "clean_exit": True,
          "state": "exited", "truncated": False, "threads": 2, "start_realtime_ns": 0,
          "start_ns": T0, "gpu_timing": "cupti", "device_mem": [85899345920], "clock": "monotonic"}]
corr = 0


def host(kind, api, start, end, **kw):
    lines.append(dict(type="event", kind=kind, api=api, tid=TID, start_ns=T0 + start, end_ns=T0 + end,
                      result=0, device=0, **kw))


def launch(start, name, **kw):
    global corr
    corr += 1
    host("launch", "cuLaunchKernel", start, start + 2000, name=name, grid=[1, 1, 1], block=[32, 1, 1],
         stream=0, async_=None, corr=corr, **kw)
    return corr


def gpu(kind, api, start, end, c, **kw):
    lines.append(dict(type="event", kind=kind, api=api, tid=200, start_ns=T0 + start, end_ns=T0 + end,
                      result=0, device=0, stream=7, corr=c, **kw))


events = []
t = 0
for step in range(2):
    b = step * 1_000_000
    host("phase_begin", "torch_phase_begin", b, b, name="data", step=step)
    corr += 1
    c = corr
    host("copy", "cudaMemcpyAsync", b + 300_000, b + 310_000, bytes=1 << 20, dir="h2d", host_mem="pageable",
         stream=0, async_=True, corr=c)
    gpu("gpu_copy", "cupti_memcpy", b + 305_000, b + 325_000, c, bytes=1 << 20, dir="h2d", host_mem="pageable")
    host("phase_end", "torch_phase_end", b + 400_000, b + 400_000, name="data", step=step)
    host("phase_begin", "torch_phase_begin", b + 400_000, b + 400_000, name="forward", step=step)
    c1 = launch(b + 410_000, "gemm")
    gpu("gpu_kernel", "cupti_kernel", b + 415_000, b + 515_000, c1, name="gemm")
    c2 = launch(b + 420_000, "relu")
    gpu("gpu_kernel", "cupti_kernel", b + 515_000, b + 525_000, c2, name="relu")
    corr += 1
    cg = corr
    host("launch", "cuGraphLaunch", b + 600_000, b + 605_000, graph=9, stream=0, corr=cg)
    for k in range(3):
        gpu("gpu_kernel", "cupti_kernel", b + 700_000 + k * 50_000, b + 740_000 + k * 50_000, cg,
            name="graph_kernel", graph_id=9)
    host("phase_end", "torch_phase_end", b + 900_000, b + 900_000, name="forward", step=step)

for l in lines:
    if "async_" in l:
        v = l.pop("async_")
        if v:
            l["async"] = True
lines[1:] = sorted(lines[1:], key=lambda e: e["start_ns"])
lines[0]["events"] = len(lines) - 1
with open("tests/golden/gpu.jsonl", "w") as f:
    for l in lines:
        f.write(json.dumps(l, separators=(",", ":")) + "\n")
