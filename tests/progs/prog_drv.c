/* SPDX-License-Identifier: MIT */
/*
 * Driver API scenario, linked directly against libcuda.so.1 (route 1 at the
 * driver level): one call of every intercepted driver family, in a fixed
 * order that tests/run.py checks. With PTDS it calls the _ptds/_ptsz
 * exported variants where they exist.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"
#include "prog_common.h"

static void host_fn(void *p) { ++*(int *)p; }

/* The buffers main made, which the copies use. */
struct bufs {
	CUdeviceptr a, b, pa, vaddr;
	size_t pitch;
	void *ph, *ph2;
	char *pg;
	CUcontext ctx;
	CUstream st;
};

/* Every copy family: 1D in each direction and memory kind, peer, 2D, 3D,
 * batched. Each names the buffers as main does (CALL prints the call as
 * written). */
static void copies(const struct bufs *x)
{
	CUdeviceptr a = x->a, b = x->b, pa = x->pa, vaddr = x->vaddr;
	size_t pitch = x->pitch;
	void *ph = x->ph, *ph2 = x->ph2;
	char *pg = x->pg;
	CUcontext ctx = x->ctx;
	CUstream st = x->st;
	CALL(D(cuMemcpy)(a, (CUdeviceptr)pg, 1000));                 /* h2d pageable */
	CALL(S(cuMemcpyAsync)((CUdeviceptr)ph, a, 500, st));         /* d2h pinned */
	CALL(D(cuMemcpyPeer)(b, (CUcontext)0x20, a, (CUcontext)0x10, 300)); /* p2p */
	CALL(S(cuMemcpyPeerAsync)(b, ctx, a, ctx, 200, st));          /* d2d */
	CALL(D(cuMemcpyHtoD_v2)(a, pg + 4096, 4096));                /* h2d pinned (registered) */
	CALL(D(cuMemcpyDtoH_v2)(pg, a, 2048));                       /* d2h pageable */
	CALL(D(cuMemcpyDtoD_v2)(b, a, 1024));                        /* d2d */
	CALL(S(cuMemcpyHtoDAsync_v2)(a, ph2, 2048, st));             /* h2d pinned */
	CALL(S(cuMemcpyDtoHAsync_v2)(pg, a, 512, st));               /* d2h pageable */
	CALL(S(cuMemcpyDtoDAsync_v2)(vaddr, a, 256, st));            /* d2d into VMM */
	CALL(S(cuMemcpyDtoHAsync_v2)(pg, (CUdeviceptr)ph, 8, st));   /* h2h: the "device" end is pinned host memory */
	CUDA_MEMCPY2D c2;
	memset(&c2, 0, sizeof(c2));
	c2.srcMemoryType = CU_MEMORYTYPE_HOST; c2.srcHost = pg; c2.srcPitch = 100;
	c2.dstMemoryType = CU_MEMORYTYPE_DEVICE; c2.dstDevice = pa; c2.dstPitch = pitch;
	c2.WidthInBytes = 100; c2.Height = 10;
	CALL(D(cuMemcpy2D_v2)(&c2));                                  /* h2d pageable 1000 */
	CALL(D(cuMemcpy2DUnaligned_v2)(&c2));
	c2.srcHost = ph; 
	CALL(S(cuMemcpy2DAsync_v2)(&c2, st));                         /* h2d pinned 1000 */
	CUDA_MEMCPY3D c3;
	memset(&c3, 0, sizeof(c3));
	c3.srcMemoryType = CU_MEMORYTYPE_DEVICE; c3.srcDevice = a; c3.srcPitch = 64; c3.srcHeight = 4;
	c3.dstMemoryType = CU_MEMORYTYPE_UNIFIED; c3.dstDevice = (CUdeviceptr)pg; c3.dstPitch = 64; c3.dstHeight = 4;
	c3.WidthInBytes = 64; c3.Height = 4; c3.Depth = 2;
	CALL(D(cuMemcpy3D_v2)(&c3));                                  /* d2h pageable 512 */
	CALL(S(cuMemcpy3DAsync_v2)(&c3, st));
	CUDA_MEMCPY3D_PEER cp;
	memset(&cp, 0, sizeof(cp));
	cp.srcMemoryType = CU_MEMORYTYPE_DEVICE; cp.srcDevice = a; cp.srcPitch = 32; cp.srcHeight = 2; cp.srcContext = (CUcontext)0x10;
	cp.dstMemoryType = CU_MEMORYTYPE_DEVICE; cp.dstDevice = b; cp.dstPitch = 32; cp.dstHeight = 2; cp.dstContext = (CUcontext)0x20;
	cp.WidthInBytes = 32; cp.Height = 2; cp.Depth = 1;
	CALL(D(cuMemcpy3DPeer)(&cp));                                 /* p2p 64 */
	CALL(S(cuMemcpy3DPeerAsync)(&cp, st));
	CUdeviceptr dsts[2] = { a, a + 1024 }, srcs[2] = { (CUdeviceptr)ph, (CUdeviceptr)ph + 100 };
	size_t sizes[2] = { 100, 28 }, fail_idx = 0;
	CALL(S(cuMemcpyBatchAsync)(dsts, srcs, sizes, 2, NULL, NULL, 0, &fail_idx, st)); /* 12.8 ABI */
	CALL(S(cuMemcpyBatchAsync_v2)(dsts, srcs, sizes, 2, NULL, NULL, 0, st));         /* 13.0 ABI */
}

/* Every memset family: 1D and 2D, of each width, synchronous and on the stream. */
static void memsets(CUdeviceptr a, CUdeviceptr pa, size_t pitch, CUstream st)
{
	CALL(D(cuMemsetD8_v2)(a, 1, 100));
	CALL(D(cuMemsetD16_v2)(a, 1, 100));
	CALL(D(cuMemsetD32_v2)(a, 1, 100));
	CALL(D(cuMemsetD2D8_v2)(pa, pitch, 1, 10, 3));
	CALL(D(cuMemsetD2D16_v2)(pa, pitch, 1, 10, 3));
	CALL(D(cuMemsetD2D32_v2)(pa, pitch, 1, 10, 3));
	CALL(S(cuMemsetD8Async)(a, 1, 7, st));
	CALL(S(cuMemsetD16Async)(a, 1, 7, st));
	CALL(S(cuMemsetD32Async)(a, 1, 7, st));
	CALL(S(cuMemsetD2D8Async)(pa, pitch, 1, 5, 2, st));
	CALL(S(cuMemsetD2D16Async)(pa, pitch, 1, 5, 2, st));
	CALL(S(cuMemsetD2D32Async)(pa, pitch, 1, 5, 2, st));
}

/* Every launch family; how many times the host function ran (the
 * double runs it in the call). */
static int launches(CUstream st)
{
	int counter = 0;
	CUfunction f = fakecuda_function("gemm_kernel", NULL);
	CALL(S(cuLaunchKernel)(f, 10, 20, 1, 256, 1, 1, 0, st, NULL, NULL));
	CUlaunchConfig lc;
	memset(&lc, 0, sizeof(lc));
	lc.gridDimX = 3; lc.gridDimY = 1; lc.gridDimZ = 1;
	lc.blockDimX = 32; lc.blockDimY = 8; lc.blockDimZ = 2;
	lc.hStream = st;
	CALL(S(cuLaunchKernelEx)(&lc, fakecuda_function("ex_kernel", NULL), NULL, NULL));
	CALL(S(cuLaunchCooperativeKernel)(fakecuda_function("coop_kernel", NULL), 6, 1, 1, 64, 1, 1, 0, st, NULL));
	CALL(S(cuLaunchHostFunc)(st, host_fn, &counter));
	CALL(S(cuGraphLaunch)((CUgraphExec)0x4444, st));
	return counter;
}

int main(void)
{
	CUdeviceptr a = 0, b = 0, m = 0, pa = 0, pool_p = 0, vaddr = 0;
	size_t pitch = 0;
	void *ph = NULL, *ph2 = NULL;
	char *pg = calloc(1, 1 << 16);
	CUstream st = (CUstream)0x7000;
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);

	CALL(cuMemAlloc_v2(&a, 65536));
	CALL(cuMemAllocPitch_v2(&pa, &pitch, 1000, 10, 4));
	CALL(cuMemAllocManaged(&m, 8192, CU_MEM_ATTACH_GLOBAL));
	CALL(S(cuMemAllocAsync)(&b, 32768, st));
	CALL(S(cuMemAllocFromPoolAsync)(&pool_p, 16384, (CUmemoryPool)0x99, st));
	CALL(cuMemHostAlloc(&ph, 4096, 0));
	CALL(cuMemAllocHost_v2(&ph2, 2048));
	CALL(cuMemHostRegister_v2(pg + 4096, 8192, 0));

	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CALL(cuMemCreate(&h, 2 << 20, &prop, 0));
	cuMemAddressReserve(&vaddr, 2 << 20, 0, 0, 0);
	CALL(cuMemMap(vaddr, 2 << 20, 0, h, 0));

	struct bufs x = { .a = a, .b = b, .pa = pa, .vaddr = vaddr, .pitch = pitch, .ph = ph, .ph2 = ph2, .pg = pg,
			  .ctx = ctx, .st = st };
	copies(&x);
	memsets(a, pa, pitch, st);
	int counter = launches(st);

	CALL(S(cuStreamSynchronize)(st));
	CALL(cuCtxSynchronize());
	CALL(cuCtxSynchronize_v2(ctx));
	CALL(cuEventSynchronize((CUevent)0x55));
	CALL(S(cuStreamWaitEvent)(st, (CUevent)0x55, 0));

	CALL(cuMemUnmap(vaddr, 2 << 20));
	CALL(cuMemRelease(h));
	CALL(cuMemHostUnregister(pg + 4096));
	CALL(cuMemFreeHost(ph2));
	CALL(cuMemFreeHost(ph));
	CALL(S(cuMemFreeAsync)(pool_p, st));
	CALL(S(cuMemFreeAsync)(b, st));
	CALL(cuMemFree_v2(m));
	CALL(cuMemFree_v2(pa));
	CALL(cuMemFree_v2(a));
	printf("host function ran %d time(s)\n", counter);
	free(pg);
	return 0;
}
