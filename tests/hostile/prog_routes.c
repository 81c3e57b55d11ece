/* SPDX-License-Identifier: MIT */
/*
 * cuMemAlloc_v2 / cuMemFree_v2 reached three ways: the exported symbol,
 * dlsym(RTLD_DEFAULT) and dlsym on libcuda's handle; then cuGetProcAddress
 * (whose answer the mirror driver takes from the global scope, so that it
 * is gpuspy's own wrapper). Two of each: the test counts them.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "../../lib/cuda_api.h"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static void twice(const char *how, alloc_fn a, free_fn f)
{
	for (int i = 0; i < 2; i++) {
		CUdeviceptr p = 0;
		int ra = a(&p, 4096), rf = f(p);
		printf("%s: %d %d\n", how, ra, rf);
	}
}

int main(void)
{
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	twice("symbol", cuMemAlloc_v2, cuMemFree_v2);
	twice("default", (alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), (free_fn)dlsym(RTLD_DEFAULT, "cuMemFree_v2"));
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	twice("handle", (alloc_fn)dlsym(h, "cuMemAlloc_v2"), (free_fn)dlsym(h, "cuMemFree_v2"));
	void *a = NULL, *f = NULL;
	cuGetProcAddress_v2("cuMemAlloc", &a, 12000, 0, NULL);
	cuGetProcAddress_v2("cuMemFree", &f, 12000, 2 /* per-thread: no such variant */, NULL);
	twice("proc", (alloc_fn)a, (free_fn)f);
	return 0;
}
