/* SPDX-License-Identifier: MIT */
/*
 * libgpuspy-host.so: malloc and its family, each a jump into libgpuspy's
 * recording hook (hook_host.c). Preloaded after libgpuspy.so, and only when
 * host allocations are recorded (GPUSPY_HOST_ALLOC_MIN; `gpuspy run` adds
 * it then): libgpuspy itself defines none of these, so a traced process's
 * allocations otherwise never pass through gpuspy.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>

#include "host.h"

GS_HOST_API void *malloc(size_t n)
{
	return gpuspy_host_malloc(n);
}

GS_HOST_API void *calloc(size_t k, size_t n)
{
	return gpuspy_host_calloc(k, n);
}

GS_HOST_API void *realloc(void *old, size_t n)
{
	return gpuspy_host_realloc(old, n);
}

GS_HOST_API void free(void *p)
{
	gpuspy_host_free(p);
}

GS_HOST_API int posix_memalign(void **out, size_t align, size_t n)
{
	return gpuspy_host_posix_memalign(out, align, n);
}

GS_HOST_API void *aligned_alloc(size_t align, size_t n)
{
	return gpuspy_host_aligned_alloc(align, n);
}

GS_HOST_API void *mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off)
{
	return gpuspy_host_mmap(addr, n, prot, flags, fd, off);
}

GS_HOST_API int munmap(void *p, size_t n)
{
	return gpuspy_host_munmap(p, n);
}

/* The mark libgpuspy looks for (GS_HOST_SHIM_MARK). */
GS_HOST_API void gpuspy_host_shim(void);
GS_HOST_API void gpuspy_host_shim(void)
{
}
