/* SPDX-License-Identifier: MIT */
/*
 * The CUDA declarations the hooks define, under their exported names.
 * cuda.h renames some entry points with macros (cuGetProcAddress ->
 * cuGetProcAddress_v2, cuMemcpyBatchAsync -> cuMemcpyBatchAsync_v2) and
 * declares the per-thread (_ptds/_ptsz) variants only in per-thread mode;
 * the exported ABI has all of them, so they are declared here.
 * Only headers are used: libgpuspy never links libcuda or libcudart.
 */
#ifndef GS_CUDA_API_H
#define GS_CUDA_API_H

#define CUDA_ENABLE_DEPRECATED 1 /* we wrap the deprecated entry points too */
#include <cuda.h>
#include <cuda_runtime_api.h>

#undef cuGetProcAddress
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#undef cuStreamDestroy

/* Old ABIs still exported by libcuda. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuStreamDestroy(CUstream hStream);
CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
			    CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
			    size_t *failIdx, CUstream hStream);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
			unsigned int flags, CUdevice dev);

/* Per-thread default stream variants: same types as the plain ones. */
#define GS_SAME(v, base) __typeof__(base) v;
GS_SAME(cuMemAllocAsync_ptsz, cuMemAllocAsync)
GS_SAME(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync)
GS_SAME(cuMemFreeAsync_ptsz, cuMemFreeAsync)
GS_SAME(cuMemcpy_ptds, cuMemcpy)
GS_SAME(cuMemcpyAsync_ptsz, cuMemcpyAsync)
GS_SAME(cuMemcpyPeer_ptds, cuMemcpyPeer)
GS_SAME(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync)
GS_SAME(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2)
GS_SAME(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2)
GS_SAME(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2)
GS_SAME(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2)
GS_SAME(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2)
GS_SAME(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2)
GS_SAME(cuMemcpy2D_v2_ptds, cuMemcpy2D_v2)
GS_SAME(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned_v2)
GS_SAME(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync_v2)
GS_SAME(cuMemcpy3D_v2_ptds, cuMemcpy3D_v2)
GS_SAME(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync_v2)
GS_SAME(cuMemcpy3DPeer_ptds, cuMemcpy3DPeer)
GS_SAME(cuMemcpy3DPeerAsync_ptsz, cuMemcpy3DPeerAsync)
GS_SAME(cuMemcpyBatchAsync_ptsz, cuMemcpyBatchAsync)
GS_SAME(cuMemcpyBatchAsync_v2_ptsz, cuMemcpyBatchAsync_v2)
GS_SAME(cuMemsetD8_v2_ptds, cuMemsetD8_v2)
GS_SAME(cuMemsetD16_v2_ptds, cuMemsetD16_v2)
GS_SAME(cuMemsetD32_v2_ptds, cuMemsetD32_v2)
GS_SAME(cuMemsetD2D8_v2_ptds, cuMemsetD2D8_v2)
GS_SAME(cuMemsetD2D16_v2_ptds, cuMemsetD2D16_v2)
GS_SAME(cuMemsetD2D32_v2_ptds, cuMemsetD2D32_v2)
GS_SAME(cuMemsetD8Async_ptsz, cuMemsetD8Async)
GS_SAME(cuMemsetD16Async_ptsz, cuMemsetD16Async)
GS_SAME(cuMemsetD32Async_ptsz, cuMemsetD32Async)
GS_SAME(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async)
GS_SAME(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async)
GS_SAME(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async)
GS_SAME(cuLaunchKernel_ptsz, cuLaunchKernel)
GS_SAME(cuLaunchKernelEx_ptsz, cuLaunchKernelEx)
GS_SAME(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel)
GS_SAME(cuLaunchHostFunc_ptsz, cuLaunchHostFunc)
GS_SAME(cuGraphLaunch_ptsz, cuGraphLaunch)
GS_SAME(cuStreamSynchronize_ptsz, cuStreamSynchronize)
GS_SAME(cuStreamWaitEvent_ptsz, cuStreamWaitEvent)
GS_SAME(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture_v2)
GS_SAME(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph)
GS_SAME(cuStreamEndCapture_ptsz, cuStreamEndCapture)
GS_SAME(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams)

/* Runtime: what nvcc-generated code calls, and the per-thread variants. */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
			       size_t sharedMem, cudaStream_t stream);
GS_SAME(__cudaLaunchKernel_ptsz, __cudaLaunchKernel)
GS_SAME(cudaMallocAsync_ptsz, cudaMallocAsync)
GS_SAME(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync)
GS_SAME(cudaFreeAsync_ptsz, cudaFreeAsync)
GS_SAME(cudaMemcpy_ptds, cudaMemcpy)
GS_SAME(cudaMemcpyAsync_ptsz, cudaMemcpyAsync)
GS_SAME(cudaMemcpy2D_ptds, cudaMemcpy2D)
GS_SAME(cudaMemcpy2DAsync_ptsz, cudaMemcpy2DAsync)
GS_SAME(cudaMemset_ptds, cudaMemset)
GS_SAME(cudaMemsetAsync_ptsz, cudaMemsetAsync)
GS_SAME(cudaLaunchKernel_ptsz, cudaLaunchKernel)
GS_SAME(cudaLaunchKernelExC_ptsz, cudaLaunchKernelExC)
GS_SAME(cudaLaunchCooperativeKernel_ptsz, cudaLaunchCooperativeKernel)
GS_SAME(cudaLaunchHostFunc_ptsz, cudaLaunchHostFunc)
GS_SAME(cudaGraphLaunch_ptsz, cudaGraphLaunch)
GS_SAME(cudaStreamSynchronize_ptsz, cudaStreamSynchronize)
GS_SAME(cudaStreamWaitEvent_ptsz, cudaStreamWaitEvent)
#undef GS_SAME

#endif /* GS_CUDA_API_H */
