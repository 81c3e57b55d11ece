# SPDX-License-Identifier: MIT
"""Checks tests/gpu/rt_families.cu's traces: STDOUT (its output), then
SHARED.jsonl and STATIC.jsonl (gpuspy dump of the shared- and the
static-cudart build). Each call one event, in order, with its kind, bytes,
memory kind, direction and host memory; the shared build under the runtime
names, the static one under whichever driver calls the runtime made
(listed). Exit 1 on any failure."""
import json
import re
import sys

failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what)
    failed += not ok


out = open(sys.argv[1]).read()
m = re.search(r"host function ran 1 time\(s\), pitch (\d+)", out)
check(m is not None, f"the program ran: {out.strip()!r}")
pitch = int(m.group(1)) if m else 0
# (kind, runtime api, bytes, mem, dir, host_mem); None: not checked
want = [("alloc", "cudaMalloc", 65536, "device", None, None),
        ("alloc", "cudaMallocPitch", pitch * 10, "device", None, None),
        ("alloc", "cudaMallocManaged", 8192, "managed", None, None),
        ("alloc", "cudaMallocAsync", 32768, "device", None, None),
        ("alloc", "cudaMallocFromPoolAsync", 16384, "device", None, None),
        ("alloc", "cudaHostAlloc", 4096, "pinned", None, None),
        ("alloc", "cudaHostRegister", 8192, "pinned", None, None),
        ("copy", "cudaMemcpyPeer", 300, None, "d2d", None),
        ("copy", "cudaMemcpyPeerAsync", 200, None, "d2d", None),
        ("copy", "cudaMemcpy2D", 3000, None, "h2d", "pageable"),
        ("copy", "cudaMemcpy2DAsync", 4000, None, "d2h", "pinned"),
        ("memset", "cudaMemsetAsync", 4096, None, None, None),
        ("launch", "cudaLaunchCooperativeKernel", None, None, None, None),
        ("launch", "cudaLaunchHostFunc", None, None, None, None),
        ("launch", "cudaGraphLaunch", None, None, None, None),
        ("sync", "cudaStreamWaitEvent", None, None, None, None),
        ("sync", "cudaEventSynchronize", None, None, None, None),
        ("sync", "cuCtxSynchronize_v2", None, None, None, None),
        ("sync", "cudaStreamSynchronize", None, None, None, None),
        ("free", "cudaHostUnregister", 8192, "pinned", None, None),
        ("free", "cudaFreeHost", 4096, "pinned", None, None),
        ("free", "cudaFreeAsync", 16384, "device", None, None),
        ("free", "cudaFreeAsync", 32768, "device", None, None),
        ("sync", "cudaStreamSynchronize", None, None, None, None),
        ("free", "cudaFree", 8192, "managed", None, None),
        ("free", "cudaFree", pitch * 10, "device", None, None),
        ("free", "cudaFree", 65536, "device", None, None)]


def shape(e):
    return (e["kind"], e.get("bytes") if e["kind"] not in ("launch", "sync") else None,
            e.get("mem"), e.get("dir"), e.get("host_mem"))


for path, route in ((sys.argv[2], "shared"), (sys.argv[3], "static")):
    ev = [json.loads(l) for l in open(path)]
    ev = [e for e in ev if e["type"] == "event"]
    # cudaGraphInstantiate reaches the driver's cuGraphInstantiateWithFlags:
    # its graph record (one empty node, which runs nothing) comes first.
    graphs = [(e["api"], e.get("nodes")) for e in ev if e["kind"] == "graph"]
    check(graphs == [("cuGraphInstantiateWithFlags", 0)] and ev[0]["kind"] == "graph",
          f"{route}: the graph's instantiation {graphs}")
    ev = [e for e in ev if e["kind"] != "graph" and not e["kind"].startswith("node_")]
    got = [shape(e) for e in ev]
    exp = [(k, b, mem, d, hm) for k, _, b, mem, d, hm in want]
    check(got == exp, f"{route}: {len(got)} events, each as the program made it"
          + ("" if got == exp else f": got {got}"))
    names = [e["api"] for e in ev]
    if route == "shared":
        check(names == [w[1] for w in want], f"shared: runtime names: {names}")
    else:
        print(f"     static: driver calls {names}")
    launches = [e.get("name") for e in ev if e["kind"] == "launch"]
    check(len(launches) == 3 and "coop_kernel" in (launches[0] or "") and launches[1:] == ["(host function)", "(graph)"],
          f"{route}: launch names {launches}")
sys.exit(1 if failed else 0)
