// SPDX-License-Identifier: MIT
// The runtime entry points tests/progs/prog_rt_more.c calls on the doubles, on
// the real runtime (tests/gpu/rt_families.sh: built with the shared and
// the static cudart; tests/gpu/check_rt_families.py compares the traces
// with what this program did). Prints the pitch it got.
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

#define CK(x)                                                                              \
	do {                                                                               \
		cudaError_t e_ = (x);                                                      \
		if (e_ != cudaSuccess) {                                                   \
			fprintf(stderr, "rt_families: %s: %s\n", #x, cudaGetErrorString(e_)); \
			return 1;                                                          \
		}                                                                          \
	} while (0)

__global__ void coop_kernel(float *p) { if (p && threadIdx.x == 0 && blockIdx.x == 0) p[0] += 1.0f; }
static void CUDART_CB host_fn(void *p) { ++*(int *)p; }

int main()
{
	cudaStream_t s;
	cudaEvent_t ev;
	cudaGraph_t g;
	cudaGraphNode_t node;
	cudaGraphExec_t ge;
	cudaMemPool_t pool;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreate(&ev));
	CK(cudaGraphCreate(&g, 0));
	CK(cudaGraphAddEmptyNode(&node, g, NULL, 0));
	CK(cudaGraphInstantiate(&ge, g, 0));
	CK(cudaDeviceGetDefaultMemPool(&pool, 0));
	char *pg = (char *)aligned_alloc(4096, 1 << 16);
	void *a, *pitched, *managed, *async, *pooled, *ph;
	size_t pitch = 0;
	int counter = 0;
	CK(cudaMalloc(&a, 65536));
	CK(cudaMallocPitch(&pitched, &pitch, 1000, 10));
	CK(cudaMallocManaged(&managed, 8192));
	CK(cudaMallocAsync(&async, 32768, s));
	CK(cudaMallocFromPoolAsync(&pooled, 16384, pool, s));
	CK(cudaHostAlloc(&ph, 4096, 0));
	CK(cudaHostRegister(pg + 4096, 8192, 0));
	CK(cudaMemcpyPeer(async, 0, a, 0, 300));
	CK(cudaMemcpyPeerAsync(async, 0, a, 0, 200, s));
	CK(cudaMemcpy2D(pitched, pitch, pg, 1000, 1000, 3, cudaMemcpyHostToDevice));
	CK(cudaMemcpy2DAsync(pg + 4096, 1000, pitched, pitch, 800, 5, cudaMemcpyDeviceToHost, s));
	CK(cudaMemsetAsync(a, 0, 4096, s));
	float *fa = (float *)a;
	void *args[] = { &fa };
	CK(cudaLaunchCooperativeKernel((const void *)coop_kernel, dim3(6), dim3(64), args, 0, s));
	CK(cudaLaunchHostFunc(s, host_fn, &counter));
	CK(cudaGraphLaunch(ge, s));
	CK(cudaEventRecord(ev, s));
	CK(cudaStreamWaitEvent(s, ev, 0));
	CK(cudaEventSynchronize(ev));
	void *fn = NULL;
	cudaDriverEntryPointQueryResult q;
	CK(cudaGetDriverEntryPointByVersion("cuCtxSynchronize", &fn, 13000, cudaEnableDefault, &q));
	if (!fn || ((CUresult (*)(CUcontext))fn)(NULL) != CUDA_SUCCESS)
		return 1;
	CK(cudaStreamSynchronize(s));
	CK(cudaHostUnregister(pg + 4096));
	CK(cudaFreeHost(ph));
	CK(cudaFreeAsync(pooled, s));
	CK(cudaFreeAsync(async, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaFree(managed));
	CK(cudaFree(pitched));
	CK(cudaFree(a));
	printf("host function ran %d time(s), pitch %zu\n", counter, pitch);
	return 0;
}
