# SPDX-License-Identifier: MIT
"""How calls are caught: the runtime's and driver's routes (exported symbols, per-thread variants, cudaGetDriverEntryPoint, dlsym), every API family, and errors passed back unchanged."""
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)


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
    no current context; a thread's switch leaves another thread's device
    as it was, and the same context set twice keeps it; a memset of pinned
    host memory is the current device's; a context made by cuCtxCreate is
    current until cuCtxDestroy pops it; the memory of both devices in the
    header. With
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
            ("memset", "cuMemsetD8_v2", 32, None, 1, False),
            ("launch", "cuLaunchKernel", None, "dev0_kernel", 0, True),
            ("launch", "cuLaunchKernel", None, "other_dev1_kernel", 1, False),
            ("launch", "cuLaunchKernel", None, "dev0_kernel", 0, True),
            ("alloc", "cuMemHostAlloc", 256, None, -1, True), ("memset", "cuMemsetD8_v2", 256, None, 0, True),
            ("free", "cuMemFreeHost", 256, None, -1, True),
            ("launch", "cuLaunchKernel", None, "created_kernel", 1, True),
            ("launch", "cuLaunchKernel", None, "dev0_kernel", 0, True), ("free", "cuMemFree_v2", 2048, None, 0, True),
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
                  ("gpu_copy", 0, 0), ("gpu_memset", 1, 1), ("gpu_kernel", 0, 0), ("gpu_kernel", 1, 1),
                  ("gpu_kernel", 0, 0), ("gpu_memset", 0, 0), ("gpu_kernel", 1, 1), ("gpu_kernel", 0, 0)],
          f"GPU records (kind, device, call's device) {gpu}")
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
    """Driver entry points by dlsym on libcuda's handle, cuGetProcAddress's
    self-lookup in both ABIs, versioned and per-thread variants and
    cudaGetDriverEntryPointByVersion: each call one event, output as
    untraced; unknown names come back untouched, and three
    cudaGetDriverEntryPoint of one gpuspy does not wrap ask the runtime's
    version once in all (FAKECUDART_STATS)."""
    p = same_output("prog_dlsym", tmp, env={"FAKECUDART_STATS": "1"})
    out = p.stdout
    check("cuInit comes from libcuda.so.1" in out, "an unknown name did not pass through untouched")
    check("cuModuleGetFunction comes from libcuda.so.1" in out,
          "an unhooked cuGetProcAddress result was changed")
    check("cuModuleGetFunction by the runtime comes from libcuda.so.1" in out,
          "an unhooked cudaGetDriverEntryPoint result was changed")
    check("unknown rc=0 ptr=NULL status=1" in out, "a missing symbol did not come back as NULL")
    check("fakecudart: 1 cudaRuntimeGetVersion calls" in p.stderr.splitlines(),
          f"the runtime's version asked for more than once: {p.stderr!r}")
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
def route3_abi_newer_than_gpuspy_knows_is_not_wrapped(tmp):
    """cuGetProcAddress_v2("cuLaunchHostFunc") at 13.1, where the driver
    double answers with a function of four arguments (FAKECUDA_NEWER_ABI):
    gpuspy knows no ABI of that name past 10.0, asks again at 10.0, gets
    another function and hands the answer back unwrapped (so a call with
    syncMode 1 runs its callback, rc 0, and is not recorded), as it does
    through cudaGetDriverEntryPointByVersion at 13.1. The exported
    cuLaunchHostFunc, libcuda's by dlsym and the 12.0 answer still reach
    the old function (the new one ran twice, both times untraced): output
    as untraced, three cuLaunchHostFunc events."""
    env = {"FAKECUDA_NEWER_ABI": "1"}
    a = run("prog_dlsym", ["newer"], env=env, preload=False, tmp=tmp)
    b = run("prog_dlsym", ["newer"], env=env, tmp=tmp)
    want = ("13.1 lookup rc=0 status=0 from libcuda.so.1\n"
            "13.1 call rc=0 ran=1 newer=1\n"
            "exported call rc=0 ran=2 newer=1\n"
            "libcuda's by name rc=0 ran=3 newer=1\n"
            "12.0 call rc=0 ran=4 newer=1\n"
            "runtime 13.1 lookup rc=0 status=0\n"
            "runtime 13.1 call rc=0 ran=5 newer=2\n")
    check(a.stdout == want, f"untraced: {a.stdout!r}")
    check(b.stdout == want, f"traced: {b.stdout!r}")
    _, ev = only_trace(tmp)
    compare(ev, [E("launch", "cuLaunchHostFunc", name="(host function)")] * 3)


# Looks cuCtxCreate up by version in each way a program can (the driver's
# cuGetProcAddress in both ABIs, the runtime's entry point queries), calls
# each answer in the ABI its version has (as cuda-python does) to create a
# context on device 1, launches, destroys it and launches again on device 0.
CTX_CREATE_PY = r"""
import ctypes, os
from ctypes import byref, c_int, c_uint, c_void_p, c_char_p, POINTER
cu = ctypes.CDLL("libcuda.so.1")
rt = ctypes.CDLL("libcudart.so.13")
dl = ctypes.CDLL("libdl.so.2")

class DlInfo(ctypes.Structure):
    _fields_ = [("fname", c_char_p), ("fbase", c_void_p), ("sname", c_char_p), ("saddr", c_void_p)]

def where(p):
    i = DlInfo()
    if not p or not dl.dladdr(c_void_p(p), byref(i)):
        return "(none)"
    return os.path.basename(i.fname.decode()) + " " + (i.sname or b"?").decode()

cu.fakecuda_function.restype = c_void_p
cu.cuLaunchKernel.argtypes = [c_void_p] + [c_uint] * 7 + [c_void_p] * 3
def launch(name):
    cu.cuLaunchKernel(cu.fakecuda_function(name.encode(), None), 1, 1, 1, 32, 1, 1, 0, None, None, None)

ABI = {4: ctypes.CFUNCTYPE(c_int, POINTER(c_void_p), c_void_p, c_uint, c_int),
       3: ctypes.CFUNCTYPE(c_int, POINTER(c_void_p), c_void_p, c_int, c_uint, c_int),
       2: ctypes.CFUNCTYPE(c_int, POINTER(c_void_p), c_uint, c_int)}
def create(abi, p, ctx):
    f = ABI[abi](p)
    return f(byref(ctx), None, 0, 1) if abi == 4 else f(byref(ctx), None, 0, 0, 1) if abi == 3 else f(byref(ctx), 0, 1)

cu.cuInit(0)
c0 = c_void_p()
cu.cuDevicePrimaryCtxRetain(byref(c0), 0)
cu.cuCtxSetCurrent(c0)
cu.cuCtxDestroy_v2.argtypes = [c_void_p]
gpa5 = cu.cuGetProcAddress_v2
gpa4 = cu.cuGetProcAddress
for how, version, abi in (("driver", 13000, 4), ("driver", 12050, 4), ("driver", 11040, 3), ("driver", 11030, 2),
                          ("driver 4-argument", 13000, 4), ("runtime", 12050, 4), ("runtime default", 13000, 4)):
    p = c_void_p()
    if how == "driver":
        rc = gpa5(b"cuCtxCreate", byref(p), version, ctypes.c_uint64(0), None)
    elif how == "driver 4-argument":
        rc = gpa4(b"cuCtxCreate", byref(p), version, ctypes.c_uint64(0))
    elif how == "runtime":
        rc = rt.cudaGetDriverEntryPointByVersion(b"cuCtxCreate", byref(p), version, ctypes.c_uint64(0), None)
    else:
        rc = rt.cudaGetDriverEntryPoint(b"cuCtxCreate", byref(p), ctypes.c_uint64(0), None)
    ctx = c_void_p()
    crc = create(abi, p.value, ctx)
    launch(f"created_{version}")
    drc = cu.cuCtxDestroy_v2(ctx)
    launch(f"dev0_{version}")
    print(f"{how} {version}: rc={rc} {where(p.value)} create rc={crc} ctx={ctx.value} destroy rc={drc}")
"""


@test
def route3_every_cuCtxCreate_abi_by_version(tmp):
    """cuCtxCreate looked up by version (cuGetProcAddress_v2 at 13.0, 12.5,
    11.4 and 11.3, cuGetProcAddress at 13.0, the runtime's
    cudaGetDriverEntryPointByVersion at 12.5 and cudaGetDriverEntryPoint at
    its 13.0) from Python through ctypes: the driver double answers with
    its own cuCtxCreate_v4 from 12.5 on, _v3 at 11.4, _v2 at 11.3
    (FAKECUDA_OWN_PROCS), and gpuspy hands out its wrapper of that same
    variant; so each context created through it on device 1 is noticed
    (the launch after it on device 1, the one after cuCtxDestroy on device
    0), and the output is as untraced but for where the function lives."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    env = {"LD_LIBRARY_PATH": BIN, "GPUSPY_TORCH": "0", "FAKECUDA_OWN_PROCS": "1"}
    a = run_py(["-c", CTX_CREATE_PY], tmp, env=env, preload=False)
    b = run_py(["-c", CTX_CREATE_PY], tmp, env=env)
    rows = (("driver", 13000, 4), ("driver", 12050, 4), ("driver", 11040, 3), ("driver", 11030, 2),
            ("driver 4-argument", 13000, 4), ("runtime", 12050, 4), ("runtime default", 13000, 4))
    want = "".join(f"{how} {v}: rc=0 %s cuCtxCreate_v{abi} create rc=0 ctx=32 destroy rc=0\n"
                   for how, v, abi in rows)
    check(a.returncode == 0 and a.stdout == want % (("libcuda.so.1",) * len(rows)),
          f"untraced: rc {a.returncode} {a.stdout!r} {a.stderr[-300:]!r}")
    check(b.returncode == 0, f"traced: rc {b.returncode} {b.stderr[-300:]!r}")
    _, ev = only_trace(tmp)
    got = [(e["name"], e["device"]) for e in ev if e["kind"] == "launch"]
    check(got == [(f"{k}_{v}", 1 if k == "created" else 0) for _, v, _ in rows for k in ("created", "dev0")],
          f"launches (kernel, device) {got}")
    check(b.stdout == want % (("libgpuspy.so",) * len(rows)), f"traced: {b.stdout!r}")


# Asks the driver's cuGetProcAddress_v2 for every (name, version, flags) of
# the lines on stdin and prints where each answer lives: its library and
# symbol.
PROC_WHERE_PY = r"""
import ctypes, os, sys
from ctypes import byref, c_char_p, c_uint64, c_void_p
cu = ctypes.CDLL("libcuda.so.1")
dl = ctypes.CDLL("libdl.so.2")

class DlInfo(ctypes.Structure):
    _fields_ = [("fname", c_char_p), ("fbase", c_void_p), ("sname", c_char_p), ("saddr", c_void_p)]

cu.cuInit(0)
for line in sys.stdin:
    name, version, flags = line.split()
    p, i = c_void_p(), DlInfo()
    cu.cuGetProcAddress_v2(name.encode(), byref(p), int(version), c_uint64(int(flags)), None)
    w = "(none)"
    if p.value and dl.dladdr(p, byref(i)):
        w = os.path.basename(i.fname.decode()) + " " + i.sname.decode()
    print(line.strip(), w)
"""


def driver_variants():
    """(exported name, base name, version) of every driver entry point in
    include/gpuspy/apis.h: the base is the name without _ptds/_ptsz, then
    without _vN, as the driver asks for it."""
    src = open(os.path.join(ROOT, "include", "gpuspy", "apis.h")).read()
    return [(n, re.sub(r"_v\d+$", "", re.sub(r"_pt(ds|sz)$", "", n)), int(v))
            for n, v in re.findall(r"X\((cu\w+),\s*\w+,\s*(\d+)\)", src) if int(v)]


@test
def route3_every_variant_by_version(tmp):
    """Every driver entry point gpuspy wraps, asked for through
    cuGetProcAddress_v2 by its base name at each of its variants' versions,
    one below each, 13.0 and 13.1, with and without the per-thread flag:
    traced, the answer is gpuspy's own wrapper of exactly the variant the
    driver double answers untraced with its own function
    (FAKECUDA_OWN_PROCS; NULL where it answers NULL), so a
    variant past _v3 (cuCtxCreate_v4 from 12.5) is wrapped too; asked at a
    variant's own version and flag, each variant is the answer."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    vs = driver_variants()
    versions = {}
    for _, b, v in vs:
        versions.setdefault(b, set()).update((v, v - 1, 13000, 13010))
    asks = "".join(f"{b} {v} {f}\n" for b in sorted(versions) for v in sorted(versions[b]) for f in (0, 2))
    env = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_DIR=tmp, GPUSPY_TORCH="0", FAKECUDA_OWN_PROCS="1")
    env.pop("LD_PRELOAD", None)
    out = {}
    for traced in (False, True):
        e = dict(env, LD_PRELOAD=LIB) if traced else env
        p = subprocess.run([SYS_PY, "-c", PROC_WHERE_PY], input=asks, env=e, capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == 0, f"traced={traced}: exit {p.returncode}: {p.stderr[-300:]!r}")
        out[traced] = p.stdout.splitlines()
    n = asks.count("\n")
    check(len(out[False]) == len(out[True]) == n, f"{len(out[False])}/{len(out[True])} answers for {n} lookups")
    lib = {" ".join(l.split()[:3]): l.split()[3:] for l in out[False]}
    check(all(w in (["(none)"], ["libcuda.so.1", w[-1]]) for w in lib.values()),
          f"untraced answers not libcuda's: {[k for k, w in lib.items() if w[0] not in ('(none)', 'libcuda.so.1')]}")
    wrong = [f"{a} -> {t}" for a, t in zip(out[False], out[True])
             if t != a.replace("libcuda.so.1", "libgpuspy.so")]
    check(not wrong, f"{len(wrong)} answers not gpuspy's wrapper of the driver's variant: {wrong[:8]}")
    own = [name for name, b, v in vs
           if lib[f"{b} {v} {2 if name.endswith(('_ptds', '_ptsz')) else 0}"][-1] != name]
    check(not own, f"variants not answered at their own version: {own}")
    for a in ("cuCtxCreate 13000 0 libgpuspy.so cuCtxCreate_v4", "cuCtxCreate 12049 0 libgpuspy.so cuCtxCreate_v3",
              "cuMemcpy2DAsync 13010 2 libgpuspy.so cuMemcpy2DAsync_v2_ptsz"):
        check(a in out[True], f"{a!r} not among the traced answers")


@test
def route2_names_absent_without_cuda_stay_absent(tmp):
    """A program linked with no CUDA library probes for CUDA with dlsym
    (RTLD_DEFAULT, its own handle, RTLD_NEXT) and dlvsym: gpuspy's own
    exports of the names (runtime, driver, newest ABIs, cuGetProcAddress)
    are not handed out where nothing else defines them, so the program
    finds none, takes its CPU path as untraced, and no trace is written."""
    a = run("prog_nocuda", preload=False, tmp=tmp)
    b = run("prog_nocuda", tmp=tmp)
    names = ("cudaMalloc", "cudaGetDriverEntryPointByVersion", "cuCtxSynchronize_v2", "cuMemcpyBatchAsync_v2",
             "cuLaunchKernel", "cuGetProcAddress")
    want = "".join(f"{n}: default absent, own handle absent, next absent, versioned absent\n"
                   for n in names) + "CPU path\n"
    check(a.stdout == want, f"untraced: {a.stdout!r}")
    check(b.stdout == want, f"traced: {b.stdout!r}")
    check(traces(tmp) == [], f"a process that never used CUDA wrote {traces(tmp)}")


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
