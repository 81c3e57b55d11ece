/* SPDX-License-Identifier: MIT */
/*
 * The host-allocation hooks, shared by libgpuspy (which records:
 * hook_host.c) and libgpuspy-host.so (host_shim.c: the only object that
 * defines malloc and its family, preloaded only when host allocations are
 * to be recorded, so that a process traced without them keeps calling its
 * C allocator directly). Each gpuspy_host_NAME behaves exactly as NAME.
 */
#ifndef GS_HOST_H
#define GS_HOST_H

#include <stddef.h>
#include <sys/types.h>

#define GS_HOST_API __attribute__((visibility("default")))

GS_HOST_API void *gpuspy_host_malloc(size_t n);
GS_HOST_API void *gpuspy_host_calloc(size_t k, size_t n);
GS_HOST_API void *gpuspy_host_realloc(void *old, size_t n);
GS_HOST_API void gpuspy_host_free(void *p);
GS_HOST_API int gpuspy_host_posix_memalign(void **out, size_t align, size_t n);
GS_HOST_API void *gpuspy_host_aligned_alloc(size_t align, size_t n);
GS_HOST_API void *gpuspy_host_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off);
GS_HOST_API int gpuspy_host_munmap(void *p, size_t n);

/* Defined by libgpuspy-host.so only: how libgpuspy tells it is loaded, and
 * skips it when it looks for the real allocator. */
#define GS_HOST_SHIM_MARK "gpuspy_host_shim"

#endif
