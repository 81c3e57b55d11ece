/* SPDX-License-Identifier: MIT */
/*
 * gpuspy's intercepted entry points, listed once; part of the trace format
 * (include/gpuspy/format.h includes it, and only it should): a record's
 * api field is an entry's position in GSPY_API_LIST.
 */
#ifndef GPUSPY_APIS_H
#define GPUSPY_APIS_H

/*
 * Every intercepted entry point: X(symbol, kind, version).
 * `symbol` is the exported name; `version` is the CUDA version that
 * introduced that ABI variant (from cudaTypedefs.h's PFN_* names), used to
 * answer cuGetProcAddress(base, version, flags); 0 for runtime symbols.
 * Symbols ending in _ptds/_ptsz are the per-thread-default-stream variants.
 * Append only: the position is the api id stored in records.
 */
#define GSPY_DRIVER_API_LIST(X)                                              \
	X(cuGetProcAddress, none, 11030)                                     \
	X(cuGetProcAddress_v2, none, 12000)                                  \
	X(cuCtxSetCurrent, none, 4000)                                       \
	X(cuCtxPushCurrent_v2, none, 4000)                                   \
	X(cuCtxPopCurrent_v2, none, 4000)                                    \
	X(cuMemAlloc_v2, alloc, 3020)                                        \
	X(cuMemAllocPitch_v2, alloc, 3020)                                   \
	X(cuMemAllocManaged, alloc, 6000)                                    \
	X(cuMemAllocAsync, alloc, 11020)                                     \
	X(cuMemAllocAsync_ptsz, alloc, 11020)                                \
	X(cuMemAllocFromPoolAsync, alloc, 11020)                             \
	X(cuMemAllocFromPoolAsync_ptsz, alloc, 11020)                        \
	X(cuMemFree_v2, free, 3020)                                          \
	X(cuMemFreeAsync, free, 11020)                                       \
	X(cuMemFreeAsync_ptsz, free, 11020)                                  \
	X(cuMemCreate, alloc, 10020)                                         \
	X(cuMemRelease, free, 10020)                                         \
	X(cuMemMap, map, 10020)                                            \
	X(cuMemUnmap, unmap, 10020)                                           \
	X(cuMemHostAlloc, alloc, 2020)                                       \
	X(cuMemAllocHost_v2, alloc, 3020)                                    \
	X(cuMemHostRegister_v2, alloc, 6050)                                 \
	X(cuMemHostUnregister, free, 4000)                                   \
	X(cuMemFreeHost, free, 2000)                                         \
	X(cuMemcpy, copy, 4000)                                              \
	X(cuMemcpy_ptds, copy, 7000)                                         \
	X(cuMemcpyAsync, copy, 4000)                                         \
	X(cuMemcpyAsync_ptsz, copy, 7000)                                    \
	X(cuMemcpyPeer, copy, 4000)                                          \
	X(cuMemcpyPeer_ptds, copy, 7000)                                     \
	X(cuMemcpyPeerAsync, copy, 4000)                                     \
	X(cuMemcpyPeerAsync_ptsz, copy, 7000)                                \
	X(cuMemcpyHtoD_v2, copy, 3020)                                       \
	X(cuMemcpyHtoD_v2_ptds, copy, 7000)                                  \
	X(cuMemcpyDtoH_v2, copy, 3020)                                       \
	X(cuMemcpyDtoH_v2_ptds, copy, 7000)                                  \
	X(cuMemcpyDtoD_v2, copy, 3020)                                       \
	X(cuMemcpyDtoD_v2_ptds, copy, 7000)                                  \
	X(cuMemcpyHtoDAsync_v2, copy, 3020)                                  \
	X(cuMemcpyHtoDAsync_v2_ptsz, copy, 7000)                             \
	X(cuMemcpyDtoHAsync_v2, copy, 3020)                                  \
	X(cuMemcpyDtoHAsync_v2_ptsz, copy, 7000)                             \
	X(cuMemcpyDtoDAsync_v2, copy, 3020)                                  \
	X(cuMemcpyDtoDAsync_v2_ptsz, copy, 7000)                             \
	X(cuMemcpy2D_v2, copy, 3020)                                         \
	X(cuMemcpy2D_v2_ptds, copy, 7000)                                    \
	X(cuMemcpy2DUnaligned_v2, copy, 3020)                                \
	X(cuMemcpy2DUnaligned_v2_ptds, copy, 7000)                           \
	X(cuMemcpy2DAsync_v2, copy, 3020)                                    \
	X(cuMemcpy2DAsync_v2_ptsz, copy, 7000)                               \
	X(cuMemcpy3D_v2, copy, 3020)                                         \
	X(cuMemcpy3D_v2_ptds, copy, 7000)                                    \
	X(cuMemcpy3DAsync_v2, copy, 3020)                                    \
	X(cuMemcpy3DAsync_v2_ptsz, copy, 7000)                               \
	X(cuMemcpy3DPeer, copy, 4000)                                        \
	X(cuMemcpy3DPeer_ptds, copy, 7000)                                   \
	X(cuMemcpy3DPeerAsync, copy, 4000)                                   \
	X(cuMemcpy3DPeerAsync_ptsz, copy, 7000)                              \
	X(cuMemcpyBatchAsync, copy, 12080)                                   \
	X(cuMemcpyBatchAsync_ptsz, copy, 12080)                              \
	X(cuMemcpyBatchAsync_v2, copy, 13000)                                \
	X(cuMemcpyBatchAsync_v2_ptsz, copy, 13000)                           \
	X(cuMemsetD8_v2, memset, 3020)                                       \
	X(cuMemsetD8_v2_ptds, memset, 7000)                                  \
	X(cuMemsetD16_v2, memset, 3020)                                      \
	X(cuMemsetD16_v2_ptds, memset, 7000)                                 \
	X(cuMemsetD32_v2, memset, 3020)                                      \
	X(cuMemsetD32_v2_ptds, memset, 7000)                                 \
	X(cuMemsetD2D8_v2, memset, 3020)                                     \
	X(cuMemsetD2D8_v2_ptds, memset, 7000)                                \
	X(cuMemsetD2D16_v2, memset, 3020)                                    \
	X(cuMemsetD2D16_v2_ptds, memset, 7000)                               \
	X(cuMemsetD2D32_v2, memset, 3020)                                    \
	X(cuMemsetD2D32_v2_ptds, memset, 7000)                               \
	X(cuMemsetD8Async, memset, 3020)                                     \
	X(cuMemsetD8Async_ptsz, memset, 7000)                                \
	X(cuMemsetD16Async, memset, 3020)                                    \
	X(cuMemsetD16Async_ptsz, memset, 7000)                               \
	X(cuMemsetD32Async, memset, 3020)                                    \
	X(cuMemsetD32Async_ptsz, memset, 7000)                               \
	X(cuMemsetD2D8Async, memset, 3020)                                   \
	X(cuMemsetD2D8Async_ptsz, memset, 7000)                              \
	X(cuMemsetD2D16Async, memset, 3020)                                  \
	X(cuMemsetD2D16Async_ptsz, memset, 7000)                             \
	X(cuMemsetD2D32Async, memset, 3020)                                  \
	X(cuMemsetD2D32Async_ptsz, memset, 7000)                             \
	X(cuLaunchKernel, launch, 4000)                                      \
	X(cuLaunchKernel_ptsz, launch, 7000)                                 \
	X(cuLaunchKernelEx, launch, 11060)                                   \
	X(cuLaunchKernelEx_ptsz, launch, 11060)                              \
	X(cuLaunchCooperativeKernel, launch, 9000)                           \
	X(cuLaunchCooperativeKernel_ptsz, launch, 9000)                      \
	X(cuLaunchHostFunc, launch, 10000)                                   \
	X(cuLaunchHostFunc_ptsz, launch, 10000)                              \
	X(cuGraphLaunch, launch, 10000)                                      \
	X(cuGraphLaunch_ptsz, launch, 10000)                                 \
	X(cuStreamSynchronize, sync, 2000)                                   \
	X(cuStreamSynchronize_ptsz, sync, 7000)                              \
	X(cuCtxSynchronize, sync, 2000)                                      \
	X(cuCtxSynchronize_v2, sync, 13000)                                  \
	X(cuEventSynchronize, sync, 2000)                                    \
	X(cuStreamWaitEvent, sync, 3020)                                     \
	X(cuStreamWaitEvent_ptsz, sync, 7000)

#define GSPY_RUNTIME_API_LIST(X)                                             \
	X(cudaGetDriverEntryPoint, none, 0)                                  \
	X(cudaGetDriverEntryPointByVersion, none, 0)                         \
	X(cudaMalloc, alloc, 0)                                              \
	X(cudaMallocPitch, alloc, 0)                                         \
	X(cudaMallocManaged, alloc, 0)                                       \
	X(cudaMallocAsync, alloc, 0)                                         \
	X(cudaMallocAsync_ptsz, alloc, 0)                                    \
	X(cudaMallocFromPoolAsync, alloc, 0)                                 \
	X(cudaMallocFromPoolAsync_ptsz, alloc, 0)                            \
	X(cudaFree, free, 0)                                                 \
	X(cudaFreeAsync, free, 0)                                            \
	X(cudaFreeAsync_ptsz, free, 0)                                       \
	X(cudaMallocHost, alloc, 0)                                          \
	X(cudaHostAlloc, alloc, 0)                                           \
	X(cudaHostRegister, alloc, 0)                                        \
	X(cudaHostUnregister, free, 0)                                       \
	X(cudaFreeHost, free, 0)                                             \
	X(cudaMemcpy, copy, 0)                                               \
	X(cudaMemcpy_ptds, copy, 0)                                          \
	X(cudaMemcpyAsync, copy, 0)                                          \
	X(cudaMemcpyAsync_ptsz, copy, 0)                                     \
	X(cudaMemcpyPeer, copy, 0)                                           \
	X(cudaMemcpyPeerAsync, copy, 0)                                      \
	X(cudaMemcpy2D, copy, 0)                                             \
	X(cudaMemcpy2D_ptds, copy, 0)                                        \
	X(cudaMemcpy2DAsync, copy, 0)                                        \
	X(cudaMemcpy2DAsync_ptsz, copy, 0)                                   \
	X(cudaMemset, memset, 0)                                             \
	X(cudaMemset_ptds, memset, 0)                                        \
	X(cudaMemsetAsync, memset, 0)                                        \
	X(cudaMemsetAsync_ptsz, memset, 0)                                   \
	X(cudaLaunchKernel, launch, 0)                                       \
	X(cudaLaunchKernel_ptsz, launch, 0)                                  \
	X(__cudaLaunchKernel, launch, 0)                                     \
	X(__cudaLaunchKernel_ptsz, launch, 0)                                \
	X(cudaLaunchKernelExC, launch, 0)                                    \
	X(cudaLaunchKernelExC_ptsz, launch, 0)                               \
	X(cudaLaunchCooperativeKernel, launch, 0)                            \
	X(cudaLaunchCooperativeKernel_ptsz, launch, 0)                       \
	X(cudaLaunchHostFunc, launch, 0)                                     \
	X(cudaLaunchHostFunc_ptsz, launch, 0)                                \
	X(cudaGraphLaunch, launch, 0)                                        \
	X(cudaGraphLaunch_ptsz, launch, 0)                                   \
	X(cudaStreamSynchronize, sync, 0)                                    \
	X(cudaStreamSynchronize_ptsz, sync, 0)                               \
	X(cudaDeviceSynchronize, sync, 0)                                    \
	X(cudaEventSynchronize, sync, 0)                                     \
	X(cudaStreamWaitEvent, sync, 0)                                      \
	X(cudaStreamWaitEvent_ptsz, sync, 0)

/* Where phases come from: the public C API (exported), NVTX and the
 * PyTorch hooks (neither exported under these names). */
#define GSPY_PHASE_API_LIST(X)                                               \
	X(gpuspy_phase_push, phase_begin, 0)                                 \
	X(gpuspy_phase_pop, phase_end, 0)                                    \
	X(gpuspy_mark, mark, 0)                                              \
	X(nvtxRangePush, phase_begin, 0)                                     \
	X(nvtxRangePop, phase_end, 0)                                        \
	X(nvtxRangeStart, phase_begin, 0)                                    \
	X(nvtxRangeEnd, phase_end, 0)                                        \
	X(nvtxMark, mark, 0)                                                 \
	X(torch_phase_begin, phase_begin, 0)                                 \
	X(torch_phase_end, phase_end, 0)                                     \
	X(cupti_kernel, gpu_kernel, 0)                                       \
	X(cupti_memcpy, gpu_copy, 0)                                         \
	X(cupti_memset, gpu_memset, 0)

/* Host memory (GPUSPY_HOST_ALLOC_MIN): the C allocator and mmap. */
#define GSPY_HOST_API_LIST(X)                                                \
	X(malloc, alloc, 0)                                                  \
	X(calloc, alloc, 0)                                                  \
	X(realloc, alloc, 0)                                                 \
	X(free, free, 0)                                                     \
	X(posix_memalign, alloc, 0)                                          \
	X(aligned_alloc, alloc, 0)                                           \
	X(mmap, alloc, 0)                                                    \
	X(munmap, free, 0)

/* GPU time from CUDA events at phase boundaries (GPUSPY_CUPTI=events). */
#define GSPY_EVENTS_API_LIST(X) X(cuda_event_span, gpu_span, 0)

/* CUDA graphs: stream capture (not recorded: it marks the calls made
 * meanwhile, GSPY_FLAG_CAPTURED) and instantiation (what a launch runs).
 * The runtime's graph calls reach these through the driver. */
#define GSPY_GRAPH_API_LIST(X)                                               \
	X(cuStreamBeginCapture_v2, none, 10010)                              \
	X(cuStreamBeginCapture_v2_ptsz, none, 10010)                         \
	X(cuStreamBeginCaptureToGraph, none, 12030)                          \
	X(cuStreamBeginCaptureToGraph_ptsz, none, 12030)                     \
	X(cuStreamEndCapture, none, 10000)                                   \
	X(cuStreamEndCapture_ptsz, none, 10000)                              \
	X(cuGraphInstantiateWithFlags, graph, 11040)                         \
	X(cuGraphInstantiateWithParams, graph, 12000)                        \
	X(cuGraphInstantiateWithParams_ptsz, graph, 12000)                   \
	X(cuGraphExecUpdate_v2, graph, 12000)

/* Device telemetry (GPUSPY_NVML_MS): one record per device and sample. */
#define GSPY_TELEMETRY_API_LIST(X) X(nvml_sample, nvml, 0)

/* Recording paused and resumed: by gpuspy_pause()/gpuspy_resume(), or by
 * `gpuspy stop`/`start`/`record` through the header (ctl_*). Marks named
 * "(paused)" and "(resumed)"; readers leave the time between out. */
#define GSPY_CONTROL_API_LIST(X)                                             \
	X(gpuspy_pause, mark, 0)                                             \
	X(gpuspy_resume, mark, 0)

/* Driver calls that change which context is current on the thread (as
 * cuCtxSetCurrent above, only where a device is cached): not recorded. */
#define GSPY_CONTEXT_API_LIST(X)                                             \
	X(cuCtxCreate_v2, none, 3020)                                        \
	X(cuCtxCreate_v3, none, 11040)                                       \
	X(cuCtxCreate_v4, none, 12050)                                       \
	X(cuCtxDestroy_v2, none, 4000)

/* Streams destroyed (not recorded): GPUSPY_CUPTI=events ends its interval
 * on one first and never touches it again. The runtime's cudaStreamDestroy
 * reaches these through the driver. */
#define GSPY_STREAM_API_LIST(X)                                              \
	X(cuStreamDestroy, none, 2000)                                       \
	X(cuStreamDestroy_v2, none, 4000)

#define GSPY_API_LIST(X)                                                     \
	GSPY_DRIVER_API_LIST(X) GSPY_RUNTIME_API_LIST(X) GSPY_PHASE_API_LIST(X) \
	GSPY_HOST_API_LIST(X) GSPY_EVENTS_API_LIST(X) GSPY_GRAPH_API_LIST(X)   \
	GSPY_TELEMETRY_API_LIST(X) GSPY_CONTROL_API_LIST(X) GSPY_CONTEXT_API_LIST(X) \
	GSPY_STREAM_API_LIST(X)

#endif
