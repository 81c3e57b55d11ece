#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpuspy tests that need no GPU: the programs in tests/ run against the CUDA
test doubles, with and without libgpuspy preloaded, and their traces (read
back with `gpuspy dump`) must match what each program did, exactly.

Usage: tests/run.py [NAME...]   (runs all tests, or those whose name contains NAME)
Exit 0 when all pass; the last line is "N passed, N failed".
"""
from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from harness import TESTS, Skip
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import time

# ---- expected traces ---------------------------------------------------------

def rt_expected(route, ptds):
    """prog_rt's calls: route 'rt' records runtime names, 'drv' driver names."""
    def S(n):
        return n + "_ptsz" if ptds else n

    def D(n):
        return n + "_ptds" if ptds else n
    if route == "rt":
        a = dict(malloc="cudaMalloc", mallochost="cudaMallocHost", h2d=D("cudaMemcpy"),
                 h2da=S("cudaMemcpyAsync"), d2h=D("cudaMemcpy"), d2ha=S("cudaMemcpyAsync"),
                 d2d=D("cudaMemcpy"), uni=D("cudaMemcpy"), memset=D("cudaMemset"),
                 lk=S("cudaLaunchKernel"), lk2=S("__cudaLaunchKernel"),
                 lkex=S("cudaLaunchKernelExC"), ss=S("cudaStreamSynchronize"),
                 ds="cudaDeviceSynchronize", free="cudaFree", freehost="cudaFreeHost")
    else:
        a = dict(malloc="cuMemAlloc_v2", mallochost="cuMemAllocHost_v2",
                 h2d=D("cuMemcpyHtoD_v2"), h2da=S("cuMemcpyHtoDAsync_v2"),
                 d2h=D("cuMemcpyDtoH_v2"), d2ha=S("cuMemcpyDtoHAsync_v2"),
                 d2d=D("cuMemcpyDtoD_v2"), uni=D("cuMemcpy"), memset=D("cuMemsetD8_v2"),
                 lk=S("cuLaunchKernel"), lk2=S("cuLaunchKernel"), lkex=S("cuLaunchKernelEx"),
                 ss=S("cuStreamSynchronize"), ds="cuCtxSynchronize", free="cuMemFree_v2",
                 freehost="cuMemFreeHost")
    return [
        E("alloc", a["malloc"], 1 << 20, mem="device"),
        E("alloc", a["mallochost"], 4096, mem="pinned"),
        E("copy", a["h2d"], 8192, "h2d", "pageable"),
        E("copy", a["h2da"], 4096, "h2d", "pinned"),
        E("copy", a["d2h"], 2048, "d2h", "pageable"),
        E("copy", a["d2ha"], 1024, "d2h", "pinned"),
        E("copy", a["d2d"], 512, "d2d"),
        E("copy", a["uni"], 256, "h2d", "pageable"),
        E("copy", a["uni"], 128, "d2h", "pinned"),
        E("memset", a["memset"], 4096),
        E("launch", a["lk"], name="scale_kernel", grid=[4, 2, 1], block=[128, 1, 1]),
        E("launch", a["lk2"], name="scale_kernel", grid=[8, 1, 1], block=[64, 1, 1]),
        E("launch", a["lkex"], name="add_kernel", grid=[2, 2, 2], block=[32, 4, 1]),
        E("sync", a["ss"]),
        E("sync", a["ds"]),
        E("copy", a["d2h"], 16, "d2h", "pageable"),
        E("free", a["free"], 1 << 20, mem="device"),
        E("free", a["freehost"], 4096, mem="pinned"),
    ]


def rt_more_expected(route, ptds):
    """prog_rt_more's calls: route 'rt' records runtime names, 'drv' the
    driver calls the static runtime makes through cuGetProcAddress."""
    def S(n):
        return n + "_ptsz" if ptds else n

    def D(n):
        return n + "_ptds" if ptds else n
    if route == "rt":
        a = dict(malloc="cudaMalloc", pitch="cudaMallocPitch", managed="cudaMallocManaged",
                 malloc_async=S("cudaMallocAsync"), pool=S("cudaMallocFromPoolAsync"),
                 hostalloc="cudaHostAlloc", register="cudaHostRegister", peer="cudaMemcpyPeer",
                 peer_async="cudaMemcpyPeerAsync", c2d=D("cudaMemcpy2D"), c2d_async=S("cudaMemcpy2DAsync"),
                 memset_async=S("cudaMemsetAsync"), coop=S("cudaLaunchCooperativeKernel"),
                 hostfn=S("cudaLaunchHostFunc"), graph=S("cudaGraphLaunch"), wait=S("cudaStreamWaitEvent"),
                 event="cudaEventSynchronize", unregister="cudaHostUnregister", freehost="cudaFreeHost",
                 free_async=S("cudaFreeAsync"), free="cudaFree")
    else:
        a = dict(malloc="cuMemAlloc_v2", pitch="cuMemAllocPitch_v2", managed="cuMemAllocManaged",
                 malloc_async=S("cuMemAllocAsync"), pool=S("cuMemAllocFromPoolAsync"),
                 hostalloc="cuMemHostAlloc", register="cuMemHostRegister_v2", peer="cuMemcpyPeer",
                 peer_async="cuMemcpyPeerAsync", c2d=D("cuMemcpy2DUnaligned_v2"), c2d_async=S("cuMemcpy2DAsync_v2"),
                 memset_async=S("cuMemsetD8Async"), coop=S("cuLaunchCooperativeKernel"),
                 hostfn=S("cuLaunchHostFunc"), graph=S("cuGraphLaunch"), wait=S("cuStreamWaitEvent"),
                 event="cuEventSynchronize", unregister="cuMemHostUnregister", freehost="cuMemFreeHost",
                 free_async=S("cuMemFreeAsync"), free="cuMemFree_v2")
    return [
        E("alloc", a["malloc"], 65536, mem="device"),
        E("alloc", a["pitch"], 1024 * 10, mem="device"),  # the double's pitch for 1000 bytes: 1024
        E("alloc", a["managed"], 8192, mem="managed"),
        E("alloc", a["malloc_async"], 32768, mem="device"),
        E("alloc", a["pool"], 16384, mem="device"),
        E("alloc", a["hostalloc"], 4096, mem="pinned"),
        E("alloc", a["register"], 8192, mem="pinned"),
        E("copy", a["peer"], 300, "p2p"),
        E("copy", a["peer_async"], 200, "d2d"),
        E("copy", a["c2d"], 1000 * 3, "h2d", "pageable"),
        E("copy", a["c2d_async"], 800 * 5, "d2h", "pinned"),
        E("memset", a["memset_async"], 4096),
        E("launch", a["coop"], name="coop_kernel", grid=[6, 1, 1], block=[64, 1, 1]),
        E("launch", a["hostfn"], name="(host function)"),
        E("launch", a["graph"], name="(graph)"),
        E("sync", a["wait"]),
        E("sync", a["event"]),
        E("sync", "cuCtxSynchronize_v2"),  # through cudaGetDriverEntryPoint's pointer
        E("free", a["unregister"], 8192, mem="pinned"),
        E("free", a["freehost"], 4096, mem="pinned"),
        E("free", a["free_async"], 16384, mem="device"),
        E("free", a["free_async"], 32768, mem="device"),
        E("free", a["free"], 8192, mem="managed"),
        E("free", a["free"], 1024 * 10, mem="device"),
        E("free", a["free"], 65536, mem="device"),
    ]


def drv_expected(ptds):
    def S(n):
        return n + "_ptsz" if ptds else n

    def D(n):
        return n + "_ptds" if ptds else n
    return [
        E("alloc", "cuMemAlloc_v2", 65536, mem="device"),
        E("alloc", "cuMemAllocPitch_v2", 1024 * 10, mem="device"),
        E("alloc", "cuMemAllocManaged", 8192, mem="managed"),
        E("alloc", S("cuMemAllocAsync"), 32768, mem="device"),
        E("alloc", S("cuMemAllocFromPoolAsync"), 16384, mem="device"),
        E("alloc", "cuMemHostAlloc", 4096, mem="pinned"),
        E("alloc", "cuMemAllocHost_v2", 2048, mem="pinned"),
        E("alloc", "cuMemHostRegister_v2", 8192, mem="pinned"),
        E("alloc", "cuMemCreate", 2 << 20, mem="device"),
        E("map", "cuMemMap", 2 << 20, mem="device"),
        E("copy", D("cuMemcpy"), 1000, "h2d", "pageable"),
        E("copy", S("cuMemcpyAsync"), 500, "d2h", "pinned"),
        E("copy", D("cuMemcpyPeer"), 300, "p2p"),
        E("copy", S("cuMemcpyPeerAsync"), 200, "d2d"),
        E("copy", D("cuMemcpyHtoD_v2"), 4096, "h2d", "pinned"),
        E("copy", D("cuMemcpyDtoH_v2"), 2048, "d2h", "pageable"),
        E("copy", D("cuMemcpyDtoD_v2"), 1024, "d2d"),
        E("copy", S("cuMemcpyHtoDAsync_v2"), 2048, "h2d", "pinned"),
        E("copy", S("cuMemcpyDtoHAsync_v2"), 512, "d2h", "pageable"),
        E("copy", S("cuMemcpyDtoDAsync_v2"), 256, "d2d"),
        E("copy", S("cuMemcpyDtoHAsync_v2"), 8, "h2h", "pageable"),
        E("copy", D("cuMemcpy2D_v2"), 1000, "h2d", "pageable"),
        E("copy", D("cuMemcpy2DUnaligned_v2"), 1000, "h2d", "pageable"),
        E("copy", S("cuMemcpy2DAsync_v2"), 1000, "h2d", "pinned"),
        E("copy", D("cuMemcpy3D_v2"), 512, "d2h", "pageable"),
        E("copy", S("cuMemcpy3DAsync_v2"), 512, "d2h", "pageable"),
        E("copy", D("cuMemcpy3DPeer"), 64, "p2p"),
        E("copy", S("cuMemcpy3DPeerAsync"), 64, "p2p"),
        E("copy", S("cuMemcpyBatchAsync"), 128, "h2d", "pinned"),
        E("copy", S("cuMemcpyBatchAsync_v2"), 128, "h2d", "pinned"),
        E("memset", D("cuMemsetD8_v2"), 100),
        E("memset", D("cuMemsetD16_v2"), 200),
        E("memset", D("cuMemsetD32_v2"), 400),
        E("memset", D("cuMemsetD2D8_v2"), 30),
        E("memset", D("cuMemsetD2D16_v2"), 60),
        E("memset", D("cuMemsetD2D32_v2"), 120),
        E("memset", S("cuMemsetD8Async"), 7),
        E("memset", S("cuMemsetD16Async"), 14),
        E("memset", S("cuMemsetD32Async"), 28),
        E("memset", S("cuMemsetD2D8Async"), 10),
        E("memset", S("cuMemsetD2D16Async"), 20),
        E("memset", S("cuMemsetD2D32Async"), 40),
        E("launch", S("cuLaunchKernel"), name="gemm_kernel", grid=[10, 20, 1], block=[256, 1, 1]),
        E("launch", S("cuLaunchKernelEx"), name="ex_kernel", grid=[3, 1, 1], block=[32, 8, 2]),
        E("launch", S("cuLaunchCooperativeKernel"), name="coop_kernel", grid=[6, 1, 1], block=[64, 1, 1]),
        E("launch", S("cuLaunchHostFunc"), name="(host function)"),
        E("launch", S("cuGraphLaunch"), name="(graph)"),
        E("sync", S("cuStreamSynchronize")),
        E("sync", "cuCtxSynchronize"),
        E("sync", "cuCtxSynchronize_v2"),
        E("sync", "cuEventSynchronize"),
        E("sync", S("cuStreamWaitEvent")),
        E("unmap", "cuMemUnmap", 2 << 20, mem="device"),
        E("free", "cuMemRelease", 2 << 20, mem="device"),
        E("free", "cuMemHostUnregister", 8192, mem="pinned"),
        E("free", "cuMemFreeHost", 2048, mem="pinned"),
        E("free", "cuMemFreeHost", 4096, mem="pinned"),
        E("free", S("cuMemFreeAsync"), 16384, mem="device"),
        E("free", S("cuMemFreeAsync"), 32768, mem="device"),
        E("free", "cuMemFree_v2", 8192, mem="managed"),
        E("free", "cuMemFree_v2", 10240, mem="device"),
        E("free", "cuMemFree_v2", 65536, mem="device"),
    ]


# ---- tests -------------------------------------------------------------------

@test
def route1_runtime_exported_symbols(tmp):
    same_output("prog_rt_dyn", tmp)
    proc, ev = only_trace(tmp)
    compare(ev, rt_expected("rt", False))
    check(all(e["result"] == 0 for e in ev), "a call failed")
    check(proc["clean_exit"] is True and proc["dropped"] == 0, "process line wrong")


@test
def route1_runtime_per_thread_variants(tmp):
    same_output("prog_rt_dyn_ptds", tmp)
    _, ev = only_trace(tmp)
    compare(ev, rt_expected("rt", True))
    check(all(e.get("per_thread_stream") for e in ev if e["api"].endswith(("_ptsz", "_ptds"))),
          "per_thread_stream flag missing")


@test
def nested_runtime_driver_calls_recorded_once(tmp):
    # The runtime double calls the driver through wrappers it got from
    # cuGetProcAddress: each runtime call must still be one event.
    run("prog_rt_dyn", tmp=tmp)
    _, ev = only_trace(tmp)
    check(len(ev) == 18, f"{len(ev)} events for 18 runtime calls")
    check(not any(e["api"].startswith("cu") and not e["api"].startswith("cuda") for e in ev),
          "a nested driver call was recorded")


@test
def route3_static_runtime_get_proc_address_v12(tmp):
    same_output("prog_rt_static", tmp)
    _, ev = only_trace(tmp)
    compare(ev, rt_expected("drv", False))


@test
def route3_static_runtime_get_proc_address_v11_abi(tmp):
    same_output("prog_rt_static", tmp, env={"FAKECUDART_GPA_VERSION": "11030"})
    _, ev = only_trace(tmp)
    compare(ev, rt_expected("drv", False))


@test
def route3_static_runtime_per_thread_flags(tmp):
    same_output("prog_rt_static_ptds", tmp)
    _, ev = only_trace(tmp)
    compare(ev, rt_expected("drv", True))


@test
def runtime_entry_points_beyond_prog_rt(tmp):
    """prog_rt_more (every runtime entry point prog_rt does not call) in its
    four builds: exported runtime names through the shared runtime (route
    1), the driver calls behind them through the static runtime's
    cuGetProcAddress (route 3), with and without PTDS; one event a call
    (none for the nested driver call), the program's output unchanged."""
    for prog, route, ptds in (("prog_rt_more_dyn", "rt", False), ("prog_rt_more_dyn_ptds", "rt", True),
                              ("prog_rt_more_static", "drv", False), ("prog_rt_more_static_ptds", "drv", True)):
        p = same_output(prog, tmp)
        check("host function ran 1 time(s), pitch 1024" in p.stdout, f"{prog}: {p.stdout[-200:]!r}")
        proc, ev = only_trace(tmp)
        compare(ev, rt_more_expected(route, ptds))
        check(all(e["result"] == 0 for e in ev) and proc["dropped"] == 0, f"{prog}: a call failed")
        for t in traces(tmp):
            os.unlink(os.path.join(tmp, t))


@test
def streams_and_map_handles(tmp):
    """The stream of every record: prog_drv's stream-ordered calls and
    stream waits on its stream 0x7000, the context and event waits on 0,
    no stream on the others; `async` on each stream-ordered call (not on
    cuStreamSynchronize, which waits); cuMemMap's physical handle as `handle` (the
    record's stream field), not as a stream; prog_rt's calls on 0x5000
    through the runtime, also as per-thread variants."""
    run("prog_drv", tmp=tmp)
    _, ev = only_trace(tmp)
    got = [(e["api"], e.get("stream")) for e in ev if e["kind"] != "map"]
    on_st = {"cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemcpyAsync", "cuMemcpyPeerAsync",
             "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoDAsync_v2", "cuMemcpy2DAsync_v2",
             "cuMemcpy3DAsync_v2", "cuMemcpy3DPeerAsync", "cuMemcpyBatchAsync", "cuMemcpyBatchAsync_v2",
             "cuMemsetD8Async", "cuMemsetD16Async", "cuMemsetD32Async", "cuMemsetD2D8Async", "cuMemsetD2D16Async",
             "cuMemsetD2D32Async", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
             "cuLaunchHostFunc", "cuGraphLaunch", "cuStreamSynchronize", "cuStreamWaitEvent", "cuMemFreeAsync"}
    want = [(e["api"], 0x7000 if e["api"] in on_st else 0 if e["kind"] == "sync" else None)
            for e in ev if e["kind"] != "map"]
    check(got == want and len([a for a, st in got if st == 0x7000]) == 28, f"prog_drv streams {got}")
    asy = [e["api"] for e in ev if e.get("async")]
    check(asy == [a for a, st in got if st == 0x7000 and a != "cuStreamSynchronize"],
          f"stream-ordered calls (async) {asy}")
    m = [e for e in ev if e["kind"] == "map"]
    check(len(m) == 1 and m[0]["handle"] != 0 and "stream" not in m[0], f"map {m}")
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    for prog, sfx in (("prog_rt_dyn", ""), ("prog_rt_dyn_ptds", "_ptsz")):
        run(prog, tmp=tmp)
        _, ev = only_trace(tmp)
        got = [(e["api"], e.get("stream")) for e in ev if "stream" in e]
        want = [(a + sfx, 0x5000) for a in ("cudaMemcpyAsync", "cudaMemcpyAsync", "cudaLaunchKernel",
                                             "__cudaLaunchKernel", "cudaLaunchKernelExC", "cudaStreamSynchronize")]
        check(got == want + [("cudaDeviceSynchronize", 0)], f"{prog} streams {got}")
        os.unlink(os.path.join(tmp, traces(tmp)[0]))


@test
def each_call_on_its_device(tmp):
    """prog_devices: the device of every record follows the thread's
    current context through cuCtxSetCurrent, cuCtxPushCurrent and
    cuCtxPopCurrent (0, then 1 pushed, 0 popped, 1 set); a copy and a free
    take the device their address was allocated on, also on a thread with
    no current context; the memory of both devices in the header. With
    CUPTI, each GPU record on its call's device and both devices busy in
    the report."""
    same_output("prog_devices", tmp)
    proc, ev = only_trace(tmp)
    main = proc["pid"]
    got = [(e["kind"], e["api"], e.get("bytes"), e.get("name"), e["device"], e["tid"] == main) for e in ev]
    want = [("alloc", "cuMemAlloc_v2", 4096, None, 0, True), ("alloc", "cuMemAlloc_v2", 8192, None, 1, True),
            ("memset", "cuMemsetD8_v2", 8192, None, 1, True), ("launch", "cuLaunchKernel", None, "dev1_kernel", 1, True),
            ("alloc", "cuMemAlloc_v2", 2048, None, 0, True), ("launch", "cuLaunchKernel", None, "dev0_kernel", 0, True),
            ("copy", "cuMemcpyDtoH_v2", 1024, None, 1, True), ("copy", "cuMemcpyDtoH_v2", 64, None, 0, False),
            ("memset", "cuMemsetD8_v2", 32, None, 1, False), ("free", "cuMemFree_v2", 2048, None, 0, True),
            ("free", "cuMemFree_v2", 8192, None, 1, True), ("free", "cuMemFree_v2", 4096, None, 0, True)]
    check(got == want, f"events {got}")
    check(proc["device_mem"] == [80 << 30, 80 << 30], f"device_mem {proc['device_mem']}")
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    # With (the double's) CUPTI: each GPU record on its call's device, and
    # the report's GPU busy time on both devices.
    run("prog_devices", tmp=tmp, env={"GPUSPY_CUPTI": "on"})
    g = os.path.join(tmp, traces(tmp)[0])
    _, ev = dump(g)
    calls = {e["corr"]: e for e in ev if "corr" in e and not e["kind"].startswith("gpu_")}
    gpu = [(e["kind"], e["device"], calls[e["corr"]]["device"]) for e in ev if e["kind"].startswith("gpu_")]
    check(gpu == [("gpu_memset", 1, 1), ("gpu_kernel", 1, 1), ("gpu_kernel", 0, 0), ("gpu_copy", 1, 1),
                  ("gpu_copy", 0, 0), ("gpu_memset", 1, 1)], f"GPU records (kind, device, call's device) {gpu}")
    o = report_json(g)
    check([d["device"] for d in o["gpu"]["devices"]] == [0, 1] and all(d["busy_ns"] > 0 for d in o["gpu"]["devices"]),
          f"GPU busy per device {o['gpu']['devices']}")


@test
def route1_driver_every_family(tmp):
    p = same_output("prog_drv", tmp)
    check("host function ran 1 time(s)" in p.stdout, "host function did not run")
    _, ev = only_trace(tmp)
    compare(ev, drv_expected(False))


@test
def route1_driver_every_family_per_thread(tmp):
    same_output("prog_drv_ptds", tmp)
    _, ev = only_trace(tmp)
    compare(ev, drv_expected(True))


@test
def route2_dlsym_and_self_lookup_abis(tmp):
    p = same_output("prog_dlsym", tmp)
    out = p.stdout
    check("cuInit comes from libcuda.so.1" in out, "an unknown name did not pass through untouched")
    check("cuModuleGetFunction comes from libcuda.so.1" in out,
          "an unhooked cuGetProcAddress result was changed")
    check("unknown rc=0 ptr=NULL status=1" in out, "a missing symbol did not come back as NULL")
    _, ev = only_trace(tmp)
    compare(ev, [
        E("alloc", "cuMemAlloc_v2", 4096, mem="device"),
        E("launch", "cuLaunchKernel", name="dl_kernel", grid=[2, 1, 1], block=[32, 1, 1]),
        E("sync", "cuStreamSynchronize"),
        E("memset", "cuMemsetD32_v2", 40),
        E("copy", "cuMemcpyDtoH_v2_ptds", 64, "d2h", "pageable"),
        E("copy", "cuMemcpyBatchAsync", 48, "h2d", "pageable"),
        E("copy", "cuMemcpyBatchAsync_v2", 48, "h2d", "pageable"),
        E("free", "cuMemFree_v2", 4096, mem="device"),  # via cudaGetDriverEntryPointByVersion
    ])


@test
def injected_errors_come_back_unchanged(tmp):
    env = {"FAKECUDA_FAIL": "cuMemcpyHtoD_v2:1,cuLaunchKernel:98,cuStreamSynchronize:700"}
    p = same_output("prog_rt_static", tmp, env=env)
    check("rc=98 errno=1234" in p.stdout and "rc=700 errno=1234" in p.stdout,
          "injected errors not seen by the program")
    _, ev = only_trace(tmp)
    res = {(e["api"], e.get("bytes"), e.get("grid", [0])[0]): e["result"] for e in ev}
    check(res[("cuMemcpyHtoD_v2", 8192, 0)] == 1, "HtoD result not recorded")
    check(res[("cuLaunchKernel", None, 4)] == 98 and res[("cuLaunchKernel", None, 8)] == 98,
          "launch result not recorded")
    check(res[("cuStreamSynchronize", None, 0)] == 700, "sync result not recorded")
    check(res[("cuMemcpyHtoDAsync_v2", 4096, 0)] == 0, "an uninjected call failed")


@test
def injected_out_of_memory(tmp):
    env = {"FAKECUDA_FAIL": "cuMemAlloc_v2:2"}
    p = same_output("prog_rt_dyn", tmp, env=env)
    check("allocation failed" in p.stdout, "the program did not see the failure")
    _, ev = only_trace(tmp)
    check(ev[0]["api"] == "cudaMalloc" and ev[0]["result"] == 2 and ev[0]["addr"] == 0,
          f"failed allocation recorded wrongly: {ev[0]}")


@test
def threads_8_recorded_plus_dropped_equals_issued(tmp):
    run("prog_threads", ["8", "40000"], tmp=tmp, env={"GPUSPY_BUFFER_MB": "1"})
    proc, ev = only_trace(tmp)
    check(proc["dropped"] > 0, "a 1 MiB buffer should have dropped events")
    check(len(ev) + proc["dropped"] == 320000,
          f"recorded {len(ev)} + dropped {proc['dropped']} != issued 320000")
    check(proc["events"] == len(ev), "process line's event count is wrong")


@test
def threads_8_nothing_dropped_with_room(tmp):
    run("prog_threads", ["8", "10000"], tmp=tmp)
    proc, ev = only_trace(tmp)
    check(proc["dropped"] == 0 and len(ev) == 80000, f"{len(ev)} events, {proc['dropped']} dropped")
    check(proc["threads"] == 8, f"{proc['threads']} threads recorded")
    per = {}
    for e in ev:
        per[e["tid"]] = per.get(e["tid"], 0) + 1
    check(sorted(per.values()) == [10000] * 8, f"per-thread counts {sorted(per.values())}")
    starts = [e["start_ns"] for e in ev]
    check(starts == sorted(starts), "events are not in start-time order")


@test
def sigkill_keeps_every_committed_event(tmp):
    run("prog_kill", ["5000"], tmp=tmp, expect_rc=-9)
    proc, ev = only_trace(tmp)
    check(proc["clean_exit"] is False and proc["state"] == "running or killed",
          f"state {proc['state']}")
    check(len(ev) == 5000, f"{len(ev)} of 5000 events survived SIGKILL")
    check([e["grid"][0] for e in ev] == [(i % 1000) + 1 for i in range(5000)],
          "events out of order or altered")


@test
def fork_child_writes_its_own_file(tmp):
    p = run("prog_fork", tmp=tmp)
    parent, child = [int(x) for x in p.stdout.split()[1::2]]
    files = traces(tmp)
    check(len(files) == 2, f"expected two trace files, found {files}")
    by_pid = {}
    for f in files:
        proc, ev = dump(os.path.join(tmp, f))
        by_pid[proc["pid"]] = (proc, ev)
    check(set(by_pid) == {parent, child}, f"pids {set(by_pid)} != {parent, child}")
    pe = [e["kind"] for e in by_pid[parent][1]]
    check(pe == ["alloc"] * 3 + ["memset"] * 2, f"parent events {pe}")
    ce = by_pid[child][1]
    check([e["name"] for e in ce] == ["child_kernel"] * 5, f"child events {ce}")
    check(by_pid[child][0]["ppid"] == parent, "child's ppid is wrong")


@test
def disabled_records_nothing(tmp):
    same_output("prog_rt_dyn", tmp, env={"GPUSPY_DISABLE": "1"})
    check(traces(tmp) == [], "GPUSPY_DISABLE=1 still wrote a trace")


@test
def no_cuda_use_no_file(tmp):
    e = dict(os.environ, LD_PRELOAD=PRELOAD_PREFIX + LIB, GPUSPY_DIR=tmp)
    p = subprocess.run(["/bin/sh", "-c", "echo hello"], env=e, capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.stdout == "hello\n" and p.returncode == 0, "a non-CUDA program changed")
    check(traces(tmp) == [], "a process without CUDA calls wrote a trace")


@test
def rank_in_file_name(tmp):
    run("prog_dlsym", tmp=tmp, env={"RANK": "3", "LOCAL_RANK": "1"})
    t = traces(tmp)
    check(len(t) == 1 and t[0].endswith("-r3.gspy"), f"file name {t}")
    proc, _ = dump(os.path.join(tmp, t[0]))
    check(proc["rank"] == 3 and proc["local_rank"] == 1, "rank not in the header")


@test
def dump_format_types(tmp):
    run("prog_drv", tmp=tmp)
    t = traces(tmp)[0]
    p = subprocess.run([GPUSPY, "dump", os.path.join(tmp, t)], capture_output=True, text=True)
    first = json.loads(p.stdout.splitlines()[0])
    for k in ("format_version", "pid", "host", "rank", "command", "dropped", "clean_exit"):
        check(k in first, f"process line lacks {k}")
    check(first["format_version"] == 2 and "prog_drv" in first["command"], "process line values")
    for line in p.stdout.splitlines()[1:]:
        e = json.loads(line)
        if e["type"] == "stack":  # {"type": "stack", "id": N, "frames": [strings]}
            check(isinstance(e["id"], int) and e["frames"] and all(isinstance(f, str) for f in e["frames"]),
                  f"stack line: {e}")
            continue
        for k in ("kind", "api", "tid", "start_ns", "end_ns", "result"):
            check(k in e, f"event lacks {k}: {e}")
        for k in ("start_ns", "end_ns", "result", "tid"):
            check(isinstance(e[k], int), f"{k} is not an integer: {e}")
        check(e["end_ns"] >= e["start_ns"], "end before start")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


@test
def reader_rejects_bad_files(tmp):
    run("prog_dlsym", tmp=tmp)
    good_path = os.path.join(tmp, traces(tmp)[0])
    good = open(good_path, "rb").read()
    cases = {
        "empty": (b"", "empty file"),
        "short": (good[:100], "truncated header"),
        "magic": (b"NOTGSPY!" + good[8:8192], "bad magic"),
        "unfinished": (bytes(8192), "before gpuspy finished creating the file"),
        "newer": (good[:8] + (99).to_bytes(4, "little") + good[12:8192], "newer"),
        "sizes": (good[:16] + (12345).to_bytes(4, "little") + good[20:8192], "corrupt header"),
    }
    for name, (data, what) in cases.items():
        path = os.path.join(tmp, f"bad-{name}.gspy")
        write(path, data)
        p = subprocess.run([GPUSPY, "dump", path], capture_output=True, text=True, timeout=10)
        err = p.stderr.strip()
        check(p.returncode != 0, f"{name}: exit 0")
        check(len(err.splitlines()) == 1 and err.startswith("gpuspy: error: ") and path in err
              and what in err, f"{name}: message {err!r}")
    # A file cut inside its records yields the complete ones and says so.
    cut = os.path.join(tmp, "cut.gspy")
    hdr_end = 4096 + STRTAB
    write(cut, good[:hdr_end + 64 + 30])  # inside the first chunk's packed records
    p = subprocess.run([GPUSPY, "dump", cut], capture_output=True, text=True, timeout=10)
    whole = [l for l in subprocess.run([GPUSPY, "dump", good_path], capture_output=True,
                                       text=True).stdout.splitlines() if '"type":"event"' in l]
    got = [l for l in p.stdout.splitlines() if '"type":"event"' in l]
    check(p.returncode == 0 and 1 <= len(got) < len(whole) and got == whole[:len(got)],
          f"cut file: {len(got)} of {len(whole)} events, not a prefix: {p.stdout!r}")
    check("truncated" in p.stderr, "cut file not reported as truncated")


def report_json(*paths, expect_rc=0):
    p = subprocess.run([GPUSPY, "report", "--json", *paths], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=ROOT)
    check(p.returncode == expect_rc, f"report exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def report_text(*paths):
    p = subprocess.run([GPUSPY, "report", "--color", "never", *paths], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=ROOT)
    check(p.returncode == 0, f"report exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def phase_event(begin, t, name, step):
    """A phase_begin or phase_end event of thread 7 at t, for write_jsonl."""
    return {"kind": "phase_begin" if begin else "phase_end", "api": "gpuspy_phase_push" if begin
            else "gpuspy_phase_pop", "tid": 7, "start_ns": t, "end_ns": t, "result": 0, "device": 0,
            "name": name, "step": step}


def write_jsonl(path, events, timing="none", threads=1, frames=None):
    """A made-up trace in the dump's JSON Lines form: a process (pid 7)
    with GPU timing `timing`, its stacks ({id: [frames]}) and its events
    (dicts without "type")."""
    proc = {"type": "process", "format_version": 2, "pid": 7, "ppid": 1, "host": "vm", "rank": -1,
            "local_rank": -1, "command": "t", "events": len(events), "dropped": 0, "mode": "drop",
            "overwritten": 0, "clean_exit": True, "state": "exited", "truncated": False, "record_bytes": 0,
            "used_bytes": 0, "threads": threads, "start_realtime_ns": 1, "start_ns": 1000, "gpu_timing": timing,
            "device_mem": [1 << 30], "clock": "tsc"}
    lines = [json.dumps(proc)]
    lines += [json.dumps({"type": "stack", "id": k, "frames": v}) for k, v in (frames or {}).items()]
    lines += [json.dumps(dict(type="event", **e)) for e in events]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


@test
def golden_reports(tmp):
    gold = os.path.join(ROOT, "tests", "golden")
    for f in sorted(os.listdir(gold)):
        if not f.endswith(".jsonl"):
            continue
        rel = os.path.join("tests", "golden", f)
        for args, ext in ((["--color", "never"], ".report.txt"), (["--json"], ".report.json")):
            p = subprocess.run([GPUSPY, "report", *args, rel], capture_output=True, text=True,
                               timeout=TIMEOUT, cwd=ROOT)
            check(p.returncode == 0, f"report {rel} failed: {p.stderr.strip()}")
            want = os.path.join(gold, f[:-len(".jsonl")] + ext)
            got = os.path.join(tmp, "got" + ext)
            with open(got, "w") as g:
                g.write(p.stdout)
            d = subprocess.run(["diff", "-u", want, got], capture_output=True, text=True)
            check(d.returncode == 0, f"{rel} {' '.join(args)} differs from {want}:\n{d.stdout[:3000]}")


def strip_files(o):
    for p in o["processes"]:
        p.pop("file")
    return o


@test
def call_sites_shown_apart(tmp):
    """Sites listed together that share their five innermost frames (a
    library's allocator) each show, after those five and "...", the first
    frame that tells them apart, however deep: of the five listed, two
    sharing 15, and one whose 9 frames all begin those (its hidden four
    still marked "..."); a site whose first five differ from every other's
    shows only them, and so does one that shares 7 frames only with a site
    not listed (the sixth by bytes)."""
    inner = [f"alloc_inner_{k} (lib.c:{k})" for k in range(7)]
    deep = [f"deep_{k} (d.c:{k})" for k in range(15)]
    stacks = {1: inner + ["site_a (a.c:1)", "main (a.c:9)"], 2: inner + ["site_b (b.c:2)", "main (b.c:9)"],
              3: deep + ["x (d.c:99)"], 4: deep + ["y (d.c:98)", "z (d.c:97)"], 6: deep[:9],
              5: ["own_0 (o.c:1)", "main (o.c:2)"]}
    # site k allocates 2^(20+k) bytes: by bytes, 6 5 4 3 2 (top five)
    path = write_jsonl(os.path.join(tmp, "sites.jsonl"), [
        {"kind": "alloc", "api": "cudaMalloc", "tid": 7, "start_ns": 1000 * k, "end_ns": 1000 * k + 100,
         "result": 0, "stack": k, "bytes": 1 << (20 + k), "mem": "device", "addr": 4096 * k, "device": 0}
        for k in stacks], frames=stacks)
    out = report_text(path)
    got = out[out.index("  Allocation sites by bytes\n"):]
    got = got[:got.index("  Allocation sites by count\n")].splitlines()[1:]
    five = lambda frames: [f"      {'from' if k else 'at'} {frames[k]}" for k in range(5)]
    want = (["    1 device, 64 MiB, 100 ns in the calls:"] + five(deep) + ["      ..."]
            + ["    1 device, 32 MiB, 100 ns in the calls:", "      at own_0 (o.c:1)", "      from main (o.c:2)",
               "    1 device, 16 MiB, 100 ns in the calls:"] + five(deep) + ["      ...", "      from y (d.c:98)",
                                                                             "      ..."]
            + ["    1 device, 8.0 MiB, 100 ns in the calls:"] + five(deep) + ["      ...", "      from x (d.c:99)"]
            + ["    1 device, 4.0 MiB, 100 ns in the calls:"] + five(inner) + ["      ..."])
    check(got == want, "allocation sites:\n" + "\n".join(got))


@test
def report_of_jsonl_equals_report_of_gspy(tmp):
    run("prog_train", ["5", "200"], tmp=tmp)
    g = os.path.join(tmp, traces(tmp)[0])
    j = os.path.join(tmp, "trace.jsonl")
    subprocess.run([GPUSPY, "dump", g, "-o", j], check=True, timeout=TIMEOUT)
    a, b = strip_files(report_json(g)), strip_files(report_json(j))
    check(a == b, "report --json differs between the .gspy and its JSON Lines dump")
    p = subprocess.run([GPUSPY, "report", "--color", "never", g], capture_output=True, text=True)
    q = subprocess.run([GPUSPY, "report", "--color", "never", j], capture_output=True, text=True)
    check(p.stdout == q.stdout, "human report differs between .gspy and JSON Lines")
    # A trace without a host name (an edited dump, a damaged header) says so.
    lines = open(j).read().splitlines()
    first = json.loads(lines[0])
    first["host"] = ""
    k = os.path.join(tmp, "nohost.jsonl")
    with open(k, "w") as f:
        f.write("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    r = subprocess.run([GPUSPY, "report", "--color", "never", k], capture_output=True, text=True)
    check(r.returncode == 0 and "\n   host (unknown), " in r.stdout, f"no host name: {r.stdout[:300]!r}")


@test
def report_phases_and_diagnoses(tmp):
    run("prog_train", ["20", "2000"], tmp=tmp, env={"FAKECUDA_DEVICE_MEM_MB": "7"})
    o = report_json(tmp)
    ph = {p["name"]: p for p in o["phases"]}
    check(list(ph) == ["(no phase)", "data", "forward", "backward", "optimizer"], f"phases {list(ph)}")
    for n in ("data", "forward", "backward", "optimizer"):
        check(ph[n]["count"] == 20, f"{n} occurred {ph[n]['count']} times")
    check(ph["forward"]["launch"]["count"] == 200 and ph["backward"]["launch"]["count"] == 240
          and ph["optimizer"]["launch"]["count"] == 20 and ph["data"]["launch"]["count"] == 0,
          "launches attributed to the wrong phases")
    h2d = ph["data"]["copy"]["h2d"]["pageable"]
    check(h2d["count"] == 40 and h2d["bytes"] == 40 << 20, f"data phase copies {h2d}")
    check(ph["optimizer"]["alloc"]["device"]["count"] == 20
          and ph["optimizer"]["alloc"]["device"]["bytes"] == 80 << 20, "optimizer allocations")
    check(ph["optimizer"]["sync"]["count"] == 20, "optimizer syncs")
    check(ph["optimizer"]["copy"]["d2h"]["pageable"]["count"] == 20, "optimizer D2H")
    check(ph["(no phase)"]["alloc"]["device"]["count"] == 2, "allocations outside phases")
    t = o["totals"]
    check(t["launch"]["count"] == 460 and t["free"]["count"] == 22 and
          t["free"]["bytes"] == (80 << 20) + (2 << 20) + (512 << 10), f"totals {t['free']}")
    check(t["launch"]["gpu_ns"] is None, "gpu_ns must be null without GPU timing")
    check(o["memory"]["peak_reserved_bytes"] == (2 << 20) + (512 << 10) + (4 << 20), "peak")
    ids = {d["id"] for d in o["diagnoses"]}
    for want in ("pageable_copies", "data_starvation", "sync_stalls", "allocation_churn", "oom_risk"):
        check(want in ids, f"diagnosis {want} missing from {ids}")
    check("launch_bound" not in ids, "launch_bound on a data-bound loop")
    k = {x["name"]: x["count"] for x in o["kernels"]}
    check(k == {"fwd_gemm": 200, "bwd_gemm": 240, "sgd_update": 20}, f"kernels {k}")


@test
def report_launch_bound(tmp):
    if SANITIZED:
        raise Skip("a timing heuristic: sanitizers change the timing it measures")
    run("prog_threads", ["1", "5000"], tmp=tmp, env={"FAKECUDA_LAUNCH_NS": "3000"})
    o = report_json(tmp)
    ids = {d["id"] for d in o["diagnoses"]}
    check("launch_bound" in ids, f"no launch_bound diagnosis in {ids}")
    check(o["kernels"][0]["count"] == 5000, "kernel count")


@test
def launch_bound_judged_in_phases(tmp):
    """The launch-bound diagnosis takes its shares of the time in phases,
    not of a run whose start-up (10 s here, outside phases) dilutes them:
    1000 kernels of 3.9 us, each shorter than its 4 us launch, one every 5
    us in phase 'step', keep the GPU busy 78% of it: not launch-bound
    (over the whole run it would be 0.04%); at 1 us each (20%) it is, and
    says so of the time in phases. With host timing only, launches taking
    80% of the time in phases are launch-bound (0.04% of the run)."""
    T = 10_000_000_000

    def trace(kernel_ns, timing):
        ev = [{"kind": "alloc", "api": "cudaMalloc", "tid": 7, "start_ns": 1000, "end_ns": 2000, "result": 0,
               "bytes": 4096, "mem": "device", "addr": 4096, "device": 0},
              phase_event(True, T, "step", 0)]
        for i in range(1000):
            t = T + i * 5000
            ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 4000,
                       "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0,
                       "corr": i + 1})
            if timing == "cupti":
                ev.append({"kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": t + 500,
                           "end_ns": t + 500 + kernel_ns, "result": 0, "device": 0, "stream": 7, "corr": i + 1,
                           "name": "k"})
        ev.append(phase_event(False, T + 5_000_000, "step", 0))
        return write_jsonl(os.path.join(tmp, f"{timing}-{kernel_ns}.jsonl"), ev, timing=timing)

    busy = report_json(trace(3900, "cupti"))
    check([d["id"] for d in busy["diagnoses"] if d["id"] == "launch_bound"] == [],
          f"a GPU busy 78% of the time in phases called launch-bound: {busy['diagnoses']}")
    idle = report_text(trace(1000, "cupti"))
    check("100% of 1000 kernels ran shorter than their launch call takes (kernel mean 1.0 us, launch mean "
          "4.0 us) and the GPU is busy only 20% of the time in phases: the run is launch-bound." in
          " ".join(idle.split()), f"no launch-bound diagnosis in phases: {idle[-900:]}")
    host = report_text(trace(0, "none"))
    check("1000 kernel launches take 80% of the host's time in phases (mean 4.0 us each) while it waits "
          "for the GPU only 0%" in " ".join(host.split()), f"host-side: {host[-900:]}")


@test
def one_off_pageable_copies_not_diagnosed(tmp):
    """Pageable host-to-device copies made only before a loop's warm-up (the
    first occurrence of a repeated phase: weights uploaded at start-up)
    that took under 1% of the run get no diagnosis: six of 10 us in a 1 s
    run. One more copy in the second step, or the six taking 20 ms (2%),
    and all of them are diagnosed."""
    def trace(name, copy_ns, in_loop):
        copy = {"kind": "copy", "api": "cudaMemcpy", "tid": 7, "result": 0, "bytes": 1 << 20, "dir": "h2d",
                "host_mem": "pageable", "device": 0}
        ev = [dict(copy, start_ns=1000 + i * 100_000, end_ns=1000 + i * 100_000 + copy_ns) for i in range(6)]
        for step in range(3):
            t = 100_000_000 + step * 300_000_000
            ev.append(phase_event(True, t, "step", step))
            if in_loop and step == 1:
                ev.append(dict(copy, start_ns=t + 1000, end_ns=t + 11_000))
            ev.append(phase_event(False, t + 200_000_000, "step", step))
        path = write_jsonl(os.path.join(tmp, name + ".jsonl"), ev)
        return [d["text"] for d in report_json(path)["diagnoses"] if d["id"] == "pageable_copies"]

    check(trace("startup", 10_000, False) == [], "one-off start-up copies diagnosed")
    got = trace("loop", 10_000, True)
    check(len(got) == 1 and got[0].startswith("7 host-to-device copies (7.0 MiB, 70.0 us on the host)"),
          f"a copy in the loop: {got}")
    got = trace("slow", 20_000_000 // 6, False)
    check(len(got) == 1 and got[0].startswith("6 host-to-device copies (6.0 MiB, 20.0 ms on the host)"),
          f"start-up copies taking 2% of the run: {got}")


@test
def waits_after_pageable_copies_named(tmp):
    """A sync-stall diagnosis says how many of a phase's waits came right
    after the same thread's pageable copy (PyTorch waits for each): three
    steps of phase 'data', each a pageable copy then a wait on thread 7,
    are "each right after a pageable copy" with the advice to pin; with a
    launch between copy and wait in one step, or the wait of another
    thread right after thread 7's copy, 2 of 3, and the general advice;
    --json has the count per phase and in the totals."""
    def trace(name, between, other_tid):
        ev = []
        for step in range(3):
            t = 1_000_000 + step * 1_000_000
            ev.append(phase_event(True, t, "data", step))
            ev.append({"kind": "copy", "api": "cudaMemcpyAsync", "tid": 7, "start_ns": t + 1000,
                       "end_ns": t + 2000, "result": 0, "bytes": 4096, "dir": "h2d", "host_mem": "pageable",
                       "device": 0, "async": True})
            if between and step == 1:
                ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t + 2500,
                           "end_ns": t + 2600, "result": 0, "device": 0, "name": "k", "grid": [1, 1, 1],
                           "block": [32, 1, 1], "stream": 0})
            tid = 8 if other_tid and step == 2 else 7
            ev.append({"kind": "sync", "api": "cudaStreamSynchronize", "tid": tid, "start_ns": t + 3000,
                       "end_ns": t + 4000, "result": 0, "device": 0, "stream": 0})
            ev.append(phase_event(False, t + 500_000, "data", step))
        o = report_json(write_jsonl(os.path.join(tmp, name + ".jsonl"), ev, threads=2))
        data = [p for p in o["phases"] if p["name"] == "data"][0]
        n = 3 if name == "each" else 2
        check(data["sync_after_pageable"]["count"] == n and data["sync_after_pageable"]["host_ns"] == 1000 * n
              and o["totals"]["sync_after_pageable"]["count"] == n, f"{name}: --json {data['sync_after_pageable']}")
        return [d["text"] for d in o["diagnoses"] if d["id"] == "sync_stalls"]

    got = trace("each", False, False)
    check(len(got) == 1 and got[0].startswith(
        "Phase 'data' (3 occurrences) synchronizes 3 times (3.0 us waiting; each right after a pageable "
        "copy): ") and "\nCopy from pinned memory (DataLoader(pin_memory=True)" in got[0], f"each: {got}")
    for name, between, other in (("launch", True, False), ("thread", False, True)):
        got = trace(name, between, other)
        check(len(got) == 1 and got[0].startswith(
            "Phase 'data' (3 occurrences) synchronizes 3 times (3.0 us waiting; 2 right after a pageable "
            "copy): ") and "\nRemove per-step .item()" in got[0], f"{name}: {got}")


@test
def counts_of_one_are_singular(tmp):
    """A report's counts of one take the singular: two steps of phase
    'data', one with a synchronous pageable copy of 100 us, the other with
    a wait of 50 us that carries a stack, give "1 host-to-device copy ...
    stages it ... it cannot overlap", "synchronizes 1 time ... and makes 1
    synchronous copy" and, among the call sites, "1 wait"."""
    ev = []
    for step in range(2):
        t = 1_000_000 * (step + 1)
        ev.append(phase_event(True, t, "data", step))
        if step == 0:
            ev.append({"kind": "copy", "api": "cudaMemcpy", "tid": 7, "start_ns": t + 1000, "end_ns": t + 101_000,
                       "result": 0, "bytes": 4096, "dir": "h2d", "host_mem": "pageable", "device": 0,
                       "async": False})
        else:
            ev.append({"kind": "sync", "api": "cudaStreamSynchronize", "tid": 7, "start_ns": t + 1000,
                       "end_ns": t + 51_000, "result": 0, "device": 0, "stream": 0, "stack": 1})
        ev.append(phase_event(False, t + 500_000, "data", step))
    path = write_jsonl(os.path.join(tmp, "one.jsonl"), ev, frames={1: ["wait_here (w.c:3)", "main (w.c:9)"]})
    said = {d["id"]: d["text"] for d in report_json(path)["diagnoses"]}
    check(said.get("pageable_copies", "").startswith(
        "1 host-to-device copy (4.0 KiB, 100.0 us on the host) read pageable memory: the driver stages it "
        "through a bounce buffer and it cannot overlap compute."), f"pageable copies: {said}")
    check(said.get("sync_stalls", "").startswith(
        "Phase 'data' (2 occurrences) synchronizes 1 time (50.0 us waiting; each right after a pageable copy) "
        "and makes 1 synchronous copy: "), f"sync stalls: {said}")
    out = report_text(path)
    check("\n    1 wait, 50.0 us in phase 'data':\n      at wait_here (w.c:3)\n      from main (w.c:9)\n" in out,
          f"waits list:\n{out}")


@test
def churn_says_its_time(tmp):
    """The allocation-churn diagnosis says how long the allocations and
    frees after warm-up took and what share of the time after it: six
    200 us steps, each a 10 us cudaMalloc of 1 MiB and a 6 us cudaFree; the
    five after the first step make 5 allocations (5.0 MiB) and 5 frees,
    80.0 us, 8% of the 1.0 ms from the second step's start to the end. The
    first step's pair is not counted, nor a 50 ms pair made before the loop
    (outside phases, like a context's creation in the first cudaMalloc)."""
    def alloc(api, t, dur, addr, size=None):
        return {"kind": "alloc" if size else "free", "api": api, "tid": 7, "start_ns": t, "end_ns": t + dur,
                "result": 0, "mem": "device", "addr": addr, "device": 0, "bytes": size or (1 << 20)}
    ev = [alloc("cudaMalloc", 100_000, 50_000_000, 1 << 40, 1 << 30), alloc("cudaFree", 50_200_000, 20_000, 1 << 40)]
    for step in range(6):
        t = 51_000_000 + step * 200_000
        ev += [phase_event(True, t, "step", step), alloc("cudaMalloc", t + 1000, 10_000, 4096, 1 << 20),
               alloc("cudaFree", t + 20_000, 6_000, 4096), phase_event(False, t + 200_000, "step", step)]
    said = {d["id"]: d["text"] for d in report_json(write_jsonl(os.path.join(tmp, "churn.jsonl"), ev))["diagnoses"]}
    check(said.get("allocation_churn", "").startswith(
        "5 device allocations (5.0 MiB) and 5 frees after warm-up (after the first occurrence of a repeated "
        "phase) took 80.0 us in the calls, 8% of the time after it: each cudaMalloc/cudaFree synchronizes "
        "the device."), f"diagnoses: {said}")
    # Without phases, warm-up is the first fifth of the events (3 of 14):
    # every step's pair counts, 96.0 us of the 1.025 ms from the third event.
    flat = [e for e in ev if not e["kind"].startswith("phase_")]
    said = {d["id"]: d["text"] for d in report_json(write_jsonl(os.path.join(tmp, "flat.jsonl"), flat))["diagnoses"]}
    check(said.get("allocation_churn", "").startswith(
        "6 device allocations (6.0 MiB) and 6 frees after warm-up (after the first fifth of the events) took "
        "96.0 us in the calls, 9% of the time after it: "), f"without phases: {said}")

@test
def events_busy_bound_is_of_the_time_in_phases(tmp):
    """GPUSPY_CUPTI=events: the GPU section bounds the device's busy time by
    the spans of the phases over the time in phases, and names the spans
    outside phases apart (a start-up interval spans its idle seconds): a
    4.0 ms span outside phases, then two 500 us steps of 300 us spans each,
    give 600.0 us of 1.0 ms in phases, at most 60.0%, and 4.0 ms outside."""
    def span(t, name, ns):
        return {"kind": "gpu_span", "api": "cuda_event_span", "tid": 7, "start_ns": t, "end_ns": t + 100,
                "result": 0, "name": name, "gpu_ns": ns, "device": 0, "stream": 5}
    ev = [span(1000, "", 4_000_000)]
    for step in range(2):
        t = 5_000_000 + step * 500_000
        ev += [phase_event(True, t, "step", step), span(t + 1000, "step", 300_000),
               phase_event(False, t + 500_000, "step", step)]
    path = write_jsonl(os.path.join(tmp, "spans.jsonl"), ev, timing="events")
    o = report_json(path)
    check(o["gpu"]["devices"] == [{"device": 0, "span_ns": 4_600_000, "spans": 3, "phases_span_ns": 600_000,
                                   "phases_spans": 2}], f"gpu {o['gpu']}")
    out = report_text(path)
    want = ("  device 0: GPU spans 600.0 us of 1.0 ms in phases (2 intervals): busy at most 60.0%\n"
            "    outside phases: 4.0 ms (1 interval)\n")
    check(want in out, f"GPU section:\n{out}")

@test
def kernel_names_shortened_from_the_end(tmp):
    """The kernels table shows a kernel without its return type, parameter
    list and the function's own namespaces, and without at::native::,
    std:: and anonymous namespaces in its template arguments, cut at the
    end: two reduce kernels of PyTorch stay apart (MeanOps, func_wrapper),
    a mangled name is demangled, and --json keeps every name whole."""
    mean = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, "
            "float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, "
            "float, float, float>, unsigned int, float, 4, 4>)")
    names = [mean, mean.replace("MeanOps", "func_wrapper_t"),
             "void at::native::(anonymous namespace)::fill_kernel<float>(float*, int)", "fill(float*, int, float)",
             "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_execute_kernel",
             "_Z11coop_kernelPf"]
    ev = [{"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": 1000 * (i + 1),
           "end_ns": 1000 * (i + 1) + 100 * (len(names) - i), "result": 0, "device": 0, "name": n,
           "grid": [1, 1, 1], "block": [32, 1, 1], "stream": 0} for i, n in enumerate(names)]
    path = write_jsonl(os.path.join(tmp, "k.jsonl"), ev)
    out = report_text(path)
    rows = [l[2:50].rstrip() for l in out[out.index("Top kernels"):].splitlines()[1:7]]
    check(rows == ["reduce_kernel<512, 1, ReduceOp<float, MeanOps...", "reduce_kernel<512, 1, ReduceOp<float, func_wr...",
                   "fill_kernel<float>", "fill", "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesiz...", "coop_kernel"],
          "kernels table:\n" + "\n".join(rows))
    full = sorted(k["name"] for k in report_json(path)["kernels"])
    check(full == sorted(names[:5] + ["coop_kernel(float*)"]), f"--json names {full}")

@test
def report_several_processes(tmp):
    p = run("prog_fork", tmp=tmp)
    parent, child = [int(x) for x in p.stdout.split()[1::2]]
    o = report_json(tmp)
    pids = [x["pid"] for x in o["processes"]]
    check(sorted(pids) == sorted([parent, child]), f"processes {pids}")
    check(o["totals"]["launch"]["count"] == 5 and o["totals"]["alloc"]["device"]["count"] == 3
          and o["totals"]["memset"]["count"] == 2, "whole-run totals are not the sum")
    h = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True)
    check(f"== pid {parent}" in h.stdout and f"== pid {child}" in h.stdout
          and "== all 2 processes" in h.stdout, "human report lacks a process section")
    check(all(len(l) <= 100 for l in h.stdout.splitlines()), "a line is wider than 100 columns")


@test
def report_killed_process_is_incomplete(tmp):
    run("prog_kill", ["3000"], tmp=tmp, expect_rc=-9)
    o = report_json(tmp)
    check(o["processes"][0]["incomplete"] is True and o["events"] == 3000, "killed process report")
    h = subprocess.run([GPUSPY, "report", tmp], capture_output=True, text=True)
    check("trace incomplete" in h.stdout and "\033[" not in h.stdout, "incomplete not said, or colour off a TTY")


@test
def report_rejects_hostile_input(tmp):
    run("prog_train", ["3", "10"], tmp=tmp, env={"GPUSPY_BUFFER_MB": "1"})
    good = os.path.join(tmp, traces(tmp)[0])
    data = open(good, "rb").read()
    check(len(data) == 4096 + STRTAB + (64 << 10), f"file size {len(data)}: not cut to its one chunk at exit")
    jl = os.path.join(tmp, "good.jsonl")
    subprocess.run([GPUSPY, "dump", good, "-o", jl], check=True)
    lines = open(jl).read().splitlines()
    cases = {
        "empty.gspy": b"",
        "random.gspy": os.urandom(5000),
        "magic.gspy": b"XXXXXXXX" + data[8:8192],
        "empty.jsonl": b"",
        "noproc.jsonl": (lines[1] + "\n").encode(),
        "newer.jsonl": lines[0].replace('"format_version":2', '"format_version":7').encode() + b"\n",
        "badline.jsonl": ("\n".join(lines[:5] + ["{not json"] + lines[5:]) + "\n").encode(),
        "twoproc.jsonl": ("\n".join(lines[:3] + [lines[0]] + lines[3:]) + "\n").encode(),
        "badevent.jsonl": ("\n".join(lines[:2] + ['{"type":"event","kind":"warp"}']) + "\n").encode(),
    }
    for name, content in cases.items():
        path = os.path.join(tmp, name)
        write(path, content)
        p = subprocess.run([GPUSPY, "report", path], capture_output=True, text=True, timeout=10)
        err = p.stderr.strip().splitlines()
        check(p.returncode == 1, f"{name}: exit {p.returncode}")
        check(len(err) == 1 and err[0].startswith(f"gpuspy: error: {path}: "), f"{name}: {err}")
    # Cut anywhere: never a crash, and every complete record up to the cut.
    step = max(1, len(data) // 300)
    cut = os.path.join(tmp, "cut.gspy")
    for n in list(range(0, 8192, 97)) + list(range(8192, len(data), step)):
        write(cut, data[:n])
        p = subprocess.run([GPUSPY, "report", "--json", cut], capture_output=True, text=True, timeout=10)
        check(p.returncode in (0, 1), f"cut at {n}: exit {p.returncode} {p.stderr[-300:]}")
        if p.returncode == 1:
            check(len(p.stderr.strip().splitlines()) == 1, f"cut at {n}: {p.stderr}")


def check_chrome(path):
    """The Trace Event Format's rules, as Perfetto and chrome://tracing read them."""
    d = json.load(open(path))
    check(isinstance(d, dict) and isinstance(d.get("traceEvents"), list), "no traceEvents array")
    slices = {}
    for e in d["traceEvents"]:
        check(e.get("ph") in ("X", "M", "C", "i", "s", "f"), f"unknown phase type {e}")
        if e["ph"] in ("s", "f"):
            check(isinstance(e.get("id"), (int, float)), f"flow event without id: {e}")
        check(isinstance(e.get("name"), str) and isinstance(e.get("pid"), int)
              and isinstance(e.get("tid"), int), f"name/pid/tid missing: {e}")
        check(isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, f"bad ts: {e}")
        if e["ph"] == "X":
            check(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, f"bad dur: {e}")
            slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif e["ph"] == "C":
            check(e.get("args") and all(isinstance(v, (int, float)) for v in e["args"].values()),
                  f"counter without numeric args: {e}")
        elif e["ph"] == "M":
            check("name" in e["args"] or "sort_index" in e["args"], f"bad metadata: {e}")
        elif e["ph"] == "i":
            check(e.get("s") in ("g", "p", "t"), f"bad instant scope: {e}")
    for key, v in slices.items():
        stack = []
        for b, end, name in sorted(v, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1] <= b:
                stack.pop()
            check(not stack or end <= stack[-1] + 1e-3, f"slice {name} at {b} overlaps its parent on {key}")
            stack.append(end)
    return d["traceEvents"]


@test
def export_chrome_trace(tmp):
    run("prog_train", ["20", "100"], tmp=tmp)
    g = os.path.join(tmp, traces(tmp)[0])
    out = os.path.join(tmp, "out.json")
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", g, "-o", out], capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(p.returncode == 0, p.stderr)
    ev = check_chrome(out)
    phases = [e for e in ev if e.get("cat") == "phase"]
    check(len(phases) == 80 and {e["name"] for e in phases} == {"data", "forward", "backward", "optimizer"},
          f"{len(phases)} phase slices")
    check(len({e["tid"] for e in phases}) == 1, "phases are not on one track")
    api = [e for e in ev if e["ph"] == "X" and e.get("cat") != "phase"]
    _, dumped = dump(g)
    calls = [e for e in dumped if not e["kind"].startswith("phase") and e["kind"] != "mark"]
    check(len(api) == len(calls), f"{len(api)} API slices for {len(calls)} calls")
    check(sum(1 for e in api if e["name"] == "fwd_gemm") == 200, "launch slices not named by kernel")
    mem = [e["args"]["bytes"] for e in ev if e["ph"] == "C"]
    check(len(mem) == 44 and max(mem) == (2 << 20) + (512 << 10) + (4 << 20) and mem[-1] == 0,
          f"memory counter {len(mem)} points, max {max(mem) if mem else None}")
    # The JSON Lines dump exports the same timeline.
    j = os.path.join(tmp, "t.jsonl")
    subprocess.run([GPUSPY, "dump", g, "-o", j], check=True)
    out2 = os.path.join(tmp, "out2.json")
    subprocess.run([GPUSPY, "export", "--format", "chrome", j, "-o", out2], check=True)
    check(open(out).read() == open(out2).read(), "export differs between .gspy and JSON Lines")
    p = subprocess.run([GPUSPY, "export", "--format", "svg", g, "-o", out], capture_output=True, text=True)
    check(p.returncode == 2 and p.stderr.count("\n") == 1, "unknown format not refused in one line")


def phases_of(ev):
    return [(e["kind"], e["name"]) for e in ev if e["kind"] in ("phase_begin", "phase_end", "mark")]


@test
def nvtx_ranges_become_phases(tmp):
    p = run("prog_nvtx", tmp=tmp)
    check("levels 0 1" in p.stdout, f"NVTX push levels: {p.stdout}")
    _, ev = only_trace(tmp)
    B, N, M = "phase_begin", "phase_end", "mark"
    check(phases_of(ev) == [(B, "outer"), (B, "inner"), (N, "inner"), (N, "outer"), (M, "checkpoint"),
                            (B, "dom_range"), (N, "dom_range"), (B, "async_range"), (N, "async_range")],
          f"phases {phases_of(ev)}")
    o = report_json(tmp)
    ph = {x["name"]: x["launch"]["count"] for x in o["phases"]}
    check(ph == {"(no phase)": 1, "outer": 1, "inner": 1, "dom_range": 1, "async_range": 1},
          f"launches by phase {ph}")


@test
def nvtx_filters_and_nesting(tmp):
    B, N = "phase_begin", "phase_end"
    cases = [
        ({"GPUSPY_NVTX_NESTING": "outermost"},
         [(B, "outer"), (N, "outer"), ("mark", "checkpoint"), (B, "dom_range"), (N, "dom_range"),
          (B, "async_range"), (N, "async_range")]),
        ({"GPUSPY_NVTX_DOMAINS": "mydomain"}, [(B, "dom_range"), (N, "dom_range")]),
        ({"GPUSPY_NVTX_RANGES": "in*,async_*"}, [(B, "inner"), (N, "inner"), (B, "async_range"),
                                                (N, "async_range")]),
        ({"GPUSPY_NVTX": "0"}, []),
        ({"GPUSPY_NVTX": "off"}, []),
    ]
    for env, want in cases:
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        run("prog_nvtx", tmp=tmp, env=env)
        _, ev = only_trace(tmp)
        check(phases_of(ev) == want, f"{env}: {phases_of(ev)}")


@test
def nvtx_user_injection_is_respected(tmp):
    # A user's own NVTX tool keeps its place: gpuspy does not replace it.
    run("prog_nvtx", tmp=tmp, env={"NVTX_INJECTION64_PATH": "/nonexistent/libtool.so"})
    _, ev = only_trace(tmp)
    check(phases_of(ev) == [] and len(ev) == 5, f"{len(ev)} events, phases {phases_of(ev)}")


@test
def phase_api_runs_without_gpuspy(tmp):
    p = run("prog_train", ["2", "10"], tmp=tmp, preload=False)
    check(p.stdout == "trained 2 steps\n" and traces(tmp) == [], "weak phase API changed the program")


@test
def switches_and_choices_refuse_unknown_values(tmp):
    """On/off variables take 1, on, yes, true and 0, off, no, false (any
    case); another value warns once and keeps the default (GPUSPY_DISABLE=off
    traces: it used to disable, as any value but 0 did). GPUSPY_CUPTI and
    GPUSPY_CLOCK warn on an unknown choice and use auto."""
    def once(env):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        p = run("prog_rt_dyn", tmp=tmp, env=dict({"GPUSPY_QUIET": "0"}, **env))
        warn = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
        return warn, [dump(os.path.join(tmp, f))[0] for f in traces(tmp)]

    for v in ("off", "OFF", "no", "false", "0"):
        warn, procs = once({"GPUSPY_DISABLE": v})
        check(warn == [] and len(procs) == 1, f"GPUSPY_DISABLE={v}: {warn} {len(procs)} traces")
    for v in ("1", "on", "Yes", "true"):
        warn, procs = once({"GPUSPY_DISABLE": v})
        check(warn == [] and procs == [], f"GPUSPY_DISABLE={v}: {warn} {len(procs)} traces")
    warn, procs = once({"GPUSPY_DISABLE": "maybe"})
    check(warn == ["gpuspy: GPUSPY_DISABLE=maybe is not 1 or 0 (on or off); using 0"] and len(procs) == 1,
          f"GPUSPY_DISABLE=maybe: {warn} {len(procs)} traces")
    warn, _ = once({"GPUSPY_QUIET": "on", "GPUSPY_MODE": "circle", "GPUSPY_CLOCK": "wall"})
    check(warn == [], f"GPUSPY_QUIET=on still warned: {warn}")
    warn, procs = once({"GPUSPY_CLOCK": "wall", "GPUSPY_CUPTI": "maybe"})
    check(warn == ["gpuspy: GPUSPY_CLOCK=wall is not auto or mono; using auto",
                   "gpuspy: GPUSPY_CUPTI=maybe is not auto, on, off or events; using auto"] and len(procs) == 1,
          f"GPUSPY_CLOCK=wall GPUSPY_CUPTI=maybe: {warn}")
    p = run("prog_nvtx", tmp=tmp, env={"GPUSPY_QUIET": "0", "GPUSPY_NVTX_NESTING": "middle"})
    warn = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
    check(warn == ["gpuspy: GPUSPY_NVTX_NESTING=middle is not innermost or outermost; using innermost"],
          f"GPUSPY_NVTX_NESTING=middle: {warn}")
    warn, procs = once({"GPUSPY_CLOCK": "mono", "GPUSPY_CUPTI": "auto"})
    check(warn == [] and procs[0]["clock"] == "monotonic", f"GPUSPY_CLOCK=mono: {warn} {procs[0]['clock']}")


@test
def gpuspy_run_command(tmp):
    if SANITIZED:
        raise Skip("gpuspy run puts libgpuspy before the sanitizer runtime")
    e = dict(os.environ, LD_LIBRARY_PATH=BIN)
    e.pop("LD_PRELOAD", None)
    d = os.path.join(tmp, "runs")
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--buffer-mb", "8", "--",
                        os.path.join(BIN, "prog_fork")], env=e, capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    parent, child = [int(x) for x in p.stdout.split()[1:4:2]]
    check(f"== pid {parent}" in p.stdout and f"== pid {child}" in p.stdout,
          "report of both processes missing")
    check("2 trace files in" in p.stderr, p.stderr)
    proc, _ = dump(os.path.join(d, sorted(traces(d))[0]))
    check(proc["buffer_bytes"] == 8 << 20, "--buffer-mb not applied")
    check(os.path.getsize(os.path.join(d, sorted(traces(d))[0])) == proc["file_bytes"] == 4096 + STRTAB + (64 << 10),
          "the file is not cut to its chunks at exit")
    # Exit status, and 128 + N for a signal.
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c", "exit 7"], env=e,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 7 and p.stdout == "", f"exit {p.returncode}")
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--", "sh", "-c", "kill -9 $$"], env=e,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 128 + 9, f"killed child: exit {p.returncode}")
    # A signal sent to gpuspy reaches the command.
    script = "trap 'echo got TERM; exit 3' TERM; echo ready; sleep 20 >/dev/null 2>&1 & wait"
    q = subprocess.Popen([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c", script], env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(q.stdout.readline() == "ready\n", "the command did not start")
    q.terminate()
    out, _ = q.communicate(timeout=TIMEOUT)
    check(q.returncode == 3 and "got TERM" in out, f"SIGTERM not forwarded: {q.returncode} {out!r}")
    # ... also when it comes between the fork and gpuspy's note of the
    # child's pid (tests/fork_delay.c holds gpuspy there for 300 ms while
    # the command runs): it waits, then goes on.
    script = "trap 'echo got TERM; exit 3' TERM; echo ready; sleep 2 >/dev/null 2>&1 & wait"
    q = subprocess.Popen([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c", script],
                         env=dict(e, LD_PRELOAD=os.path.join(BIN, "fork_delay.so")),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(q.stdout.readline() == "ready\n", "the command did not start (fork delayed)")
    q.terminate()
    out, _ = q.communicate(timeout=TIMEOUT)
    check(q.returncode == 3 and "got TERM" in out,
          f"SIGTERM right after the fork not forwarded: {q.returncode} {out!r}")
    p = subprocess.run([GPUSPY, "run", "--cupti", "maybe", "--", "true"], capture_output=True, text=True)
    check(p.returncode == 2 and p.stderr.count("\n") == 1, "bad option not refused in one line")
    # A command that makes no CUDA call: the directory gpuspy made for the
    # run (the default one, or --dir) is removed again; one that was there
    # stays.
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    for opts in ([], ["--dir", "made"], ["--dir", "."]):
        p = subprocess.run([GPUSPY, "run", *opts, "--", "true"], env=e, cwd=empty, capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and os.listdir(empty) == [] and p.stderr.count("\n") == 1 and
              "no trace" in p.stderr, f"gpuspy run {opts} -- true: {p.stderr!r}, left {os.listdir(empty)}")
    # GPUSPY_LIB: the library preloaded instead of the one next to gpuspy;
    # one that is not there is a one-line error before anything runs.
    p = subprocess.run([GPUSPY, "run", "--", "sh", "-c", "echo ran"], env=dict(e, GPUSPY_LIB=d + "/none.so"),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1 and "none.so" in p.stderr,
          f"a missing GPUSPY_LIB: rc {p.returncode} {p.stdout!r} {p.stderr!r}")
    other = os.path.join(tmp, "other-libgpuspy.so")
    shutil.copy(os.path.realpath(LIB), other)
    d2 = os.path.join(tmp, "runs-lib")
    p = subprocess.run([GPUSPY, "run", "--dir", d2, "--no-report", "--", "sh", "-c",
                        'echo "$LD_PRELOAD"; exec "$0" 1', os.path.join(BIN, "prog_stacks")],
                       env=dict(e, GPUSPY_LIB=other), capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout.splitlines()[0] == other and len(traces(d2)) == 1,
          f"GPUSPY_LIB: rc {p.returncode} {p.stdout!r} {traces(d2)}")
    # GPUSPY_DEBUG=1: at exit, one line saying how entry points were handed
    # out (none unwrapped or passed through with the doubles: the driver
    # double's table answers with gpuspy's own wrappers).
    p = run("prog_stacks", ["1"], tmp=d2, env={"GPUSPY_DEBUG": "1", "GPUSPY_QUIET": "0"})
    dbg = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
    check(len(dbg) == 1 and re.fullmatch(r"gpuspy: pid \d+: entry points handed out: \d+ wrapped, \d+ gpuspy's "
                                         r"already, 0 unwrapped \(real pointer differed\), 0 passed through "
                                         r"\(not a real function\)", dbg[0]), f"GPUSPY_DEBUG: {p.stderr!r}")


@test
def command_line_errors_are_one_line(tmp):
    """Every misuse of gpuspy's commands: exit status 2, nothing on stdout,
    one line on stderr that says what is wrong; --version and --help
    exactly as documented."""
    run("prog_train", ["1", "2"], tmp=tmp)
    g = os.path.join(tmp, traces(tmp)[0])
    cases = [
        (["--version", "x"], "--version takes no arguments"), (["--help", "x"], "--help takes no arguments"),
        (["frob"], "unknown command 'frob'"),
        (["report"], "report: no trace (FILE|DIR) given"), (["report", "--json"], "report: no trace (FILE|DIR) given"),
        (["report", "--color"], "report: --color needs a value"), (["report", "--colour", g], "report: unknown option --colour"),
        (["report", "--color", "red", g], "--color red: use auto, always or never"),
        (["dump"], "dump: no trace (FILE.gspy) given"), (["dump", g, "-o"], "dump: -o needs a value"),
        (["dump", g, g], "dump: one trace at a time"), (["dump", "-x", g], "dump: unknown option -x"),
        (["export", "--format", "chrome", "-o", os.path.join(tmp, "x.json")], "export: no trace (FILE|DIR) given"),
        (["export", "--format", "chrome", g], "export: no output (-o OUT.json) given"),
        (["export", g, "-o", os.path.join(tmp, "x.json"), "--format"], "export: --format needs a value"),
        (["export", "--format", "chrome", g, "-o"], "export: -o needs a value"),
        (["export", g, "-o", os.path.join(tmp, "x.json")], "export: --format (missing) is not known"),
        (["run"], "run: no command given"), (["run", "--"], "run: no command given"),
        (["run", "--dir", "--", "true"], "run: --dir needs a value"), (["run", "--cupti"], "run: --cupti needs a value"),
        (["run", "--buffer-mb"], "run: --buffer-mb needs a value"),
        (["run", "--host-alloc", "--", "true"], "run: --host-alloc needs a value"),
        (["run", "--bogus", "--", "true"], "run: unknown option --bogus"),
        (["run", "--buffer-mb", "1048577", "--", "true"], "run: --buffer-mb 1048577 is not a size in MiB (1..1048576)"),
        (["run", "--buffer-mb", "-5", "--", "true"], "run: --buffer-mb -5 is not a size in MiB (1..1048576)"),
        (["run", "--buffer-mb", "0", "--", "true"], "run: --buffer-mb 0 is not a size in MiB (1..1048576)"),
    ]
    for args, want in cases:
        p = subprocess.run([GPUSPY, *args], capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and
              p.stderr.startswith("gpuspy: error: " + want), f"gpuspy {args}: rc {p.returncode} {p.stderr!r}")
    check(not os.path.exists(os.path.join(tmp, "x.json")), "a refused export created its output")
    p = subprocess.run([GPUSPY, "--version"], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and re.fullmatch(r"gpuspy \d+\.\d+\.\d+ \(trace format 2\)\n", p.stdout),
          f"--version: {p.stdout!r}")
    p = subprocess.run([GPUSPY, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout.startswith("usage: gpuspy run") and p.stderr == "", "--help")
    p = subprocess.run([GPUSPY], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 2 and p.stdout == "" and p.stderr.startswith("usage: gpuspy run"), "no command")


SYS_PY = "/usr/bin/python3"
TORCH_LOOP = os.path.join(ROOT, "tests", "torch_loop.py")


def have_torch():
    return subprocess.run([SYS_PY, "-c", "import torch"], capture_output=True).returncode == 0


def torch_sequence(steps):
    B, N = "phase_begin", "phase_end"
    seq = []
    for s in range(steps):
        for name in ("data", "optimizer", "forward", "backward", "optimizer"):
            seq += [(B, name, s), (N, name, s)]
    return seq + [(B, "data", steps), (N, "data", steps)]


def run_py(args, tmp, env=None, preload=True):
    e = dict(os.environ, GPUSPY_DIR=tmp)
    e.pop("LD_PRELOAD", None)
    if preload:
        e["LD_PRELOAD"] = LIB
    e.update(env or {})
    return subprocess.run([SYS_PY, *args], env=e, capture_output=True, text=True, timeout=300)


@test
def torch_phases_without_code_changes(tmp):
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    p = run_py([TORCH_LOOP, "3"], tmp)
    check(p.returncode == 0 and p.stdout == "done 3 steps\n", f"{p.returncode} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    check(got == torch_sequence(3), f"torch phases {got}")
    check(all(e["api"].startswith("torch_phase") for e in ev), "phases not from the torch hooks")
    # The same through gpuspy run, with its report.
    d = os.path.join(tmp, "run")
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--", SYS_PY, TORCH_LOOP, "2"], env=e,
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and "done 2 steps" in p.stdout, p.stderr[-500:])
    for name in ("data", "forward", "backward", "optimizer"):
        check(f"\n  {name} " in p.stdout, f"report lacks the {name} phase")
    _, ev = only_trace(d)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    check(got == torch_sequence(2), f"torch phases via gpuspy run {got}")


def spans(ev):
    return sorted((e["name"], e["gpu_ns"], "legacy" if e["stream"] == 0 else "stream")
                  for e in ev if e["kind"] == "gpu_span")


@test
def gpu_time_from_events(tmp):
    """GPUSPY_CUPTI=events: each phase interval's GPU time on each stream it
    used, from CUDA events at the boundaries (the double's kernels take
    grid_x us of their stream's clock); per-thread streams are not timed;
    the report and the JSON Lines round trip give the same sums."""
    p = run("prog_events", env={"GPUSPY_CUPTI": "events"}, tmp=tmp)
    check(p.stdout == "events done\n", p.stdout)
    head, ev = only_trace(tmp)
    check(head["gpu_timing"] == "events", head["gpu_timing"])
    want = sorted([("multi", 10000, "stream"), ("multi", 20000, "stream"), ("multi", 5000, "legacy"),
                   ("outer", 1000, "stream"), ("inner", 2000, "stream"), ("outer", 4000, "stream"),
                   ("threaded", 7000, "stream")])
    check(spans(ev) == want, f"spans {spans(ev)}")
    gspy = os.path.join(tmp, traces(tmp)[0])
    for path in (gspy, None):
        if path is None:
            path = os.path.join(tmp, "t.jsonl")
            with open(path, "w") as f:
                f.write(subprocess.run([GPUSPY, "dump", gspy], capture_output=True, text=True).stdout)
        o = report_json(path)
        check(o["timing"] == "events", o["timing"])
        got = {x["name"]: (x["gpu_span_ns"], x["gpu_span_intervals"]) for x in o["phases"]}
        check(got == {"(no phase)": (0, 0), "multi": (35000, 3), "outer": (5000, 2), "inner": (2000, 1),
                      "threaded": (7000, 1)}, f"{path}: {got}")
        check(o["gpu"]["devices"] == [{"device": 0, "span_ns": 49000, "spans": 7, "phases_span_ns": 49000,
                                       "phases_spans": 7}], f"gpu {o.get('gpu')}")
    p = subprocess.run([GPUSPY, "report", "--color", "never", gspy], capture_output=True, text=True)
    check("  device 0: GPU spans 49.0 us of " in p.stdout and " in phases (7 intervals): busy at most "
          in p.stdout and "outside phases" not in p.stdout and max(len(l) for l in p.stdout.splitlines()) <= 100,
          p.stdout[-600:])
    # The training loop: forward 10 x 64 us, backward 12 x 64 us, optimizer
    # 32 us per step; data's copies take no GPU time.
    d = os.path.join(tmp, "train")
    os.makedirs(d)
    p = run("prog_train", ["3", "100"], env={"GPUSPY_CUPTI": "events"}, tmp=d)
    check(p.stdout == "trained 3 steps\n", p.stdout)
    o = report_json(os.path.join(d, traces(d)[0]))
    got = {x["name"]: (x["gpu_span_ns"], x["gpu_span_intervals"]) for x in o["phases"]}
    check(got == {"(no phase)": (0, 0), "data": (0, 3), "forward": (3 * 640000, 3),
                  "backward": (3 * 768000, 3), "optimizer": (3 * 32000, 3)}, f"prog_train {got}")
    # A data-starved loop (20 ms of host work per step): the diagnosis adds
    # the bound the events give, from the phases' spans and their time.
    d = os.path.join(tmp, "starved")
    os.makedirs(d)
    run("prog_train", ["5", "20000"], env={"GPUSPY_CUPTI": "events"}, tmp=d)
    o = report_json(os.path.join(d, traces(d)[0]))
    ph = {x["name"]: x for x in o["phases"]}
    spans_ns = sum(x["gpu_span_ns"] for n, x in ph.items() if n != "(no phase)")
    check(spans_ns == 5 * (640000 + 768000 + 32000), f"spans {spans_ns}")
    in_phases = o["duration_ns"] - ph["(no phase)"]["wall_ns"]
    text = [x["text"] for x in o["diagnoses"] if x["id"] == "data_starvation"]
    want = f"CUDA events: the GPU worked at most {100 * spans_ns / in_phases:.0f}% of that time"
    check(len(text) == 1 and want in text[0], f"{want!r} not in {text}")
    # Read back in batches: 1000 intervals on one stream take a few binary
    # searches of cuEventQuery (the double's GPU is one event behind), not
    # a query or more per interval.
    d = os.path.join(tmp, "loop")
    os.makedirs(d)
    p = run("prog_events", ["loop", "1000"], env={"GPUSPY_CUPTI": "events", "FAKECUDA_STATS": "1"}, tmp=d)
    check(p.stdout == "loop done\n", p.stdout)
    check(spans(only_trace(d)[1]) == [("loop", 1000, "stream")] * 1000, "1000 spans of 1 us")
    queries = int(re.search(r"fakecuda: (\d+) event queries", p.stderr)[1])
    check(queries <= 250, f"{queries} event queries for 1000 intervals")
    # Off by default.
    d = os.path.join(tmp, "off")
    os.makedirs(d)
    run("prog_events", tmp=d)
    check(spans(only_trace(d)[1]) == [], "gpu_span records without GPUSPY_CUPTI=events")
    if not SANITIZED:  # gpuspy run puts libgpuspy before the sanitizer runtime
        e = dict(os.environ)
        e.pop("LD_PRELOAD", None)
        p = subprocess.run([GPUSPY, "run", "--dir", os.path.join(tmp, "r"), "--cupti", "events",
                            "--no-report", "--", "sh", "-c", "echo $GPUSPY_CUPTI"], env=e,
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.stdout == "events\n", f"gpuspy run --cupti events: {p.stdout!r} {p.stderr!r}")


@test
def gpu_time_from_events_failures(tmp):
    """Events that cannot be recorded: the program runs unchanged, nothing
    is timed, one warning at exit says how many intervals were not. A
    stream being captured into a graph gets no event."""
    p = run("prog_events", env={"GPUSPY_CUPTI": "events", "GPUSPY_QUIET": "0",
                                "FAKECUDA_FAIL": "cuEventRecord:999"}, tmp=tmp)
    check(p.stdout == "events done\n", p.stdout)
    lines = [l for l in p.stderr.splitlines() if "GPUSPY_CUPTI=events" in l]
    check(lines == ["gpuspy: GPUSPY_CUPTI=events: 7 phase intervals could not be timed on the GPU"],
          f"stderr {p.stderr!r}")
    check(spans(only_trace(tmp)[1]) == [], "spans recorded although no event could be")
    q = run("prog_events", preload=False, tmp=tmp)
    check(q.stdout == p.stdout, "output differs from the untraced run")
    # More streams than gpuspy follows: the first 64 are timed, one warning.
    d = os.path.join(tmp, "many")
    os.makedirs(d)
    p = run("prog_events", ["many"], env={"GPUSPY_CUPTI": "events", "GPUSPY_QUIET": "0"}, tmp=d)
    check(p.stdout == "many done\n", p.stdout)
    check(p.stderr.count("more than 64 streams") == 1, f"stderr {p.stderr!r}")
    check(spans(only_trace(d)[1]) == [("many", 1000, "stream")] * 64, "64 streams timed")
    # A stream being captured into a graph is left alone (s1 is 0x7010).
    d = os.path.join(tmp, "capture")
    os.makedirs(d)
    run("prog_events", env={"GPUSPY_CUPTI": "events", "FAKECUDA_CAPTURING": "0x7010"}, tmp=d)
    got = spans(only_trace(d)[1])
    check(got == sorted([("multi", 20000, "stream"), ("multi", 5000, "legacy"), ("threaded", 7000, "stream")]),
          f"spans with s1 capturing {got}")


@test
def torch_forward_hooks_learned(tmp):
    """The global module hook is on for the first GPUSPY_TORCH_LEARN_STEPS
    steps only; then the model it saw begin forward carries the hook, and
    the phases stay the same."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    for learn, hooks in (("", "global 0 model 1"), ("2", "global 0 model 1"), ("9", "global 1 model 0"),
                         ("0", "global 1 model 0"), ("x", "global 0 model 1"), ("-1", "global 0 model 1")):
        d = os.path.join(tmp, "learn" + learn)
        os.makedirs(d)
        p = run_py([TORCH_LOOP, "5", "-1", "hooks"], d, env={"GPUSPY_TORCH_LEARN_STEPS": learn} if learn else {})
        check(p.returncode == 0 and p.stdout == f"done 5 steps\nhooks {hooks}\n", f"learn {learn!r}: {p.stdout!r}")
        warned = f"GPUSPY_TORCH_LEARN_STEPS={learn} is not a number (0 or more); using 3" in p.stderr
        check(warned == (learn in ("x", "-1")), f"learn {learn!r}: {p.stderr!r}")
        _, ev = only_trace(d)
        got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
        check(got == torch_sequence(5), f"learn {learn!r}: torch phases {got}")


@test
def torch_forward_hooks_relearn_each_pass(tmp):
    """Each new pass over a DataLoader watches every module call again until
    GPUSPY_TORCH_LEARN_STEPS steps later: a second model first used in a
    validation pass after learning still begins forward, and both models
    carry the hook afterwards."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    p = run_py([os.path.join(ROOT, "tests", "torch_two_models.py")], tmp,
               env={"GPUSPY_TORCH_LEARN_STEPS": "2"})
    check(p.returncode == 0 and p.stdout == "hooks global 0 a 1 b 1\ndone\n", f"{p.stdout!r} {p.stderr[-300:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    B, N = "phase_begin", "phase_end"

    def train(s):
        return [(B, "data", s), (N, "data", s), (B, "optimizer", s), (N, "optimizer", s),
                (B, "forward", s), (N, "forward", s), (B, "backward", s), (N, "backward", s),
                (B, "optimizer", s), (N, "optimizer", s)]

    def val(s):  # B's pass: the lazy data phase of the ended pass's last
        # next() runs on into the first batch, then B's forward per batch
        return [(B, "data", s), (N, "data", s), (B, "forward", s), (N, "forward", s)] * 3
    want = train(0) + train(1) + train(2) + val(3) + train(3) + train(4) + train(5) + val(6) + \
        [(B, "data", 6), (N, "data", 6)]
    check(got == want, f"phases {got}")


@test
def torch_pause_resume(tmp):
    """gpuspy_torch.pause()/resume() around step 1's body: its phases are not
    recorded, the open data phase is closed first, the module hook is off
    while paused (module calls take PyTorch's fast path) and back after."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    p = run_py([TORCH_LOOP, "3", "1"], tmp)
    check(p.returncode == 0 and p.stdout == "paused hooks 0\nresumed hooks 1\ndone 3 steps\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev if e["kind"].startswith(("phase", "mark"))]
    full = torch_sequence(3)
    want = full[:10] + [full[10], ("phase_end", "data", 1), ("mark", "(paused)", None),
                        ("mark", "(resumed)", None)] + full[20:]
    check(got == want, f"phases around a pause {got}")


@test
def lockstep_bench_hands_out_turns(tmp):
    """bench/gpu_lockstep.py without a GPU (bench/lockstep_stub.py speaks
    loops.py's --lockstep): every process runs exactly WINDOWS windows, each
    round hands the turn to every mode once in a random order, the table has
    a row per mode in order over all rounds but the first and last, with
    the CPU per step the stub reported (median, added to untraced's) and its
    context switches and CPUs (lockstep_sched.txt), a gpuspy variant mode gets its
    variables, a replica ("gpuspy #2") its mode's, a bare collector variant its options,
    ALT_LIB=1 the other build (LOCKSTEP_ALT_LIB, refused in one line when missing) and HOST_SHIM=1
    the host library beside it, and BLOCKING_SYNC=1 reaches every loop."""
    if SANITIZED:
        raise Skip("the bench is not the library")
    work, out = os.path.join(tmp, "w"), os.path.join(tmp, "o")
    os.makedirs(work)
    os.makedirs(out)
    modes = ["untraced", "untraced b", "gpuspy", "gpuspy GPUSPY_CUPTI=on", "gpuspy GPUSPY_CUPTI=on #2",
             "bare cupti CUPTI_COUNT_TS=1 CUPTI_COUNT_CB=1", "gpuspy ALT_LIB=1 HOST_SHIM=1"]
    alt = os.path.join(tmp, "alt", "libgpuspy.so")
    os.makedirs(os.path.dirname(alt))
    open(alt, "w").close()
    env = dict(os.environ, LOOP_CMD=f"{sys.executable} {os.path.join(ROOT, 'bench', 'lockstep_stub.py')}",
               WINDOWS="7", MODES=",".join(modes + ["nonsense #2"]), STUB_SLOW_on="1.2", BLOCKING_SYNC="1",
               LOCKSTEP_ALT_LIB=alt)
    env.pop("PIN_CPUS", None)
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu_lockstep.py"), work, out], env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"bench failed: {p.stderr[-800:]}")
    rows = [l.split(" | ")[0].lstrip("| ") for l in p.stdout.splitlines() if l.startswith("| ") and "---" not in l]
    check(rows == ["mode"] + modes, f"table rows {rows}")
    check("5 rounds of 50-step windows (the first and last left out)" in p.stdout and
          "waits block (--blocking-sync)" in p.stdout, f"rounds: {p.stdout[:400]}")
    # the stub's CPU per step: 1000 us x its slowdown + window number mod 3 (rounds 1..5: +1 +2 +0 +1 +2)
    cells = {l.split(" | ")[0].lstrip("| "): [c.strip() for c in l.strip(" |").split(" | ")[-3:]]
             for l in p.stdout.splitlines() if l.startswith("| ") and "---" not in l}
    check(cells["untraced"] == ["1001.0", "+0.0", "1101.0"] and
          cells["gpuspy GPUSPY_CUPTI=on"] == ["1201.0", "+200.0", "1301.0"] and
          cells["gpuspy GPUSPY_CUPTI=on #2"] == ["1201.0", "+200.0", "1301.0"], f"CPU columns {cells}")
    cpu = open(os.path.join(out, "lockstep_cpu.txt")).read().splitlines()
    check(len(cpu) == 8 and cpu[0] == "# loop=mlp" and
          cpu[1].startswith("untraced: 1000.0/1100.0 1001.0/1101.0 1002.0/1102.0 1000.0/"), f"lockstep_cpu.txt {cpu[:2]}")
    sched = open(os.path.join(out, "lockstep_sched.txt")).read().splitlines()
    check(len(sched) == 7 and sched[0] == "untraced: 0@0 1@1 0@2 1@3 0@0 1@1 0@2", f"lockstep_sched.txt {sched[:2]}")
    lines = open(os.path.join(out, "lockstep_rates.txt")).read().splitlines()
    check(lines[0] == "# loop=mlp", f"rates file's first line {lines[0]!r}")
    rates = dict(l.split(": ", 1) for l in lines[1:])
    check(list(rates) == modes and all(len(r.split()) == 7 for r in rates.values()), f"rates {rates}")
    orders = [l.split() for l in open(os.path.join(out, "lockstep_order.txt")).read().splitlines()]
    names = sorted(m.replace(" ", "_") for m in modes)
    check(len(orders) == 7 and all(sorted(o) == names for o in orders), f"turn orders {orders}")
    check(len({tuple(o) for o in orders}) > 1, "the same order every round")
    seen = {m: open(os.path.join(work, "lockstep-" + re.sub(r"[ +/#]", "_", m), "stub_env.txt")).read().split()
            for m in modes}
    check(seen["untraced"] == ["GPUSPY_CUPTI=", "LD_PRELOAD=", "blocking"] and
          seen["gpuspy"] == ["GPUSPY_CUPTI=off", "LD_PRELOAD=" + LIB, "blocking"] and
          seen["gpuspy GPUSPY_CUPTI=on"] == ["GPUSPY_CUPTI=on", "LD_PRELOAD=" + LIB, "blocking"] and
          seen["gpuspy GPUSPY_CUPTI=on #2"] == seen["gpuspy GPUSPY_CUPTI=on"] and
          seen["bare cupti CUPTI_COUNT_TS=1 CUPTI_COUNT_CB=1"] ==
          ["GPUSPY_CUPTI=", "LD_PRELOAD=", "blocking", "CUPTI_COUNT_CB=1", "CUPTI_COUNT_TS=1"] and
          seen["gpuspy ALT_LIB=1 HOST_SHIM=1"] ==
          ["GPUSPY_CUPTI=off", "LD_PRELOAD=" + alt + ":" + os.path.join(tmp, "alt", "libgpuspy-host.so"),
           "blocking"],
          f"mode environments {seen}")
    env["LOCKSTEP_ALT_LIB"] = os.path.join(tmp, "missing.so")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu_lockstep.py"), work, out], env=env,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and p.stderr.count("\n") == 1 and "LOCKSTEP_ALT_LIB" in p.stderr,
          f"a missing other build: rc {p.returncode} {p.stderr!r}")


@test
def overhead_table_pools_lockstep_runs(tmp):
    """bench/overhead_table.py on two made-up lock-step runs of 6 windows
    (a conv one named by its first line, an mlp one without): rounds 1..4 of
    each, ratios to the untraced window of the same round, the CPU each
    mode adds to untraced's per round; intervals from the same rounds; a
    replica ("bare cupti #2") is a row of its own, pooled with its mode's
    other processes in a row of their own, and a second process of its
    mode in the per-process list, with the median of the processes' medians
    and, from six processes, its order-statistics interval (x(3)..x(10) of
    twelve); an A/B of one setting ("gpuspy ALT_LIB=1") divided by plain
    gpuspy, each side its processes' mean; six gpuspy+cupti #k / bare cupti #k
    pairs, each pair's median one draw of a by-pair row."""
    a, b, c = (os.path.join(tmp, n) for n in ("a_rates.txt", "b_rates.txt", "a_cpu.txt"))
    with open(a, "w") as f:  # gpuspy at 0.9 of untraced in rounds 1..4; rounds 0 and 5 wild
        f.write("# loop=conv\nuntraced: 100 200 300 400 500 600\ngpuspy: 500 180 270 360 450 10\n")
    with open(b, "w") as f:  # no loop line: mlp; bare cupti at 0.8, gpuspy+cupti 0.75 of bare
        f.write("untraced: 100 100 100 100 100 100\nbare cupti: 80 80 80 80 80 80\n"
                "gpuspy+cupti: 60 60 60 60 60 60\nbare cupti #2: 1 70 70 70 70 1\n")
    with open(c, "w") as f:  # main/all threads us per step
        f.write("# loop=conv\nuntraced: 9/9 1000/1100 1000/1100 1000/1100 1000/1100 9/9\n"
                "gpuspy: 1/1 1040/1160 1050/1150 1060/1170 1050/1190 1/1\n")
    d = os.path.join(tmp, "ab_rates.txt")
    with open(d, "w") as f:  # an A/B of a setting: means 84 against 80 in rounds 1..4
        f.write("# loop=ab\nuntraced: 100 100 100 100 100 100\ngpuspy: 1 90 90 90 90 1\n"
                "gpuspy #2: 1 70 70 70 70 1\ngpuspy ALT_LIB=1: 1 88 88 88 88 1\n"
                "gpuspy ALT_LIB=1 #2: 1 80 80 80 80 1\n")
    e = os.path.join(tmp, "twelve_rates.txt")
    with open(e, "w") as f:  # twelve gpuspy processes at 0.91..1.02 of untraced in rounds 1..4
        f.write("# loop=twelve\nuntraced: 100 100 100 100 100 100\n" + "".join(
            f"gpuspy{' #%d' % k if k > 1 else ''}: 1 {90 + k} {90 + k} {90 + k} {90 + k} 1\n" for k in range(1, 13)))
    g = os.path.join(tmp, "pairs_rates.txt")
    with open(g, "w") as f:  # six pairs: gpuspy+cupti #k at 0.91..0.96 of bare cupti #k in rounds 1..4
        f.write("# loop=pairs\nuntraced: 100 100 100 100 100 100\n" + "".join(
            f"gpuspy+cupti{s}: 1 {90 + k} {90 + k} {90 + k} {90 + k} 1\nbare cupti{s}: 1 99 99 99 99 1\n"
            for k, s in ((k, " #%d" % k if k > 1 else "") for k in range(1, 7))))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "overhead_table.py"), a, b, c, d, e, g],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"failed: {p.stderr[-500:]}")
    rows = [l for l in p.stdout.splitlines() if l.startswith("| ") and "---" not in l and "| loop |" not in l]
    ab = [l for l in rows if l.startswith("| ab ")]
    twelve = [l for l in rows if l.startswith("| twelve ") and "| 12 |" in l]
    pairs = [l for l in rows if l.startswith("| pairs ") and "by pair" in l]
    rows = [l for l in rows if not l.startswith(("| ab ", "| twelve ", "| pairs "))]
    check(pairs == ["| pairs (lock step) | gpuspy+cupti / bare cupti, by pair | 6 | "
                    + " ".join(f"{(90 + k) / 99:.3f}" for k in range(1, 7))
                    + f" | {91 / 99:.3f}..{96 / 99:.3f} | {93.5 / 99:.3f} | {91 / 99:.3f}..{96 / 99:.3f} |"],
          f"pairs {pairs}")
    check(twelve == ["| twelve (lock step) | gpuspy | 12 | " + " ".join(f"{0.9 + k / 100:.3f}" for k in range(1, 13))
                  + " | 0.910..1.020 | 0.965 | 0.930..1.000 |"], f"twelve processes {twelve}")
    check(ab == ["| ab (lock step) | gpuspy / untraced | 4 | 0.900 | 0.900..0.900 |",
                 "| ab (lock step) | gpuspy #2 / untraced | 4 | 0.700 | 0.700..0.700 |",
                 "| ab (lock step) | gpuspy ALT_LIB=1 / untraced | 4 | 0.880 | 0.880..0.880 |",
                 "| ab (lock step) | gpuspy ALT_LIB=1 #2 / untraced | 4 | 0.800 | 0.800..0.800 |",
                 "| ab (lock step) | gpuspy, every process / untraced | 8 | 0.800 | 0.700..0.900 |",
                 "| ab (lock step) | gpuspy ALT_LIB=1, every process / untraced | 8 | 0.840 | 0.800..0.880 |",
                 "| ab (lock step) | gpuspy ALT_LIB=1 / gpuspy, the processes' mean per round | 4 | 1.050 "
                 "| 1.050..1.050 |",
                 "| ab (lock step) | gpuspy | 2 | 0.900 0.700 | 0.700..0.900 | 0.800 | (too few) |",
                 "| ab (lock step) | gpuspy ALT_LIB=1 | 2 | 0.880 0.800 | 0.800..0.880 | 0.840 | (too few) |"],
          f"A/B rows {ab}")
    want = ["| conv (lock step) | gpuspy / untraced | 4 | 0.900 | 0.900..0.900 |",
            "| mlp (lock step) | bare cupti / untraced | 4 | 0.800 | 0.800..0.800 |",
            "| mlp (lock step) | gpuspy+cupti / untraced | 4 | 0.600 | 0.600..0.600 |",
            "| mlp (lock step) | bare cupti #2 / untraced | 4 | 0.700 | 0.700..0.700 |",
            "| mlp (lock step) | gpuspy+cupti / bare cupti | 4 | 0.750 | 0.750..0.750 |",
            "| mlp (lock step) | bare cupti, every process / untraced | 8 | 0.750 | 0.700..0.800 |",
            "| conv (lock step) | gpuspy | 4 | +50.0 | +40.0..+60.0 | +65.0 | +50.0..+90.0 |",
            "| mlp (lock step) | bare cupti | 2 | 0.800 0.700 | 0.700..0.800 | 0.750 | (too few) |"]
    check(rows == want, f"table rows {rows}")


@test
def lockstep_sched_reads_switches_by_cpu(tmp):
    """bench/lockstep_sched.py on a made-up run of 6 windows (the first and
    last left out): each process's median ratio to untraced, its involuntary
    switches a window (mean, max), its rate over its own median on each CPU
    it ended a window on, and all processes by CPU; a run without an
    untraced process and an odd number of files are refused in one line."""
    rates, sched = os.path.join(tmp, "rates.txt"), os.path.join(tmp, "sched.txt")
    with open(rates, "w") as f:
        f.write("# loop=mlp\nuntraced: 1 100 100 100 100 1\ngpuspy: 1 90 90 45 90 1\n")
    with open(sched, "w") as f:
        f.write("untraced: 9@7 0@2 0@2 1@3 0@3 9@7\ngpuspy: 9@7 0@4 2@4 4@5 0@4 9@7\n")
    tool = [sys.executable, os.path.join(ROOT, "bench", "lockstep_sched.py")]
    p = subprocess.run(tool + [rates, sched], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"failed: {p.stderr[-500:]}")
    rows = [l for l in p.stdout.splitlines() if l.startswith("| ") and "---" not in l and "| process |" not in l]
    check(p.stdout.startswith(f"{rates} (4 windows)\n"), f"heading {p.stdout[:80]!r}")
    check(rows == ["| untraced | 1.000 | 0.25, 1 | 2: 1.000 (2) 3: 1.000 (2) |",
                   "| gpuspy | 0.900 | 1.50, 4 | 4: 1.000 (3) 5: 0.500 (1) |",
                   "| all processes | | | 2: 1.000 (2) 3: 1.000 (2) 4: 1.000 (3) 5: 0.500 (1) |"],
          f"rows {rows}")
    with open(rates, "w") as f:
        f.write("gpuspy: 1 90 90 45 90 1\n")
    for args, want in (([rates, sched], "no untraced process"), ([rates], "usage:")):
        p = subprocess.run(tool + args, capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and want in p.stderr and len(p.stderr.splitlines()) == 1,
              f"{args}: {p.returncode} {p.stderr!r}")


@test
def torch_helper_phase_call_is_a_builtin(tmp):
    """The helper calls libgpuspy through a METH_FASTCALL builtin
    (gpuspy_torch_fast), not ctypes: a good call records its phase and step;
    calls it cannot read (wrong types, counts, a negative step) return None,
    raise nothing and record nothing."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    script = ("import gpuspy_torch as g\n"
              "f = g._lib.gpuspy_torch_phase\n"
              "print(type(g._lib).__name__, type(f).__name__)\n"
              "print([f(*a) for a in ((b'x', 7, 1), ('x', 1, 1), (b'x', 'a', 1), (b'x',), (), "
              "(b'x', -1, 1), (b'x', 1, None), (b'x', 2**64, 1), (b'x', 7, 0))])\n")
    p = run_py(["-c", script], tmp)
    check(p.returncode == 0 and p.stdout == "_Fast builtin_function_or_method\n" + repr([None] * 9) + "\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev]
    check(got == [("phase_begin", "x", 7), ("phase_end", "x", 7)], f"recorded {got}")


@test
def torch_helper_builtins_and_python_version_agree(tmp):
    """The helper's per-call work (wrappers, the models' hook, the phase
    state) runs in libgpuspy's builtins when the process has the Python C
    API: after learning, the model's hook is the builtin; the phases, steps
    and order are those of the helper's Python version (forced by
    bench/helper_probe, GPUSPY_PROBE=python), over 5 steps and a pause. The
    call builtin refuses a bad call with TypeError, passes the wrapped
    function's exception and result through, still counts a step that
    raised, and records one phase for nested calls of one thread."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    probe = {"PYTHONPATH": os.path.join(ROOT, "bench", "helper_probe")}
    seqs = {}
    for mode in ("builtins", "python"):
        d = os.path.join(tmp, mode)
        os.makedirs(d)
        env = dict(probe, GPUSPY_PROBE="python") if mode == "python" else probe
        p = run_py(["-c", "import sys, gpuspy_torch as g; sys.argv = ['x', '5', '2', 'hooks']; "
                    f"exec(open({TORCH_LOOP!r}).read()); "
                    "print(type(model._forward_pre_hooks[next(iter(model._forward_pre_hooks))]).__name__, "
                    "g._C is None)"], d, env=env)
        want_hook = "builtin_function_or_method False" if mode == "builtins" else "function True"
        check(p.returncode == 0 and p.stdout.splitlines() == [
            "paused hooks 0", "resumed hooks 0", "done 5 steps", "hooks global 0 model 1", want_hook],
            f"{mode}: {p.returncode} {p.stdout!r} {p.stderr[-500:]}")
        _, ev = only_trace(d)
        seqs[mode] = [(e["kind"], e["name"], e.get("step")) for e in ev
                      if e["kind"].startswith(("phase", "mark"))]
    check(seqs["builtins"] == seqs["python"] and len(seqs["python"]) == 46,
          f"builtins {seqs['builtins']} vs python {seqs['python']}")
    script = ("import gpuspy_torch as g\n"
              "c = g._C\n"
              "for a in ((), (print,), (print, 9, (), {}), (print, 'x', (), {}), (print, 0, (), {}, 1, 2)):\n"
              "    try:\n"
              "        c.call(*a); print('no error', a)\n"
              "    except TypeError as e:\n"
              "        print('TypeError')\n"
              "def bad(): raise ValueError('boom')\n"
              "try:\n"
              "    c.call(bad, 3 | 0x20, (), {})\n"
              "except ValueError as e:\n"
              "    print('raised', e, c.ctl(0, 0))\n"
              "inner = lambda x, y=0: x + y\n"
              "outer = lambda x: c.call(inner, 2, (x,), {'y': 1})\n"
              "print(c.call(outer, 2, (41,), {}), c.ctl(0, 0), c.ctl(4, 0))\n"
              "c.ctl(3, 0); print(c.ctl(4, 0)); c.ctl(2, 0); print(c.ctl(4, 0))\n")
    d = os.path.join(tmp, "calls")
    os.makedirs(d)
    p = run_py(["-c", script], d)
    check(p.returncode == 0 and p.stdout.splitlines() == ["TypeError"] * 5 + ["raised boom 1", "42 1 0", "1", "0"],
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(d)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev]
    check(got == [("phase_begin", "optimizer", 0), ("phase_end", "optimizer", 0),
                  ("phase_begin", "backward", 1), ("phase_end", "backward", 1),
                  ("phase_begin", "data", 1), ("phase_end", "data", 1)], f"recorded {got}")


@test
def torch_hooks_opt_out_and_chain(tmp):
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")
    for off in ("0", "off"):
        p = run_py([TORCH_LOOP, "2"], tmp, env={"GPUSPY_TORCH": off})
        check(p.returncode == 0 and traces(tmp) == [], f"GPUSPY_TORCH={off} still recorded phases")
    user = os.path.join(tmp, "user")
    os.makedirs(user)
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys.stderr.write('user sitecustomize ran\\n')\n")
    code = ("import os, sys, torch; print(os.environ.get('PYTHONPATH')); "
            f"print(any(os.path.abspath(p) == {os.path.join(ROOT, 'python')!r} for p in sys.path)); "
            "torch.nn.Linear(2, 2)(torch.zeros(1, 2))")
    p = run_py(["-c", code], tmp, env={"PYTHONPATH": user})
    check(p.returncode == 0 and "user sitecustomize ran" in p.stderr, f"user sitecustomize: {p.stderr}")
    check(p.stdout.splitlines() == [user, "False"], f"PYTHONPATH/sys.path not restored: {p.stdout}")
    _, ev = only_trace(tmp)
    check(phases_of(ev) == [("phase_begin", "forward"), ("phase_end", "forward")],
          f"forward phase missing with a user sitecustomize: {phases_of(ev)}")
    # Not Python: nothing changes.
    e = dict(os.environ, LD_PRELOAD=LIB, PYTHONPATH="/x", GPUSPY_DIR=tmp)
    p = subprocess.run(["/bin/sh", "-c", "echo $PYTHONPATH"], env=e, capture_output=True, text=True)
    check(p.stdout == "/x\n", "PYTHONPATH changed in a process that is not Python")


@test
def examples_diagnoses(tmp):
    """examples/*.cu, built by nvcc with the shared runtime, on the doubles."""
    want = {"pinned_vs_pageable": "pageable_copies", "data_starved": "data_starvation",
            "alloc_churn": "allocation_churn"}
    for ex, diag in want.items():
        exe = os.path.join(BIN, "ex_" + ex)
        check(os.path.exists(exe), f"{exe} not built (make examples needs nvcc)")
        d = os.path.join(tmp, ex)
        os.makedirs(d)
        run("ex_" + ex, tmp=d)
        o = report_json(d)
        ids = [x["id"] for x in o["diagnoses"]]
        check(diag in ids, f"{ex}: expected diagnosis {diag}, got {ids}")
    o = report_json(os.path.join(tmp, "alloc_churn"))
    step = [x for x in o["phases"] if x["name"] == "step"][0]
    check(step["count"] == 100 and step["alloc"]["device"]["count"] == 100
          and step["alloc"]["device"]["bytes"] == 100 * (32 << 20) and step["launch"]["count"] == 100,
          f"alloc_churn step phase {step['alloc']['device']} {step['launch']}")


@test
def report_gpu_timing_arithmetic(tmp):
    """tests/golden/gpu.jsonl (made by make_gpu_trace.py): GPU records joined to their launches."""
    o = report_json(os.path.join(ROOT, "tests", "golden", "gpu.jsonl"))
    check(o["timing"] == "gpu", "timing")
    ph = {p["name"]: p for p in o["phases"]}
    us = 1000
    check(ph["forward"]["launch"]["gpu_ns"] == 460 * us and ph["forward"]["launch"]["gpu_count"] == 10,
          f"forward GPU time {ph['forward']['launch']}")
    h2d = ph["data"]["copy"]["h2d"]["pageable"]
    check(h2d["gpu_ns"] == 40 * us and h2d["gpu_bytes"] == 2 << 20, f"data copies {h2d}")
    check(ph["data"]["gpu_busy_ns"] == 40 * us and ph["data"]["gpu_idle_ns"] == 760 * us, "data idle")
    d = o["gpu"]["devices"][0]
    check(d["busy_ns"] == 500 * us and d["idle_host_bound_ns"] == 995 * us and d["idle_other_ns"] == 40 * us
          and d["busy_in_phases_ns"] == 500 * us, f"device busy/idle {d}")
    g = o["gpu"]
    check(g["queue_delay_mean_ns"] == 110 * us and g["queue_delay_max_ns"] == 200 * us, f"queue {g}")
    check(g["graph_kernels"] == 6 and g["graph_kernel_ns"] == 240 * us and g["matched"] == g["records"] == 12,
          f"graph/match {g}")
    k = {x["name"]: (x["gpu_count"], x["gpu_ns"]) for x in o["kernels"]}
    check(k["graph_kernel"] == (6, 240 * us) and k["gemm"] == (2, 200 * us), f"kernels {k}")
    ids = [x["id"] for x in o["diagnoses"]]
    check(ids == ["pageable_copies", "data_starvation"], f"diagnoses {ids}")
    # CUPTI hands records over late and in overlapping buffers: the same
    # trace with its GPU records delivered last, in reverse order, must give
    # the same device timeline and per-phase GPU numbers.
    lines = open(os.path.join(ROOT, "tests", "golden", "gpu.jsonl")).read().splitlines()
    gpu_lines = [l for l in lines if '"kind":"gpu_' in l]
    late = [l for l in lines if l not in gpu_lines] + gpu_lines[::-1]
    path = os.path.join(tmp, "late.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(late) + "\n")
    q = report_json(path)
    check(q["gpu"]["devices"] == o["gpu"]["devices"], f"device timeline depends on delivery order: "
          f"{q['gpu']['devices']} vs {o['gpu']['devices']}")
    for a, b in zip(q["phases"], o["phases"]):
        check(a["gpu_busy_ns"] == b["gpu_busy_ns"] and a["launch"]["gpu_ns"] == b["launch"]["gpu_ns"],
              f"phase {a['name']} GPU numbers depend on delivery order")
    # A 10 us kernel between the steps, outside phases: busy 510 us, of it
    # 500 in phases, which the text gives of the 1.8 ms in phases.
    extra = {"type": "event", "kind": "gpu_kernel", "api": "cupti_kernel", "tid": 200, "start_ns": 1_000_950_000,
             "end_ns": 1_000_960_000, "result": 0, "device": 0, "stream": 7, "corr": 999, "name": "between"}
    path = os.path.join(tmp, "between.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines + [json.dumps(extra)]) + "\n")
    d = report_json(path)["gpu"]["devices"][0]
    check(d["busy_ns"] == 510 * us and d["busy_in_phases_ns"] == 500 * us, f"outside phases: {d}")
    check("  device 0: busy 510.0 us of 1.9 ms (26.8%); idle gaps: " in report_text(path)
          and "\n    in phases: busy 500.0 us of 1.8 ms (27.8%)\n" in report_text(path), report_text(path))


# GPU timing from the CUPTI double (tests/doubles/fakecupti.c): its GPU runs
# each stream's work in order, a kernel grid_x us, a copy 10 bytes per ns, a
# memset 100, on gpuspy's clock (GPUSPY_CLOCK=mono: in ns).
CUPTI_ENV = {"GPUSPY_CUPTI": "on", "GPUSPY_CLOCK": "mono", "FAKECUPTI_STATS": "1"}
GPU_KIND = {"gpu_kernel": "launch", "gpu_copy": "copy", "gpu_memset": "memset"}


def cupti_join(ev):
    """The host launches, copies and memsets by CUPTI correlation id, and the
    GPU records; every GPU record must join a host record of its kind."""
    host = {e["corr"]: e for e in ev if e["kind"] in ("launch", "copy", "memset") and "corr" in e}
    gpu = [e for e in ev if e["kind"] in GPU_KIND]
    return host, gpu


def cupti_stats(p):
    """(callbacks made, records written, records handed back from inside a
    context's destruction)."""
    m = re.search(r"fakecupti: (\d+) callbacks, (\d+) records, (\d+) handed back at context destroy", p.stderr)
    check(m, f"no fakecupti statistics in {p.stderr!r}")
    return int(m[1]), int(m[2]), int(m[3])


@test
def cupti_records_joined_to_their_calls(tmp):
    """GPUSPY_CUPTI=on against the CUPTI double: prog_train's 69 kernels and 9
    copies come back as GPU records with the double's exact GPU times, each
    joined by correlation id to the call that queued it (which got one CUPTI
    callback at entry and one at exit), and the report's per-phase GPU time
    is theirs; the same when CUPTI hands the records back in small buffers
    on its own thread. Without an NVIDIA driver the default leaves CUPTI
    alone."""
    want_kernels = {("fwd_gemm", 64000): 30, ("bwd_gemm", 64000): 36, ("sgd_update", 32000): 3}
    want_copies = {("h2d", "pageable", 1 << 20, 104857): 6, ("d2h", "pageable", 4, 0): 3}
    untraced = run("prog_train", ["3", "100"], preload=False, tmp=tmp)
    # GPUSPY_CUPTI=auto (the default) without an NVIDIA driver: CUPTI stays
    # unloaded although the double is on the library path.
    d = os.path.join(tmp, "auto")
    os.makedirs(d)
    p = run("prog_train", ["3", "100"], env={"FAKECUPTI_STATS": "1"}, tmp=d)
    if not os.path.exists("/dev/nvidiactl"):
        check("fakecupti" not in p.stderr and only_trace(d)[0]["gpu_timing"] == "none",
              f"auto without a driver: {p.stderr!r}")
    for cap in ("", "2048"):
        d = os.path.join(tmp, cap or "whole")
        os.makedirs(d)
        p = run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, FAKECUPTI_BUFFER=cap), tmp=d)
        check(p.stdout == untraced.stdout, f"output {p.stdout!r}")
        check(cupti_stats(p) == (2 * 78, 78, 0), f"callbacks, records {cupti_stats(p)}")
        head, ev = only_trace(d)
        check(head["gpu_timing"] == "cupti", f"gpu_timing {head['gpu_timing']}")
        host, gpu = cupti_join(ev)
        kernels, copies = {}, {}
        for g in gpu:
            k = ((g["name"], g["end_ns"] - g["start_ns"]) if g["kind"] == "gpu_kernel" else
                 (g["dir"], g["host_mem"], g["bytes"], g["end_ns"] - g["start_ns"]))
            c = kernels if g["kind"] == "gpu_kernel" else copies
            c[k] = c.get(k, 0) + 1
        check(kernels == want_kernels, f"{cap}: kernels {kernels}")
        check(copies == want_copies, f"{cap}: copies {copies}")
        check(sorted(host) == sorted(g["corr"] for g in gpu) and len(host) == 78,
              f"{cap}: {len(host)} host calls with a correlation id for {len(gpu)} GPU records")
        for g in gpu:
            h = host[g["corr"]]
            check(h["kind"] == GPU_KIND[g["kind"]] and g["start_ns"] >= h["start_ns"] + 1000,
                  f"{cap}: GPU record {g} joined to {h}")
            check(g["kind"] != "gpu_copy" or (g["bytes"], g["dir"]) == (h["bytes"], h["dir"]),
                  f"{cap}: copy {g} vs {h}")
        on_cupti_thread = sum(1 for g in gpu if g["tid"] != head["pid"])
        check(on_cupti_thread > 0 if cap else on_cupti_thread == 0,
              f"{cap}: {on_cupti_thread} GPU records written on CUPTI's thread")
        o = report_json(os.path.join(d, traces(d)[0]))
        check(o["timing"] == "gpu", o["timing"])
        ph = {x["name"]: x for x in o["phases"]}
        got = {n: (ph[n]["launch"]["gpu_count"], ph[n]["launch"]["gpu_ns"])
               for n in ("forward", "backward", "optimizer")}
        check(got == {"forward": (30, 3 * 640000), "backward": (36, 3 * 768000), "optimizer": (3, 3 * 32000)},
              f"{cap}: per-phase GPU time {got}")
        h2d = ph["data"]["copy"]["h2d"]["pageable"]
        check((h2d["gpu_bytes"], h2d["gpu_ns"]) == (6 << 20, 6 * 104857), f"{cap}: data copies {h2d}")
        check(o["gpu"]["matched"] == o["gpu"]["records"] == 78, f"{cap}: matched {o['gpu']}")


@test
def cupti_graphs_memsets_pause_holders_and_injection(tmp):
    """The CUPTI double on prog_drv (every family once): each memset's and
    copy's GPU record has its call's bytes and direction, one record for
    every copy but those between two contexts (CUPTI's peer-to-peer kind,
    which gpuspy does not enable), 2D, 3D and batched copies included (a
    batch: one record of its summed bytes, as on the H200); the graph launch's three kernels
    carry its correlation id and graph id. Paused (prog_train's second step):
    no callbacks and no join for that step, its GPU records still come.
    Another tool holding CUPTI: one warning, host timing, output unchanged.
    CUDA_INJECTION64_PATH=libgpuspy.so without LD_PRELOAD: the GPU records
    alone, and no correlation callbacks (nothing to join them to)."""
    d = os.path.join(tmp, "drv")
    os.makedirs(d)
    run("prog_drv", env=CUPTI_ENV, tmp=d)
    _, ev = only_trace(d)
    host, gpu = cupti_join(ev)
    for g in gpu:
        h = host.get(g["corr"])
        check(h and h["kind"] == GPU_KIND[g["kind"]], f"GPU record {g} joined to {h}")
        check(g["kind"] == "gpu_kernel" or g["bytes"] == h["bytes"], f"bytes of {g} vs {h}")
        check(g["kind"] != "gpu_copy" or g["dir"] == h["dir"], f"direction of {g} vs {h}")
    timed = {g["corr"] for g in gpu if g["kind"] == "gpu_copy"}
    copies = [(h["api"], h["bytes"], h["corr"] in timed) for h in host.values() if h["kind"] == "copy"]
    want = [(api, n, d != "p2p")
            for kind, api, n, d, *_ in drv_expected(False) if kind == "copy"]
    check(sorted(copies) == sorted(want), f"copies with a GPU record: {sorted(copies)}")
    sets = [h["api"] for h in host.values() if h["kind"] == "memset"]
    check(len(sets) == 12 and sum(1 for g in gpu if g["kind"] == "gpu_memset") == 12, f"memsets {sets}")
    graph = [h for h in host.values() if h["api"] == "cuGraphLaunch"]
    check(len(graph) == 1, f"graph launches {graph}")
    nodes = [g for g in gpu if g["corr"] == graph[0]["corr"]]
    check([(g["name"], g.get("graph_id"), g["end_ns"] - g["start_ns"]) for g in nodes] ==
          [("graph_node", graph[0]["graph"] & 0xffffffff, 2000)] * 3, f"graph kernels {nodes}")

    d = os.path.join(tmp, "pause")
    os.makedirs(d)
    p = run("prog_train", ["3", "100", "pause"], env=CUPTI_ENV, tmp=d)
    check(cupti_stats(p) == (2 * 52, 78, 0), f"paused step: callbacks, records {cupti_stats(p)}")
    o = report_json(os.path.join(d, traces(d)[0]))
    check((o["gpu"]["matched"], o["gpu"]["records"]) == (52, 78), f"paused step: matched {o['gpu']}")
    ph = {x["name"]: x for x in o["phases"]}
    check((ph["forward"]["launch"]["gpu_count"], ph["forward"]["launch"]["gpu_ns"]) == (20, 2 * 640000),
          f"paused step: forward {ph['forward']['launch']}")

    # GPU work still running at exit: the forced flush hands back 5 records
    # without times; they are left out, with one warning.
    d = os.path.join(tmp, "unfinished")
    os.makedirs(d)
    p = run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, FAKECUPTI_UNFINISHED="5", GPUSPY_QUIET="0"), tmp=d)
    warn = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
    check(warn == ["gpuspy: 5 GPU records had no times (GPU work still running at exit): left out of the trace"],
          f"unfinished: {p.stderr!r}")
    _, ev = only_trace(d)
    gpu = [e for e in ev if e["kind"] in GPU_KIND]
    check(len(gpu) == 73 and all(e["start_ns"] and e["end_ns"] >= e["start_ns"] for e in gpu),
          f"unfinished: {len(gpu)} GPU records")

    # A context destroyed mid-run (cuCtxDestroy): its records are handed
    # back from inside the destruction, before the output.
    d = os.path.join(tmp, "destroy")
    os.makedirs(d)
    p = run("prog_train", ["3", "100", "destroy"], env=CUPTI_ENV, tmp=d)
    check(cupti_stats(p) == (2 * 78, 78, 78), f"context destroyed: {cupti_stats(p)}")
    check(sum(1 for e in only_trace(d)[1] if e["kind"] in GPU_KIND) == 78, "context destroyed: GPU records")

    d = os.path.join(tmp, "held")
    os.makedirs(d)
    p = run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, FAKECUPTI_HELD="1", GPUSPY_QUIET="0"), tmp=d)
    check(p.stdout == "trained 3 steps\n", p.stdout)
    warn = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
    check(len(warn) == 1 and "another tool holds CUPTI" in warn[0], f"stderr {p.stderr!r}")
    head, ev = only_trace(d)
    check(head["gpu_timing"] == "in_use" and not cupti_join(ev)[1]
          and sum(1 for e in ev if e["kind"] == "launch") == 69, f"held: {head['gpu_timing']}")

    d = os.path.join(tmp, "inject")
    os.makedirs(d)
    env = dict(CUPTI_ENV, CUDA_INJECTION64_PATH=LIB)
    if SANITIZED:  # the sanitizer runtime alone, loaded first
        env["LD_PRELOAD"] = PRELOAD_PREFIX.rstrip(":")
    p = run("prog_train", ["3", "100"], preload=False, tmp=d, env=env)
    check(p.stdout == "trained 3 steps\n" and cupti_stats(p) == (0, 78, 0), f"injection: {p.stderr!r}")
    # Preloaded and named by CUDA_INJECTION64_PATH: the wrappers are in the
    # path, the callbacks stay on and every GPU record joins its call.
    both = os.path.join(tmp, "both")
    os.makedirs(both)
    q = run("prog_train", ["3", "100"], tmp=both, env=dict(CUPTI_ENV, CUDA_INJECTION64_PATH=LIB))
    host, gpu = cupti_join(only_trace(both)[1])
    check(cupti_stats(q) == (2 * 78, 78, 0) and sorted(host) == sorted(g["corr"] for g in gpu),
          f"preloaded and injected: {cupti_stats(q)}, {len(host)} joined of {len(gpu)}")
    head, ev = only_trace(d)
    kinds = {}
    for e in ev:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    check(head["gpu_timing"] == "cupti" and kinds == {"gpu_kernel": 69, "gpu_copy": 9},
          f"injection: {head['gpu_timing']} {kinds}")


@test
def cupti_records_reach_the_file_before_a_kill(tmp):
    """CUPTI's flush period hands back only full buffers (so does the double);
    gpuspy's flusher thread asks for the completed ones a second after the
    program goes quiet: a process idle after its GPU work has all 78 GPU
    records in its file within seconds, and keeps them when SIGKILLed; the
    report says what a killed process may lack."""
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_QUIET="1",
             LD_PRELOAD=PRELOAD_PREFIX + LIB, **CUPTI_ENV)
    p = subprocess.Popen([os.path.join(BIN, "prog_train"), "3", "100", "hold"], env=e,
                         stdout=subprocess.PIPE, text=True)
    seen, waited = -1, 0.0
    try:
        check(p.stdout.readline() == "trained 3 steps\n", "prog_train hold: no output")
        path = os.path.join(tmp, traces(tmp)[0])
        while waited < 30:  # quiet: the flusher asks within two seconds
            seen = sum(1 for x in dump(path)[1] if x["kind"] in GPU_KIND)
            if seen == 78:
                break
            time.sleep(0.25)
            waited += 0.25
    finally:
        p.kill()
        p.wait()
    check(seen == 78, f"{seen} of 78 GPU records in the file of the live process after {waited:.1f} s")
    head, ev = only_trace(tmp)
    check(head["state"] != "exited" and sum(1 for x in ev if x["kind"] in GPU_KIND) == 78,
          f"after SIGKILL: {head['state']}, {sum(1 for x in ev if x['kind'] in GPU_KIND)} GPU records")
    text = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True).stdout
    check("GPU records of its last seconds may be missing: CUPTI hands them over a second after the program "
          "goes quiet, every GPUSPY_CUPTI_FLUSH seconds (default 5) while it launches" in text,
          f"report of the killed process: {text[:600]}")


@test
def cupti_flushes_wait_while_the_program_launches(tmp):
    """While the program keeps launching, gpuspy's flusher asks CUPTI for
    its records every GPUSPY_CUPTI_FLUSH seconds (default 5), not every
    second (that slowed a launch-bound loop on the H200): prog_train
    launching for ~3.5 s (700 steps of 5 ms host work) gets at most one
    unforced flush by default and at least two with GPUSPY_CUPTI_FLUSH=1
    (three ticks; a slow machine may lose one); at most one, too, paused
    from the second step on and injected (CUDA_INJECTION64_PATH, no
    preload), where no callback tells whether it launches; every one of the
    700 x 26 GPU records is in the file each time. A bad value warns once
    and keeps 5. (On a loaded machine the run takes longer: one more flush
    is allowed per 5 s it took.)"""
    def flushes(name, env, args=(), preload=True):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        t0 = time.monotonic()
        p = run("prog_train", ["700", "5000", *args], env=dict(CUPTI_ENV, **env), tmp=d, preload=preload)
        took = time.monotonic() - t0
        m = re.search(r"(\d+) unforced flushes", p.stderr)
        check(m and p.stdout == "trained 700 steps\n", f"{name}: {p.stdout!r} {p.stderr!r}")
        gpu = sum(1 for x in only_trace(d)[1] if x["kind"] in GPU_KIND)
        check(gpu == 700 * 26, f"{name}: {gpu} GPU records")
        return int(m[1]), took, max(1, int(took // 5))
    n, took, most = flushes("default", {})
    check(n <= most, f"default: {n} flushes while launching for {took:.1f} s")
    n, took, _ = flushes("every1", {"GPUSPY_CUPTI_FLUSH": "1"})
    check(n >= 2, f"GPUSPY_CUPTI_FLUSH=1: {n} flushes while launching for {took:.1f} s")
    n, took, most = flushes("paused", {}, ["paused"])
    check(n <= most, f"paused: {n} flushes while launching for {took:.1f} s")
    inject = {"CUDA_INJECTION64_PATH": LIB}
    if SANITIZED:  # the sanitizer runtime alone, loaded first
        inject["LD_PRELOAD"] = PRELOAD_PREFIX.rstrip(":")
    n, took, most = flushes("injected", inject, preload=False)
    check(n <= most, f"injected: {n} flushes while launching for {took:.1f} s")
    for bad in ("0", "x", "-1", "3601", "5s"):
        p = run("prog_train", ["3", "100"], env=dict(CUPTI_ENV, GPUSPY_CUPTI_FLUSH=bad, GPUSPY_QUIET="0"),
                tmp=tmp)
        want = f"GPUSPY_CUPTI_FLUSH={bad} is not a number of seconds (1..3600); using 5"
        check(p.stdout == "trained 3 steps\n" and p.stderr.count(want) == 1, f"{bad}: {p.stderr!r}")


@test
def gpuspy_threads_take_no_signal(tmp):
    """gpuspy's threads (prefault; with CUPTI the flusher) are created with
    every signal blocked: a signal sent to the process while its only
    thread blocks it stays pending, and its handler then runs on that
    thread, as without gpuspy."""
    want = "trained 3 steps\nstill pending 1\nhandled by the main thread 1\n"
    for env in ({}, CUPTI_ENV):
        p = run("prog_train", ["3", "100", "signal"], env=env, tmp=tmp)
        check(p.stdout == want, f"{env}: {p.stdout!r}")
    check(run("prog_train", ["3", "100", "signal"], preload=False, tmp=tmp).stdout == want, "untraced run")


@test
def crashes_are_reported_and_unchanged(tmp):
    """Each way of dying: same exit status and output as without gpuspy, every
    committed event kept, and the trace says how the process ended."""
    cases = {"segv": -11, "abort": -6, "fpe": -8, "term": -15, "chain-after": -11,
             "recover-before": 0, "recover-after": 0}
    for mode, status in cases.items():
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        a = run("prog_crash", [mode], tmp=tmp, preload=False, expect_rc=status)
        b = run("prog_crash", [mode], tmp=tmp, preload=True, expect_rc=status)
        check(a.stdout == b.stdout, f"{mode}: output differs: {a.stdout!r} vs {b.stdout!r}")
        proc, ev = only_trace(tmp)
        launches = sum(1 for e in ev if e["kind"] == "launch")
        if status:
            check(proc["state"] == "signaled" and proc["exit_signal"] == -status,
                  f"{mode}: state {proc['state']} signal {proc.get('exit_signal')}")
            check(launches == 100, f"{mode}: {launches} of 100 launches kept")
        else:
            check(proc["state"] == "exited" and launches == 101 and "recovered" in b.stdout,
                  f"{mode}: recovered process recorded as {proc['state']} with {launches} launches")
    h = subprocess.run([GPUSPY, "report", tmp], capture_output=True, text=True)
    check("exited cleanly" in h.stdout, "report of the last case")
    run("prog_crash", ["abort"], tmp=tmp, expect_rc=-6)
    p = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True)
    check("died of a signal" in p.stdout and "signal 6" in p.stdout, "report does not say how it died")


@test
def unsafe_trace_directories_are_refused(tmp):
    real = os.path.join(tmp, "real")
    os.makedirs(real)
    link = os.path.join(tmp, "link")
    os.symlink(real, link)
    open_dir = os.path.join(tmp, "open")
    os.makedirs(open_dir)
    os.chmod(open_dir, 0o777)
    for d, what in ((link, "symbolic link"), (open_dir, "writable by anyone")):
        a = run("prog_rt_dyn", tmp=d, preload=False)
        b = run("prog_rt_dyn", tmp=d, env={"GPUSPY_QUIET": ""})
        check(a.stdout == b.stdout and a.returncode == b.returncode, f"{what}: the program changed")
        err = b.stderr.strip().splitlines()
        check(len(err) == 1 and what in err[0] and err[0].startswith("gpuspy: "), f"{what}: {err}")
        check(traces(real) == [] and traces(open_dir) == [], f"{what}: a trace was written")
    os.chmod(open_dir, 0o1777)  # sticky, like /tmp: accepted
    run("prog_rt_dyn", tmp=open_dir)
    check(len(traces(open_dir)) == 1, "a sticky world-writable directory was refused")
    t = os.path.join(open_dir, traces(open_dir)[0])
    check(os.stat(t).st_mode & 0o777 == 0o600, f"trace mode {oct(os.stat(t).st_mode)}")


@test
def flight_recorder_keeps_the_newest(tmp):
    """GPUSPY_MODE=ring: a 1 MiB buffer (16 chunks of 64 KiB) keeps the
    newest events, contiguous up to the SIGKILL, and counts the rest."""
    n = 300000
    run("prog_kill", [str(n)], tmp=tmp, expect_rc=-9, env={"GPUSPY_MODE": "ring", "GPUSPY_BUFFER_MB": "1"})
    proc, ev = only_trace(tmp)
    k = len(ev)
    check(proc["mode"] == "ring" and 15 * 1023 <= k < n, f"{k} events kept")
    check(proc["overwritten"] + k == n and proc["dropped"] == 0,
          f"overwritten {proc['overwritten']} + kept {k} != {n}")
    check([e["grid"][0] for e in ev] == [(i % 1000) + 1 for i in range(n - k, n)],
          "the kept events are not the newest, in order")
    h = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True)
    check(f"the {n - k} oldest events were overwritten" in h.stdout, "report does not say what was overwritten")


def all_traces(tmp):
    out = {}
    for f in traces(tmp):
        proc, ev = dump(os.path.join(tmp, f))
        out.setdefault(proc["pid"], []).append((proc, ev))
    return out


@test
def process_life_cycles(tmp):
    def fresh():
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
    # _exit: no exit handler runs; every committed event is there.
    fresh()
    run("prog_life", ["_exit"], tmp=tmp, expect_rc=3)
    proc, ev = only_trace(tmp)
    check(len(ev) == 10 and proc["state"] == "running or killed", f"_exit: {len(ev)} {proc['state']}")
    # exit() from another thread while main launches.
    fresh()
    run("prog_life", ["thread-exit"], tmp=tmp, expect_rc=5)
    proc, ev = only_trace(tmp)
    check(proc["state"] == "exited" and len(ev) == proc["events"] > 0, "thread-exit")
    # exec: the old image keeps its 5 events, the new one writes its own file.
    fresh()
    run("prog_life", ["exec"], tmp=tmp)
    t = all_traces(tmp)
    check(len(t) == 1, f"exec: pids {list(t)}")
    files = sorted(t.values())[0]
    counts = sorted((len(ev), proc["state"]) for proc, ev in files)
    check(counts == [(4, "exited"), (5, "running or killed")], f"exec: {counts}")
    # posix_spawn and vfork + exec: the child has its own file.
    for mode in ("spawn", "vfork"):
        fresh()
        p = run("prog_life", [mode], tmp=tmp)
        child = int(p.stdout.split()[1])
        t = all_traces(tmp)
        check(len(t) == 2 and child in t, f"{mode}: pids {list(t)}")
        check(len(t[child][0][1]) == 4, f"{mode}: child events {len(t[child][0][1])}")
        parent = [pid for pid in t if pid != child][0]
        check(len(t[parent][0][1]) == 2, f"{mode}: parent events {len(t[parent][0][1])}")


@test
def load_64_threads_with_dlopen(tmp):
    """64 threads x 1 M launches into a 64 MiB buffer, while another thread
    dlopens, looks up and dlcloses the runtime: no deadlock, exact counts."""
    per = 100000 if SANITIZED else 1000000  # sanitizers: the same shape, smaller
    mb = 4 if SANITIZED else 64
    p = run("prog_load", ["64", str(per)], tmp=tmp, env={"GPUSPY_BUFFER_MB": str(mb)})
    check(p.stdout.strip() == f"issued {64 * per} lookups yes", p.stdout)
    proc = report_json(tmp)
    check(proc["events"] + proc["dropped"] == 64 * per,
          f"recorded {proc['events']} + dropped {proc['dropped']} != {64 * per}")
    cap = (mb << 20) // (64 << 10) * 1023  # as many 64-byte records: packed ones are smaller
    check(proc["dropped"] > 0 and proc["events"] >= cap - 64 * 1023, f"{proc['events']} recorded")


@test
def bad_trace_directory_leaves_the_program_alone(tmp):
    for d in ("/nonexistent/gpuspy-dir", "/proc"):
        a = run("prog_rt_dyn", tmp=d, preload=False)
        b = run("prog_rt_dyn", tmp=d, env={"GPUSPY_QUIET": ""})
        check(a.stdout == b.stdout and a.returncode == b.returncode, f"{d}: the program changed")
        err = [l for l in b.stderr.splitlines() if l.startswith("gpuspy: ")]
        check(len(err) == 1 and "tracing off" in err[0], f"{d}: {b.stderr!r}")


@test
def full_disk_leaves_the_program_alone(tmp):
    """ENOSPC when the trace file is sized: one warning, no trace, no change."""
    mnt = os.path.join(tmp, "small")
    os.makedirs(mnt)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", mnt],
                       capture_output=True, text=True)
    if m.returncode:
        raise Skip(f"cannot mount a small tmpfs here: {m.stderr.strip()}")
    try:
        a = run("prog_rt_dyn", tmp=mnt, preload=False)
        b = run("prog_rt_dyn", tmp=mnt, env={"GPUSPY_QUIET": "", "GPUSPY_BUFFER_MB": "8"})
        check(a.stdout == b.stdout and a.returncode == b.returncode, "the program changed on a full disk")
        err = [l for l in b.stderr.splitlines() if l.startswith("gpuspy: ")]
        check(len(err) == 1 and "No space left" in err[0], f"warning: {b.stderr!r}")
        check(traces(mnt) == [], "a partial trace was left on the full disk")
    finally:
        subprocess.run(["umount", mnt])


@test
def secure_execution_is_left_alone(tmp):
    """A setuid program run by another user: the loader ignores a preload
    path in secure mode and gpuspy checks AT_SECURE itself; nothing is written."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        raise Skip("needs root and setpriv to make a setuid run")
    if SANITIZED:
        raise Skip("the setuid run is about the loader, not gpuspy's code")
    exe = os.path.join(tmp, "echo_setuid")
    shutil.copy("/bin/echo", exe)
    os.chmod(tmp, 0o1777)
    os.chmod(exe, 0o4755)
    e = dict(os.environ, LD_PRELOAD=LIB, GPUSPY_DIR=tmp)
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", exe, "hello"]
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=TIMEOUT)
    q = subprocess.run(cmd, env=dict(e, LD_PRELOAD=""), capture_output=True, text=True, timeout=TIMEOUT)
    check(p.stdout == q.stdout == "hello\n" and p.returncode == q.returncode == 0,
          f"the setuid program changed: {p.stdout!r} {p.stderr!r}")
    check(traces(tmp) == [], "gpuspy wrote a trace in a secure-execution process")


@test
def export_gpu_tracks_flows_and_demangled_names(tmp):
    src = os.path.join(ROOT, "tests", "golden", "gpu.jsonl")
    lines = open(src).read().replace('"gemm"', '"_Z4gemmPfS_i"').splitlines()
    path = os.path.join(tmp, "m.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = os.path.join(tmp, "t.json")
    subprocess.run([GPUSPY, "export", "--format", "chrome", path, "-o", out], check=True)
    ev = check_chrome(out)
    tracks = {e["args"]["name"]: e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    check("GPU 0 stream 7" in tracks, f"no GPU track: {list(tracks)}")
    gpu = [e for e in ev if e["ph"] == "X" and e["tid"] == tracks["GPU 0 stream 7"]]
    check(len(gpu) == 12, f"{len(gpu)} GPU slices")
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    ends = {e["id"] for e in ev if e["ph"] == "f"}
    check(ends <= starts and len(starts) == 8, f"flows: {len(starts)} starts, ends {ends - starts}")
    check(sum(1 for e in gpu if e["name"] == "gemm(float*, float*, int)") == 2, "kernel name not demangled")
    o = report_json(path)
    k = {x["name"]: x.get("mangled") for x in o["kernels"]}
    check(k.get("gemm(float*, float*, int)") == "_Z4gemmPfS_i", f"report kernels {k}")
    h = subprocess.run([GPUSPY, "report", "--color", "never", path], capture_output=True, text=True)
    check("\n  gemm  " in h.stdout and "_Z4gemm" not in h.stdout, "human report shows the mangled name")


@test
def python_faulthandler_keeps_working(tmp):
    """Python's faulthandler, enabled before gpuspy installs its handlers (at
    the first event) and after: its report and the death by SIGSEGV are as
    without gpuspy, and the trace keeps the signal."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    code = ("import ctypes, faulthandler, sys\n"
            "if sys.argv[1] == 'after': faulthandler.enable()\n"
            "ctypes.CDLL(None).gpuspy_mark(b'x') if hasattr(ctypes.CDLL(None), 'gpuspy_mark') else None\n"
            "if sys.argv[1] == 'late': faulthandler.enable()\n"
            "ctypes.string_at(0)\n")
    for when, flags in (("before", ["-X", "faulthandler"]), ("late", [])):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        args = [*flags, "-c", code, when]
        a = run_py(args, tmp, preload=False)
        b = run_py(args, tmp, env={"GPUSPY_TORCH": "0"})
        check(a.returncode == b.returncode == -11, f"{when}: exit {a.returncode} / {b.returncode}")
        check("Fatal Python error: Segmentation fault" in b.stderr, f"{when}: faulthandler silent: {b.stderr[-300:]}")
        proc, ev = only_trace(tmp)
        sig = proc.get("exit_signal") or proc.get("signal_seen")
        check(sig == 11 and [e["name"] for e in ev] == ["x"], f"{when}: trace {proc['state']} {sig}")


# ---- issue 6: call stacks, host allocations, sites ----------------------------

STACKS_SRC = os.path.join(ROOT, "tests", "prog_stacks.c")


def src_line(path, needle):
    """The 1-based line of the only line of path that contains needle."""
    hits = [i + 1 for i, l in enumerate(open(path)) if needle in l]
    check(len(hits) == 1, f"{needle!r} found {len(hits)} times in {path}")
    return hits[0]


def fn(frame):
    """A rendered frame's function: "f (file:line)" or "f+0x1a (module)"."""
    return frame.split(" (")[0].split("+0x")[0]


def chain_from(frames, first):
    """The function names from `first` outward (frames before it are CUDA's)."""
    names = [fn(f) for f in frames]
    check(first in names, f"{first} not in the stack {frames}")
    return names[names.index(first):]


STACK_CHAINS = {  # (kind, mem/dir) -> innermost user functions, in order
    ("alloc", "device"): ["alloc_weights", "model_init", "main"],
    ("alloc", "pinned"): ["alloc_staging", "model_init", "main"],
    ("alloc", "host"): ["make_host_buffer", "load_batch", "main"],
    ("copy", "h2d"): ["upload", "load_batch", "main"],
    ("memset", None): ["clear_grads", "train_step", "main"],
    ("sync", None): ["wait_for_gpu", "train_step", "main"],
}


def stack_key(e):
    return (e["kind"], e.get("mem") or e.get("dir"))


@test
def packed_records_round_trip(tmp):
    """format.h's codec: 200 chunks of random records (fields unchanged, a
    small step, or anything, as in real traces) decode bit for bit; a cut
    chunk decodes to a prefix and stops at the cut. The records, their
    packed size and a hash of the packed bytes are pinned: an encoder
    rewritten for speed must write the same bytes (the format's readers
    decode files written by any version)."""
    p = run("prog_codec", ["12345", "200"], tmp=tmp, preload=False)
    check(p.stdout.split() == ["ok", "307221", "13079891", "170ff4f4e8749de6"], p.stdout)


@test
def stacks_exact_call_chains(tmp):
    """With GPUSPY_STACKS=all, every device/pinned/host allocation, copy,
    memset and wait of a program with known call chains carries its stack:
    the user's functions in order, file:line from DWARF, no gpuspy frame;
    shared and static runtime."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    lines = {"alloc_weights": src_line(STACKS_SRC, "cudaMalloc(&d, n);"),
             "upload": src_line(STACKS_SRC, "cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice)"),
             "make_host_buffer": src_line(STACKS_SRC, "char *p = malloc(n);"),
             "wait_for_gpu": src_line(STACKS_SRC, "int rc = cudaDeviceSynchronize();")}
    for prog in ("prog_stacks", "prog_stacks_static"):
        d = os.path.join(tmp, prog)
        os.makedirs(d)
        run(prog, ["4"], tmp=d, env={"GPUSPY_HOST_ALLOC_MIN": "1M", "GPUSPY_STACKS": "all"})
        ev, stacks = dump_stacks(os.path.join(d, traces(d)[0]))
        seen = {}
        for e in ev:
            if e["kind"] in ("phase_begin", "phase_end", "free"):
                continue
            check("stack" in e and e["stack"] in stacks, f"{prog}: no stack on {e}")
            frames = stacks[e["stack"]]
            check(not any("gpuspy" in f or fn(f).startswith("gs_") for f in frames),
                  f"{prog}: gpuspy's own frames in {frames}")
            want = STACK_CHAINS[stack_key(e)]
            got = chain_from(frames, want[0])[:3]
            check(got == want, f"{prog}: {stack_key(e)} stack {got}, expected {want}")
            first = frames[[fn(f) for f in frames].index(want[0])]
            if want[0] in lines:
                check(first == f"{want[0]} (prog_stacks.c:{lines[want[0]]})",
                      f"{prog}: frame {first!r}, expected line {lines[want[0]]}")
            seen[stack_key(e)] = seen.get(stack_key(e), 0) + 1
        check(seen == {("alloc", "device"): 1, ("alloc", "pinned"): 1, ("alloc", "host"): 1,
                       ("copy", "h2d"): 1, ("memset", None): 4, ("sync", None): 4},
              f"{prog}: events with stacks {seen}")
        frees = [e for e in ev if e["kind"] == "free"]
        check(sorted((e["mem"], e["bytes"]) for e in frees) ==
              [("device", 64 << 20), ("host", 64 << 20), ("pinned", 1 << 20)], f"{prog}: frees {frees}")
        check(all("stack" in e for e in frees), f"{prog}: a free without its stack")


@test
def stacks_report_sites_and_host_buffer(tmp):
    """report --json lists alloc_sites, peak_sites, copy_sites (tied to the
    malloc of the pageable buffer) and sync_sites with exact numbers; the
    diagnosis names both lines; the JSON Lines dump reports the same."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    run("prog_stacks", ["4"], tmp=tmp, env={"GPUSPY_HOST_ALLOC_MIN": "1M"})
    o = report_json(tmp)
    names = lambda site: [fn(f) for f in site["stack"]][:3]
    al = [(names(x), x["mem"], x["count"], x["bytes"]) for x in o["alloc_sites"]]
    check(al == [(["alloc_weights", "model_init", "main"], "device", 1, 64 << 20),
                 (["alloc_staging", "model_init", "main"], "pinned", 1, 1 << 20)], f"alloc_sites {al}")
    pk = [(names(x), x["count"], x["bytes"]) for x in o["peak_sites"]]
    check(pk == [(["alloc_weights", "model_init", "main"], 1, 64 << 20)], f"peak_sites {pk}")
    cp = o["copy_sites"]
    check(len(cp) == 1 and names(cp[0]) == ["upload", "load_batch", "main"] and cp[0]["count"] == 1
          and cp[0]["bytes"] == 64 << 20 and cp[0]["dir"] == "h2d", f"copy_sites {cp}")
    check([fn(f) for f in cp[0].get("host_alloc_stack", [])][:3] == ["make_host_buffer", "load_batch", "main"]
          and cp[0]["host_alloc_bytes"] == 64 << 20, f"host buffer of the copy: {cp[0]}")
    sy = [(names(x), x["count"], x["phase"]) for x in o["sync_sites"]]
    check(sy == [(["wait_for_gpu", "train_step", "main"], 4, "step")], f"sync_sites {sy}")
    for x in o["alloc_sites"] + o["copy_sites"] + o["sync_sites"]:
        check(set(x) >= {"stack", "count", "bytes", "host_ns"} and x["host_ns"] > 0, f"site fields {x}")
    d = [x["text"] for x in o["diagnoses"] if x["id"] == "pageable_copies"]
    check(d and "All 64 MiB copied in upload (prog_stacks.c:" in d[0]
          and "from a 64 MiB pageable buffer allocated in make_host_buffer (prog_stacks.c:" in d[0],
          f"diagnosis does not name the lines: {d}")
    g = os.path.join(tmp, traces(tmp)[0])
    j = os.path.join(tmp, "trace.jsonl")
    subprocess.run([GPUSPY, "dump", g, "-o", j], check=True, timeout=TIMEOUT)
    check(strip_files(report_json(g)) == strip_files(report_json(j)),
          "report --json with stacks differs between the .gspy and its JSON Lines dump")
    h = subprocess.run([GPUSPY, "report", "--color", "never", tmp], capture_output=True, text=True)
    check("Call sites" in h.stdout and "host buffer (64 MiB) allocated at:" in h.stdout
          and max(len(l) for l in h.stdout.splitlines()) <= 100, "human report's call sites")
    out = os.path.join(tmp, "trace.json")
    subprocess.run([GPUSPY, "export", "--format", "chrome", g, "-o", out], check=True, timeout=TIMEOUT)
    ev = json.load(open(out))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    st = {e["name"]: [fn(f) for f in e["args"]["stack"]][:3] for e in ev if "stack" in e.get("args", {})}
    check(st.get("cudaMalloc") == ["alloc_weights", "model_init", "main"] and
          st.get("cudaMemcpy") == ["upload", "load_batch", "main"], f"export's stacks: {st}")


@test
def stacks_threads_recursion_and_limits(tmp):
    """8 threads x 200 rounds with host allocations recorded (the unwinder and
    the loader allocate inside the hooks): exact counts, every event with its
    stack, output unchanged; allocations under the minimum not recorded.
    Under a sanitizer (whose allocator comes first) without the host part."""
    env = {"GPUSPY_HOST_ALLOC_MIN": "1M", "GPUSPY_STACKS": "all"}
    if "tsan" in PRELOAD_PREFIX:  # libunwind's thread-exit destructor breaks TSan's runtime
        env["GPUSPY_STACKS"] = "all,glibc"
    rounds = 20 if SANITIZED else 200  # sanitizers make each unwind slow
    a = run("prog_stacks", [str(rounds), "threads"], tmp=tmp, env=env, preload=False)
    b = run("prog_stacks", [str(rounds), "threads"], tmp=tmp, env=env)
    check(a.stdout == b.stdout, "output changed")
    proc, ev = only_trace(tmp)
    count = {}
    for e in ev:
        k = (e["kind"], e["api"])
        count[k] = count.get(k, 0) + 1
        check("stack" in e, f"no stack: {e}")
    n = 8 * rounds
    want = {("alloc", "cudaMalloc"): n, ("alloc", "cudaMallocHost"): n, ("alloc", "malloc"): 2 * n,
            ("copy", "cudaMemcpy"): n, ("free", "cudaFree"): n, ("free", "cudaFreeHost"): n,
            ("free", "free"): 2 * n, ("memset", "cudaMemset"): n, ("sync", "cudaDeviceSynchronize"): n}
    if SANITIZED:
        del want[("alloc", "malloc")], want[("free", "free")]
    check(count == want and proc["dropped"] == 0, f"counts {count}")
    if not SANITIZED:
        check(sorted({e["bytes"] for e in ev if e["api"] == "malloc"}) == [2 << 20, 3 << 20], "host sizes")


HOST_NAMES = ["malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "mmap", "munmap"]


def defined_functions(lib):
    p = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True)
    return {l.split()[-1] for l in p.stdout.splitlines() if len(l.split()) == 3}


@test
def host_allocator_only_through_the_host_library(tmp):
    """libgpuspy defines no malloc, free, mmap...: a traced process calls its
    allocator directly unless libgpuspy-host.so is preloaded too. With
    GPUSPY_HOST_ALLOC_MIN and libgpuspy alone: one warning naming the
    library, host_alloc_min 0 in the trace, no host event, the CUDA events
    whole. With both (either order, or through `gpuspy run`, which adds it
    for --host-alloc or the variable): the 64 MiB malloc and its free."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    mine = defined_functions(os.path.realpath(LIB))
    check(not mine & set(HOST_NAMES), f"libgpuspy defines {sorted(mine & set(HOST_NAMES))}")
    check({"gpuspy_host_" + n for n in HOST_NAMES} <= mine, "libgpuspy lacks its gpuspy_host_* hooks")
    shim = defined_functions(HOST_LIB)
    check(shim == set(HOST_NAMES) | {"gpuspy_host_shim"}, f"libgpuspy-host.so defines {sorted(shim)}")

    def host_events(d):
        proc, ev = only_trace(d)
        host = sorted((e["kind"], e["api"], e["bytes"]) for e in ev if e.get("mem") == "host")
        cuda = sum(1 for e in ev if e["api"].startswith("cuda"))
        for f in traces(d):
            os.unlink(os.path.join(d, f))
        return proc["host_alloc_min"], host, cuda

    want = (1 << 20, [("alloc", "malloc", 64 << 20), ("free", "free", 64 << 20)])
    env = {"GPUSPY_HOST_ALLOC_MIN": "1M", "GPUSPY_QUIET": "0"}
    p = run("prog_stacks", ["4"], tmp=tmp, env=env, host=False)
    warn = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
    check(len(warn) == 1 and "libgpuspy-host.so is not preloaded" in warn[0], f"warnings {warn}")
    hmin, host, cuda_alone = host_events(tmp)
    check(hmin == 0 and host == [] and cuda_alone > 0, f"without the host library: {hmin} {host} {cuda_alone}")
    p = run("prog_stacks", ["4"], tmp=tmp, env=env)
    check(not [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")], f"warned: {p.stderr!r}")
    check(host_events(tmp) == (*want, cuda_alone), "both preloaded, libgpuspy first")
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_QUIET="1",
             GPUSPY_HOST_ALLOC_MIN="1M", LD_PRELOAD=HOST_LIB + ":" + LIB)
    subprocess.run([os.path.join(BIN, "prog_stacks"), "4"], env=e, check=True, capture_output=True,
                   timeout=TIMEOUT)
    check(host_events(tmp) == (*want, cuda_alone), "both preloaded, the host library first")
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_QUIET="1")
    e.pop("LD_PRELOAD", None)
    e.pop("GPUSPY_HOST_ALLOC_MIN", None)
    for opts, extra in ((["--host-alloc", "1M"], {}), ([], {"GPUSPY_HOST_ALLOC_MIN": "1M"}), ([], {})):
        p = subprocess.run([GPUSPY, "run", "--dir", tmp, "--no-report", *opts, "--",
                            os.path.join(BIN, "prog_stacks"), "4"], env=dict(e, **extra),
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"gpuspy run {opts} {extra}: {p.stderr}")
        got = host_events(tmp)
        check(got == ((*want, cuda_alone) if opts or extra else (0, [], cuda_alone)),
              f"gpuspy run {opts} {extra}: {got}")
    for bad in ("1Q", "0", "-1", "M"):
        p = subprocess.run([GPUSPY, "run", "--host-alloc", bad, "--", "true"], env=e,
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 2 and p.stderr.count("\n") == 1 and "--host-alloc" in p.stderr,
              f"--host-alloc {bad}: rc {p.returncode} {p.stderr!r}")


@test
def host_allocators_each_recorded(tmp):
    """Every host allocator through libgpuspy-host.so (prog_stacks
    allocators, GPUSPY_HOST_ALLOC_MIN=1M), exact events in order: a
    posix_memalign and a realloc'ed block kept from before the first CUDA
    call, written first (the block realloc'ed from not at all); an
    aligned_alloc freed before it, not written; calloc; realloc as the old
    block's free and the new block's alloc, a shrink under the minimum as a
    free alone (and its later free unrecorded); a failing posix_memalign
    with its EINVAL as the result and errno untouched; aligned_alloc and
    free; mmap, a partial munmap as what it released (the rest unrecorded);
    a too-big malloc with ENOMEM; an overflowing calloc and a block under
    the minimum not recorded. Addresses as the program printed them, every
    host event with a stack, output as without gpuspy."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    a = run("prog_stacks", ["1", "allocators"], tmp=tmp, preload=False)
    b = run("prog_stacks", ["1", "allocators"], tmp=tmp, env={"GPUSPY_HOST_ALLOC_MIN": "1M"})
    plain = [l for l in b.stdout.splitlines() if not l.startswith("addr ")]
    check(plain == [l for l in a.stdout.splitlines() if not l.startswith("addr ")] and
          "bad alignment rc 22 errno 33 untouched 1" in plain and "early aligned 1" in plain,
          f"output changed: {a.stdout!r} {b.stdout!r}")
    addr = {l.split()[1]: int(l.split()[2], 16) for l in b.stdout.splitlines() if l.startswith("addr ")}
    proc, ev = only_trace(tmp)
    mib = 1 << 20
    got = [(e["kind"], e["api"], e["bytes"], e["result"]) for e in ev]
    want = [("alloc", "posix_memalign", 3 * mib, 0), ("alloc", "realloc", 4 * mib, 0), ("alloc", "cudaMalloc", mib, 0),
            ("alloc", "calloc", 2 * mib, 0), ("free", "realloc", 2 * mib, 0),
            ("alloc", "realloc", 4 * mib, 0), ("free", "realloc", 4 * mib, 0),
            ("alloc", "posix_memalign", 3 * mib, 22), ("alloc", "aligned_alloc", 5 * mib, 0),
            ("free", "free", 5 * mib, 0), ("alloc", "mmap", 6 * mib, 0), ("free", "munmap", 2 * mib, 0),
            ("alloc", "malloc", (1 << 63) - 1, 12), ("free", "free", 3 * mib, 0), ("free", "free", 4 * mib, 0),
            ("free", "cudaFree", mib, 0)]
    check(got == want and proc["dropped"] == 0 and proc["events"] == len(want), f"events {got}")
    host = [e for e in ev if e.get("mem") == "host"]
    where = [e["addr"] for e in host]
    check(where == [addr["posix_memalign"], addr["early_realloc"], addr["calloc"], addr["calloc"], addr["realloc"], addr["realloc"], 0,
                    addr["aligned_alloc"], addr["aligned_alloc"], addr["mmap"], addr["mmap"], 0,
                    addr["posix_memalign"], addr["early_realloc"]], f"addresses {where} against {addr}")
    check(all("stack" in e for e in host), f"a host event without a stack: {host}")


@test
def host_allocations_before_the_first_cuda_call(tmp):
    """A process that never calls CUDA writes nothing even with host
    allocations recorded (a C program, and Python, each with a live 64 MiB
    / 10 MB block at exit). Before the first CUDA call, live blocks are kept
    and written once the file exists: the 64 MiB buffer a pageable copy
    reads later is there, first, with its stack, and the copy is tied to it;
    a block allocated and freed before is not; a thread's block that its
    thread never wrote (it ended with no CUDA call) counts as dropped; a
    child forked before the first CUDA call leaves the kept block to its
    parent's trace."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    env = {"GPUSPY_HOST_ALLOC_MIN": "1M"}
    p = run("prog_stacks", ["1", "nocuda"], tmp=tmp, env=env)
    check(p.stdout.startswith("no cuda") and traces(tmp) == [], f"a process without CUDA wrote {traces(tmp)}")
    e = dict(os.environ, GPUSPY_DIR=tmp, GPUSPY_HOST_ALLOC_MIN="1M", LD_PRELOAD=LIB + ":" + HOST_LIB)
    q = subprocess.run([sys.executable, "-c", "x = bytearray(10**7); print(len(x))"], env=e,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(q.returncode == 0 and q.stdout == "10000000\n" and traces(tmp) == [],
          f"python without CUDA: rc {q.returncode} {q.stdout!r}, files {traces(tmp)}")
    for stacks in ("on", "0"):
        run("prog_stacks", ["1", "early"], tmp=tmp, env=dict(env, GPUSPY_STACKS=stacks))
        proc, _ = only_trace(tmp)
        g = os.path.join(tmp, traces(tmp)[0])
        ev, st = dump_stacks(g)
        host = [(x["kind"], x["api"], x["bytes"]) for x in ev if x.get("mem") == "host"]
        check(host == [("alloc", "malloc", 64 << 20), ("free", "free", 64 << 20)], f"host events {host}")
        check(ev[0]["mem"] == "host" and ev[0]["kind"] == "alloc" and
              ev[0]["start_ns"] < next(x["start_ns"] for x in ev if x["api"] == "cudaMalloc"),
              f"the early block is not first: {ev[:2]}")
        check(ev[0]["tid"] == proc["pid"] and proc["dropped"] == 1 and proc["events"] == 5,
              f"tid {ev[0]['tid']}, dropped {proc['dropped']}, events {proc['events']}")
        copy = next(x for x in ev if x["kind"] == "copy")
        check(copy["addr"] == ev[0]["addr"] and copy["host_mem"] == "pageable", f"copy {copy}")
        if stacks == "on":
            check([fn(f) for f in st[ev[0]["stack"]]][:2] == ["make_host_buffer", "main"],
                  f"early stack {st.get(ev[0].get('stack'))}")
            cp = report_json(g)["copy_sites"]
            check([fn(f) for f in cp[0].get("host_alloc_stack", [])][:2] == ["make_host_buffer", "main"],
                  f"the copy is not tied to its early buffer: {cp}")
        else:
            check("stack" not in ev[0], f"a stack with GPUSPY_STACKS=0: {ev[0]}")
        os.unlink(g)
    # A fork before the first CUDA call: the kept block is the parent's to
    # write; the child's trace has its own calls only.
    p = run("prog_stacks", ["1", "earlyfork"], tmp=tmp, env=env)
    check(p.stdout == "parent 0 child 0\n" and len(traces(tmp)) == 2, f"{p.stdout!r} {traces(tmp)}")
    procs = {}
    for t in traces(tmp):
        proc, ev = dump(os.path.join(tmp, t))
        procs[proc["pid"]] = (proc["ppid"], sorted((x["kind"], x["bytes"]) for x in ev if x.get("mem") == "host"))
        check(proc["dropped"] == 0 and any(x["kind"] == "copy" for x in ev), f"{t}: {proc['dropped']} dropped")
    child = next((pid for pid, (ppid, _) in procs.items() if ppid in procs), None)
    parent = next((pid for pid in procs if pid != child), None)
    check(child and procs[parent][1] == [("alloc", 64 << 20), ("free", 64 << 20)] and procs[child][1] == [],
          f"host events by process {procs}")


@test
def stacks_refuse_a_changed_binary(tmp):
    """The reader symbolizes a module only if its build id is the one the
    trace recorded: a program rebuilt since keeps module+offset frames, with
    one warning, never wrong names."""
    exe = os.path.join(tmp, "prog_copy")
    shutil.copy(os.path.join(BIN, "prog_stacks"), exe)
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_QUIET="1", LD_PRELOAD=PRELOAD_PREFIX + LIB)
    subprocess.run([exe, "2"], env=e, check=True, capture_output=True, timeout=TIMEOUT)
    trace = os.path.join(tmp, traces(tmp)[0])
    _, stacks = dump_stacks(trace)
    check(any(f.startswith("alloc_weights (prog_stacks.c:") for fr in stacks.values() for f in fr),
          "not symbolized while the binary is unchanged")
    os.unlink(exe)
    shutil.copy(os.path.join(BIN, "prog_stacks_static"), exe)  # another build at the same path
    p = subprocess.run([GPUSPY, "dump", trace], capture_output=True, text=True, timeout=TIMEOUT)
    frames = [f for l in p.stdout.splitlines() if '"type":"stack"' in l for f in json.loads(l)["frames"]]
    check(p.returncode == 0 and "build id differs" in p.stderr and p.stderr.count("warning") == 1,
          f"no single warning: {p.stderr!r}")
    check(not any("prog_stacks.c" in f for f in frames) and any(f.startswith("prog_copy+0x") for f in frames),
          f"frames of the changed binary: {frames[:6]}")


@test
def stacks_options(tmp):
    """GPUSPY_STACKS=0 records none; GPUSPY_STACK_DEPTH caps the frames;
    GPUSPY_STACK_LAUNCHES=N gives exactly 1 launch in N a stack; libunwind
    takes neither backtrace() nor _Unwind_Backtrace from the process."""
    run("prog_train", ["3", "10"], tmp=tmp, env={"GPUSPY_STACKS": "0"})
    proc, ev = only_trace(tmp)
    check(ev and not any("stack" in e for e in ev), "GPUSPY_STACKS=0 still records stacks")
    check(proc["stacks_taken"] == 0 and proc["stacks_ns"] == 0 and proc["stacks"] == "off",
          f"own stack time without stacks: {proc}")
    check("own time" not in report_text(tmp), "an own-time line without stacks")
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    run("prog_train", ["3", "10"], tmp=tmp, env={"GPUSPY_STACK_LAUNCHES": "5", "GPUSPY_STACK_DEPTH": "2"})
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    launches = [e for e in ev if e["kind"] == "launch"]
    check(len(launches) == 69, f"{len(launches)} launches")
    with_stack = [i for i, e in enumerate(launches) if "stack" in e]
    check(with_stack == list(range(0, 69, 5)), f"launches with stacks: {with_stack}")
    # gpuspy counts its own time for stacks: one per event that has one.
    proc, _ = only_trace(tmp)
    n = sum("stack" in e for e in ev)
    # 14 of the 69 launches, 6 H2D and 3 D2H copies, 3 waits, 5 allocations, 5 frees
    check(n == 14 + 6 + 3 + 3 + 5 + 5 and proc["stacks_taken"] == n and proc["stacks_ns"] > 0,
          f"stacks_taken {proc['stacks_taken']}, {n} events with a stack, {proc['stacks_ns']} ns")
    check(f"gpuspy's own time: {n} call stacks, " in report_text(tmp), "no own-time line")
    o = report_json(tmp)
    check(o["processes"][0]["stacks_taken"] == n == o["stacks_taken"], "stacks_taken not in report --json")
    check(stacks and all(1 <= len(f) <= 2 for f in stacks.values()), "depth not capped at 2")
    check(all("stack" in e for e in ev if e["kind"] in ("alloc", "free", "sync")), "alloc/free/sync stack")
    p = run("prog_stacks", ["1", "symbols"], tmp=tmp)
    got = dict(l.split(" ", 1) for l in p.stdout.splitlines())
    check("libunwind" not in got["backtrace"] and "libunwind" not in got["_Unwind_Backtrace"],
          f"backtrace symbols taken over: {got}")


@test
def stacks_default_kinds(tmp):
    """By default only what the report's call sites use keeps a stack:
    allocations, frees, pageable copies and waits, not memsets nor pinned
    or device-to-device copies; GPUSPY_STACKS=all (also with glibc) gives
    those theirs; off with anything else, or a word it does not know, is
    refused with a warning and stacks stay on; "," (no word) is on; the
    dump's process line says which (stacks on or all). Exact counts, shared and
    static runtime."""
    def with_stack(prog, value):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        p = run(prog, tmp=tmp, env={"GPUSPY_STACKS": value, "GPUSPY_QUIET": "0"})
        proc, ev = only_trace(tmp)
        got = {}
        for e in ev:
            k = "/".join(str(e.get(f)) for f in ("kind", "host_mem", "dir") if e.get(f))
            n, m = got.get(k, (0, 0))
            got[k] = (n + ("stack" in e), m + 1)
        check(proc["stacks_taken"] == sum(n for n, _ in got.values()), f"{prog} {value}: stacks_taken {proc}")
        check(proc["stacks"] == ("all" if got == every else "on"), f"{prog} {value}: stacks {proc['stacks']}")
        return got, p.stderr
    on = {"alloc": (2, 2), "free": (2, 2), "copy/pageable/d2h": (2, 2), "copy/pageable/h2d": (2, 2),
          "copy/pinned/d2h": (0, 2), "copy/pinned/h2d": (0, 1), "copy/d2d": (0, 1), "launch": (0, 3),
          "memset": (0, 1), "sync": (2, 2)}
    every = dict(on, **{"copy/pinned/d2h": (2, 2), "copy/pinned/h2d": (1, 1), "copy/d2d": (1, 1),
                        "memset": (1, 1)})
    for prog in ("prog_rt_dyn", "prog_rt_static"):
        for value, want, warned in (("", on, False), ("on", on, False), ("all", every, False),
                                    ("glibc,all", every, False), ("off,all", on, True), ("on,off", on, True),
                                    ("all,every", on, True), (",", on, False)):
            got, err = with_stack(prog, value)
            check(got == want, f"{prog} GPUSPY_STACKS={value}: (with a stack, of) {got}")
            check(("is not off, nor a list of on, all and glibc; using on" in err) == warned,
                  f"{prog} GPUSPY_STACKS={value}: stderr {err!r}")


@test
def stacks_min_duration(tmp):
    """GPUSPY_STACK_MIN (nsys's backtrace threshold): waits, memsets, copies
    that are not pageable and sampled launches shorter than it keep no stack;
    allocations, frees and pageable copies always do; the header, the dump
    and the report say which threshold; a bad value is refused with a warning."""
    def kinds(env):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        p = run("prog_train", ["3", "10"], tmp=tmp, env={"GPUSPY_STACK_LAUNCHES": "1", **env})
        proc, ev = only_trace(tmp)
        got = {}
        for e in ev:
            if e["kind"] not in ("phase_begin", "phase_end", "mark"):
                k = e["kind"] + ("/" + e["host_mem"] if "host_mem" in e else "")
                n, m = got.get(k, (0, 0))
                got[k] = (n + ("stack" in e), m + 1)
        return proc, got, p.stderr
    # Launches of 2 ms pass a 1 ms threshold; the double's waits take no time.
    proc, got, _ = kinds({"GPUSPY_STACK_MIN": "1ms", "FAKECUDA_LAUNCH_NS": "2000000"})
    check(got == {"alloc": (5, 5), "free": (5, 5), "copy/pageable": (9, 9), "sync": (0, 3),
                  "launch": (69, 69)}, f"(with a stack, of) by kind: {got}")
    check(proc["stack_min_ns"] == 1000000 and proc["stacks_taken"] == 88, f"process line {proc}")
    check("carry a stack only when they took 1.0 ms or more" in report_text(tmp), "no threshold note")
    proc, got, _ = kinds({"GPUSPY_STACK_MIN": "1ms"})
    check(got["launch"] == (0, 69) and got["sync"] == (0, 3) and got["copy/pageable"] == (9, 9),
          f"instant launches with a 1 ms threshold: {got}")
    proc, got, err = kinds({"GPUSPY_STACK_MIN": "20 us", "GPUSPY_QUIET": "0"})
    check(proc["stack_min_ns"] == 0 and got["sync"] == (3, 3) and got["launch"] == (69, 69), f"{proc} {got}")
    check("GPUSPY_STACK_MIN=20 us is not a duration (e.g. 20us); using 0" in err, f"stderr {err!r}")
    check("GPUSPY_STACK_MIN" not in report_text(tmp), "a threshold note without a threshold")


@test
def pause_and_resume(tmp):
    """gpuspy_pause()/gpuspy_resume(): the calls in between are not recorded,
    each leaves its mark, the program's output is the same with and without
    libgpuspy (the weak symbols are null without it)."""
    a = run("prog_stacks", ["1", "pause"], tmp=tmp, preload=False)
    b = run("prog_stacks", ["1", "pause"], tmp=tmp)
    check(a.stdout == b.stdout == "paused run done\n", f"output {a.stdout!r} / {b.stdout!r}")
    _, ev = only_trace(tmp)
    seq = [e["kind"] if e["kind"] != "mark" else e["name"] for e in ev]
    check(seq == ["alloc", "free"] * 3 + ["(paused)", "(resumed)"] + ["alloc", "free"] * 2,
          f"events {seq}")


@test
def python_frames_only_with_the_gil(tmp):
    """GPUSPY_PYTHON_FRAMES=1: a CUDA call made holding the GIL (ctypes.PyDLL)
    shows the Python functions and lines in order; one made without it
    (ctypes.CDLL releases the GIL) shows none; off by default."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    script = os.path.join(ROOT, "tests", "py_stacks.py")
    lib = os.path.join(BIN, "libcudart.so.13")
    env = {"LD_LIBRARY_PATH": BIN, "GPUSPY_PYTHON_FRAMES": "1", "GPUSPY_TORCH": "0"}
    p = subprocess.run([sys.executable, script, lib], env=dict(os.environ, GPUSPY_DIR=tmp, LD_PRELOAD=LIB, **env),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout == "rc 0 0\n", f"script failed: {p.stdout} {p.stderr}")
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    allocs = [e for e in ev if e["kind"] == "alloc"]
    check(len(allocs) == 2, f"{len(allocs)} allocations")
    py = lambda e: [f for f in stacks[e["stack"]] if ".py:" in f]
    line = lambda tag: src_line(script, "# " + tag)
    want = [f"alloc_holding_gil ({script}:{line('LINE_HELD')})", f"Model.build ({script}:{line('LINE_BUILD')})",
            f"<module> ({script}:{line('LINE_MODULE')})"]
    check(py(allocs[0]) == want, f"Python frames {py(allocs[0])}, expected {want}")
    check(py(allocs[1]) == [], f"Python frames without the GIL: {py(allocs[1])}")
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    del env["GPUSPY_PYTHON_FRAMES"]
    subprocess.run([sys.executable, script, lib], env=dict(os.environ, GPUSPY_DIR=tmp, LD_PRELOAD=LIB, **env),
                   capture_output=True, text=True, timeout=TIMEOUT, check=True)
    ev, stacks = dump_stacks(os.path.join(tmp, traces(tmp)[0]))
    check(not any(".py:" in f for fr in stacks.values() for f in fr), "Python frames while off")



def readme_section(text, heading):
    """The lines of README.md's section `## heading`, up to the next `## `."""
    m = re.search(r"^## " + re.escape(heading) + r"\n(.*?)(?=^## )", text, re.S | re.M)
    check(m, f"README has no section '## {heading}'")
    return m.group(1)


@test
def docs_list_every_variable_and_option(tmp):
    """The docs stay true to the code: docs/environment.md's table is the
    library's options table (`gpuspy env --markdown`), which names every
    GPUSPY_ variable lib/, tools/ or python/ name, each read where the
    table says; README's Options table only real ones;
    docs/commands.md shows every option the commands take; README's
    Commands block has each word of `gpuspy --help`."""
    table = subprocess.run([GPUSPY, "env", "--markdown"], capture_output=True, text=True, timeout=TIMEOUT).stdout
    doc = lambda name: open(os.path.join(ROOT, name), encoding="utf-8").read()
    readme, env, commands = doc("README.md"), doc("docs/environment.md"), doc("docs/commands.md")
    check(table.startswith("| variable |") and table in env,
          "docs/environment.md's table is not `gpuspy env --markdown` (lib/options.c): paste it in")
    rows = set(re.findall(r"^\| `(GPUSPY_[A-Z0-9_]+)` \|", table, re.M))
    check(len(rows) >= 20, f"only {sorted(rows)} in the table")
    # Every variable the code names is in the table; every row is read by
    # what the table says reads it (the library through gs_opt[GS_OPT_X]).
    def code_of(dirs, skip=()):
        return "".join(open(os.path.join(ROOT, d, f), encoding="utf-8").read() for d in dirs
                       for f in sorted(os.listdir(os.path.join(ROOT, d)))
                       if f.endswith((".c", ".h", ".py")) and f not in skip)
    lib, py, tools = code_of(["lib"], ("options.c", "options.h")), code_of(["python"]), code_of(["tools"])
    named = set(re.findall(r"[\"'](GPUSPY_[A-Z0-9_]+)[\"']", lib + py + tools))
    check(named <= rows, f"named in the code but not in lib/options.c: {sorted(named - rows)}")
    by = dict(re.findall(r'\[GS_OPT_(\w+)\] = \{ "(?:GPUSPY_\w+)", GS_OPT_\w+, (GS_BY_\w+)',
                         open(os.path.join(ROOT, "lib", "options.c")).read()))
    check(len(by) == len(rows), f"{len(by)} rows parsed from lib/options.c, {len(rows)} in the table")
    unread = [i for i, b in by.items() if
              (b == "GS_BY_LIB" and f"GS_OPT_{i})" not in lib and f"GS_OPT_{i}]" not in lib) or
              (b == "GS_BY_PYTHON" and f"GPUSPY_{i}" not in py) or (b == "GS_BY_TOOL" and f"GPUSPY_{i}" not in tools)]
    check(not unread, f"in lib/options.c but never read: {unread}")
    read = rows
    few = set(re.findall(r"^\| `(GPUSPY_[A-Z0-9_]+)` \|", readme_section(readme, "Options"), re.M))
    check(few and few <= read, f"README's Options that are not read: {sorted(few - read)}")
    opts = set(re.findall(r'"(--?[a-z][a-z-]*)"', "".join(
        open(os.path.join(ROOT, "tools", f)).read() for f in os.listdir(os.path.join(ROOT, "tools")) if f.endswith(".c"))))
    check({"--dir", "--json", "--format", "-o", "--help"} <= opts, f"options found: {sorted(opts)}")
    missing = sorted(o for o in opts if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", commands))
    check(not missing, f"options not in docs/commands.md: {missing}")
    usage = subprocess.run([GPUSPY, "--help"], capture_output=True, text=True, timeout=TIMEOUT).stdout
    block = re.search(r"```\n(.*?)```", readme_section(readme, "Commands"), re.S).group(1)
    shown = set(re.findall(r"--?[a-z][a-z-]*|[A-Z][A-Z.|]+(?:\.\.\.)?", block))
    for word in re.findall(r"--?[a-z][a-z-]*|[A-Z][A-Z.|]+(?:\.\.\.)?", usage.split("FILE is")[0]):
        check(word in shown, f"'{word}' of `gpuspy --help` is not in README's usage block")
    links = re.findall(r"\]\((docs/[a-z-]+\.md)\)", readme)
    check(links and all(os.path.exists(os.path.join(ROOT, l)) for l in links), f"README links {links}")
    check(len(readme.splitlines()) <= 300, f"README.md is {len(readme.splitlines())} lines")


import test_hostile  # noqa: E402,F401 (registers its tests)
import test_tracegen  # noqa: E402,F401
import test_graphs  # noqa: E402,F401
import test_house  # noqa: E402,F401


def run_one(fn):
    """Runs one test in its own directory: (status, line)."""
    tmp = tempfile.mkdtemp(prefix="gpuspy-test-")
    try:
        fn(tmp)
        return "ok", f"ok   {fn.__name__}"
    except Skip as e:
        return "skip", f"skip {fn.__name__}: {e}"
    except (Fail, subprocess.TimeoutExpired, KeyError, ValueError) as e:
        return "fail", f"FAIL {fn.__name__}: {e}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    """usage: run.py [-jN] [NAME...]: the tests whose names contain a NAME
    (all without one), N at a time (each test is its own processes and
    directory; the default is one at a time)."""
    args = sys.argv[1:]
    jobs = 1
    for a in list(args):
        if re.fullmatch(r"-j\d+", a):
            jobs = max(1, int(a[2:]))
            args.remove(a)
    tests = [fn for fn in TESTS if not args or any(w in fn.__name__ for w in args)]
    counts = {"ok": 0, "fail": 0, "skip": 0}
    if jobs == 1:
        results = map(run_one, tests)
    else:
        import concurrent.futures
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        results = pool.map(run_one, tests)
    for status, line in results:
        print(line, flush=True)
        counts[status] += 1
    print(f"{counts['ok']} passed, {counts['fail']} failed" +
          (f", {counts['skip']} skipped" if counts["skip"] else ""))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
