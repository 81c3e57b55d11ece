/* SPDX-License-Identifier: MIT */
/* Extras of the CUDA test doubles that the real libraries do not have. */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <stdio.h>
#include <string.h>

typedef void (*fake_kernel_fn)(void **args);

/* The name an entry point's variant is asked for by, into out: without
 * its _ptds/_ptsz, then without its _vN (any N: cuCtxCreate_v4), as the
 * names are written (cuMemcpy2DAsync_v2_ptsz). 1 when it had _ptds/_ptsz.
 * The driver double (fakeproc.c) and the runtime double agree on it. */
static inline int fakecuda_base_name(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s", name);
	size_t n = strlen(out);
	int ptds = n > 5 && (!strcmp(out + n - 5, "_ptds") || !strcmp(out + n - 5, "_ptsz"));
	if (ptds)
		out[n -= 5] = 0;
	size_t d = n;
	while (d > 2 && out[d - 1] >= '0' && out[d - 1] <= '9')
		d--;
	if (d < n && out[d - 1] == 'v' && out[d - 2] == '_')
		out[d - 2] = 0;
	return ptds;
}

/* The function handle for a kernel name, created on first use; body (may be
 * NULL) runs on the host at each launch. */
CUfunction fakecuda_function(const char *name, fake_kernel_fn body);

/* Runtime double: register a host stub as the kernel `name`, as nvcc's
 * generated __cudaRegisterFunction does. */
void fakecudart_register(const void *stub, const char *name, fake_kernel_fn body);

/* Runtime double: the kernel handle of a registered stub. */
cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *stub);

/* Driver double: the hook a profiling tool gets into the driver (the CUPTI
 * double, fakecupti.c, registers itself as CUPTI does in the real driver).
 * Each launch, copy and memset calls enter() on entry and exit() on return
 * (enter returns the call's correlation id), and work() for each piece of
 * GPU work the call queued. 2D, 3D, peer and batched copies queue none.
 * cuCtxDestroy calls context_destroy() first. The calls that wait for the
 * GPU (a stream's or the context's synchronize, cuMemFree, a synchronous
 * copy) wait as long as pending_ns() says: the GPU's timeline is the
 * tool's (with no tool, nothing is timed and nothing waits). */
enum { FAKECUDA_KERNEL, FAKECUDA_COPY, FAKECUDA_MEMSET };
enum { FAKECUDA_PAGEABLE, FAKECUDA_DEVICE, FAKECUDA_PINNED }; /* where a copy's end lies */
struct fakecuda_work {
	int what;               /* FAKECUDA_KERNEL, _COPY or _MEMSET */
	unsigned long long stream; /* the CUstream handle (CU_STREAM_LEGACY is 0) */
	int device;
	unsigned long long ns;  /* GPU time: a kernel grid_x us, a copy 10 bytes/ns, a memset 100 */
	unsigned long long bytes;
	int src, dst;           /* copies: FAKECUDA_PAGEABLE, _DEVICE or _PINNED */
	const char *name;       /* kernels: the function's name (lives as long as the process) */
	unsigned graph;         /* work of a graph launch: the graph's id, else 0 */
};
struct fakecuda_tool {
	unsigned (*enter)(const char *api);
	void (*exit)(const char *api, unsigned corr);
	void (*work)(unsigned corr, const struct fakecuda_work *w);
	void (*context_destroy)(CUcontext ctx); /* cuCtxDestroy, before it destroys */
	/* ns until the GPU work queued on stream (FAKECUDA_ALL_STREAMS: every
	 * stream of device) ends: what a synchronizing call waits for. */
	unsigned long long (*pending_ns)(unsigned long long stream, int device);
};
#define FAKECUDA_ALL_STREAMS (~0ull)
void fakecuda_set_tool(const struct fakecuda_tool *t);
/* Driver double: the context's sticky error (FAKECUDA_ASSERT: a kernel
 * tripped a device-side assert), 0 while there is none. */
int fakecuda_sticky_error(void);
/* Driver double: how many times its cuLaunchHostFunc of an ABI newer than
 * gpuspy knows ran (FAKECUDA_NEWER_ABI, fakecuda.c). */
int fakecuda_newer_abi_calls(void);

#endif
