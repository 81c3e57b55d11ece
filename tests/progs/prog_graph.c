/* SPDX-License-Identifier: MIT */
/*
 * CUDA graphs on the driver double (tests/test_graphs.py): a graph
 * captured from a stream (a stream-ordered allocation, a kernel, a pinned
 * upload, a memset, the allocation's free), a graph
 * built node by node around it (a kernel, a pageable download, the first
 * graph as a child), both instantiated (with flags; with parameters,
 * through cuGetProcAddress), launched 3 and 2 times; the first then
 * updated from a larger capture and launched once more; and a launch of a
 * graph gpuspy never saw instantiated. Prints each call's result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"
#include "prog_common.h"

static CUgraph capture(CUstream st, CUdeviceptr d, void *pinned, size_t bytes, unsigned grid)
{
	CUgraph g = NULL;
	CUdeviceptr tmp = 0;
	CALL(cuStreamBeginCapture_v2(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CALL(cuMemAllocAsync(&tmp, bytes, st));
	CALL(cuLaunchKernel(fakecuda_function("cap_k", NULL), grid, 1, 1, 32, 1, 1, 0, st, NULL, NULL));
	CALL(cuMemcpyHtoDAsync_v2(d, pinned, bytes, st));
	CALL(cuMemsetD32Async(d, 0, bytes / 4, st));
	CALL(cuMemFreeAsync(tmp, st));
	CALL(cuStreamEndCapture(st, &g));
	return g;
}

int main(void)
{
	CUcontext ctx;
	CUdeviceptr d = 0;
	void *pinned = NULL;
	char *pageable = calloc(1, 4096);
	CUstream st = (CUstream)0x7010;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	CALL(cuMemAlloc_v2(&d, 8192));
	CALL(cuMemHostAlloc(&pinned, 4096, 0));

	CUgraph g1 = capture(st, d, pinned, 1000, 4);

	CUgraph g2 = NULL;
	CUgraphNode n;
	CALL(cuGraphCreate(&g2, 0));
	CUDA_KERNEL_NODE_PARAMS kp;
	memset(&kp, 0, sizeof(kp));
	kp.func = fakecuda_function("node_k", NULL);
	kp.gridDimX = 2, kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = 64, kp.blockDimY = kp.blockDimZ = 1;
	CALL(cuGraphAddKernelNode_v2(&n, g2, NULL, 0, &kp));
	CUDA_MEMCPY3D cp;
	memset(&cp, 0, sizeof(cp));
	cp.srcMemoryType = CU_MEMORYTYPE_DEVICE, cp.srcDevice = d;
	cp.dstMemoryType = CU_MEMORYTYPE_HOST, cp.dstHost = pageable;
	cp.WidthInBytes = 300, cp.Height = 1, cp.Depth = 1;
	CALL(cuGraphAddMemcpyNode(&n, g2, NULL, 0, &cp, ctx));
	CALL(cuGraphAddChildGraphNode(&n, g2, NULL, 0, g1));
	CALL(cuGraphAddEmptyNode(&n, g2, NULL, 0));

	CUgraphExec e1 = NULL, e2 = NULL;
	CALL(cuGraphInstantiateWithFlags(&e1, g1, 0));
	CUresult (*with_params)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *) = NULL;
	CALL(cuGetProcAddress_v2("cuGraphInstantiateWithParams", (void **)&with_params, 12000, 0, NULL));
	CUDA_GRAPH_INSTANTIATE_PARAMS ip;
	memset(&ip, 0, sizeof(ip));
	CALL(with_params(&e2, g2, &ip));

	for (int i = 0; i < 3; i++)
		CALL(cuGraphLaunch(e1, st));
	for (int i = 0; i < 2; i++)
		CALL(cuGraphLaunch(e2, st));

	CUgraph g3 = capture(st, d, pinned, 2000, 8);
	CUgraphExecUpdateResultInfo info;
	CALL(cuGraphExecUpdate_v2(e1, g3, &info));
	CALL(cuGraphLaunch(e1, st));
	CALL(cuGraphLaunch((CUgraphExec)0x4444, st));

	/* Not captured any more: this one runs. */
	CALL(cuLaunchKernel(fakecuda_function("after", NULL), 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL));
	CALL(cuStreamSynchronize(st));
	return 0;
}
