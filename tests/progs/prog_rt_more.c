/* SPDX-License-Identifier: MIT */
/*
 * The runtime entry points prog_rt does not call, one call each in a fixed
 * order that tests/run.py checks: the other allocators (pitch, managed,
 * stream-ordered, from a pool, cudaHostAlloc, cudaHostRegister), peer and
 * 2D copies, cudaMemsetAsync, the cooperative, host-function and graph
 * launches, the event waits, and a driver call through a pointer from
 * cudaGetDriverEntryPoint. Built like prog_rt: against the runtime double
 * as a shared library (route 1) and statically (route 3), each with and
 * without PTDS. Prints every return code and errno.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"
#include "prog_common.h"

static dim3 dim3_make(unsigned x, unsigned y, unsigned z)
{
	dim3 d = { x, y, z };
	return d;
}

static void coop_body(void **args) { (void)args; }
static void coop_kernel(float *p) { (void)p; }
static void host_fn(void *p) { ++*(int *)p; }

int main(void)
{
	fakecudart_register((const void *)coop_kernel, "coop_kernel", coop_body);
	void *a = NULL, *pitched = NULL, *managed = NULL, *async = NULL, *pooled = NULL, *ph = NULL;
	size_t pitch = 0;
	char *pg = calloc(1, 1 << 16);
	cudaStream_t s = (cudaStream_t)0x6000;
	int counter = 0;

	CALL(cudaMalloc(&a, 65536));
	CALL(cudaMallocPitch(&pitched, &pitch, 1000, 10));
	CALL(cudaMallocManaged(&managed, 8192, 1));
	CALL(S(cudaMallocAsync)(&async, 32768, s));
	CALL(S(cudaMallocFromPoolAsync)(&pooled, 16384, (cudaMemPool_t)0x99, s));
	CALL(cudaHostAlloc(&ph, 4096, 0));
	CALL(cudaHostRegister(pg + 4096, 8192, 0));
	if (!a || !pitched || !managed || !async || !pooled || !ph) {
		printf("allocation failed\n");
		return 0;
	}
	CALL(cudaMemcpyPeer(async, 1, a, 0, 300));
	CALL(cudaMemcpyPeerAsync(async, 0, a, 0, 200, s));
	CALL(D(cudaMemcpy2D)(pitched, pitch, pg, 1000, 1000, 3, cudaMemcpyHostToDevice));
	CALL(S(cudaMemcpy2DAsync)(pg + 4096, 1000, pitched, pitch, 800, 5, cudaMemcpyDeviceToHost, s));
	CALL(S(cudaMemsetAsync)(a, 0, 4096, s));
	void *args[] = { &a };
	CALL(S(cudaLaunchCooperativeKernel)((const void *)coop_kernel, dim3_make(6, 1, 1), dim3_make(64, 1, 1),
					    args, 0, s));
	CALL(S(cudaLaunchHostFunc)(s, host_fn, &counter));
	CALL(S(cudaGraphLaunch)((cudaGraphExec_t)0x4444, s));
	CALL(S(cudaStreamWaitEvent)(s, (cudaEvent_t)0x5555, 0));
	CALL(cudaEventSynchronize((cudaEvent_t)0x5555));
	void *fn = NULL;
	enum cudaDriverEntryPointQueryResult q;
	CALL(cudaGetDriverEntryPoint("cuCtxSynchronize", &fn, 0, &q));
	if (fn) /* CUDA 13's cuCtxSynchronize: the _v2 that takes a context (NULL: the current one) */
		CALL(((CUresult(*)(CUcontext))fn)(NULL));
	CALL(cudaHostUnregister(pg + 4096));
	CALL(cudaFreeHost(ph));
	CALL(S(cudaFreeAsync)(pooled, s));
	CALL(S(cudaFreeAsync)(async, s));
	CALL(cudaFree(managed));
	CALL(cudaFree(pitched));
	CALL(cudaFree(a));
	printf("host function ran %d time(s), pitch %zu\n", counter, pitch);
	free(pg);
	return 0;
}
