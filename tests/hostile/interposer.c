/* SPDX-License-Identifier: MIT */
/*
 * A second interposer of the driver, as HAMi-core's libvgpu.so is: it
 * defines cuMemAlloc_v2 and cuMemFree_v2, finds the next definition with
 * dlsym(RTLD_NEXT, ...) at its first call, counts what passes through it,
 * and says so at exit. Preloaded before or after libgpuspy.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "../../lib/cuda_api.h"

static int allocs, frees;

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	static CUresult (*next)(CUdeviceptr *, size_t);
	if (!next)
		next = (CUresult(*)(CUdeviceptr *, size_t))dlsym(RTLD_NEXT, "cuMemAlloc_v2");
	allocs++;
	return next(p, n);
}

__attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr p)
{
	static CUresult (*next)(CUdeviceptr);
	if (!next)
		next = (CUresult(*)(CUdeviceptr))dlsym(RTLD_NEXT, "cuMemFree_v2");
	frees++;
	return next(p);
}

__attribute__((destructor)) static void say(void)
{
	fprintf(stderr, "interposer: %d allocs, %d frees\n", allocs, frees);
}
