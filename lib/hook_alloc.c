/* SPDX-License-Identifier: MIT */
/*
 * Allocation family: device (plain, pitch, managed, stream-ordered, from a
 * pool), VMM (create, map, unmap, release) and pinned host memory (alloc,
 * register, unregister, free), at the driver and the runtime level. Every
 * live range goes into the memory map, which is how copies later know a
 * pinned buffer from a pageable one and frees know their size.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "cuda_api.h"
#include "gs.h"
#include "memmap.h"
#include "symbols.h"

static void alloc_rec(struct gspy_record *r, int ok, uint64_t ptr, uint64_t bytes,
		      unsigned mem, uint64_t stream)
{
	if (!r)
		return;
	r->u.mem.bytes = bytes;
	r->u.mem.addr = ok ? ptr : 0;
	r->mem = (uint8_t)mem;
	r->stream = stream;
	if (stream)
		r->flags |= GSPY_FLAG_ASYNC;
	r->device = (int16_t)(mem == GSPY_MEM_pinned ? -1 : gs_current_device());
	if (ok)
		gs_memmap_add(ptr, bytes, mem, r->device);
}

static void free_rec(struct gspy_record *r, int ok, uint64_t ptr, unsigned mem, uint64_t stream)
{
	if (!r)
		return;
	struct gs_range g;
	r->u.mem.addr = ptr;
	r->mem = (uint8_t)mem;
	r->stream = stream;
	if (stream)
		r->flags |= GSPY_FLAG_ASYNC;
	if (ok && ptr && gs_memmap_remove(ptr, &g)) {
		r->u.mem.bytes = g.size;
		r->mem = g.mem;
		r->device = g.device;
	}
}

/* ---- driver: device memory --------------------------------------------- */

GS_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemAlloc_v2, GSPY_KIND_alloc);
	CUresult rc = GS_REAL(cuMemAlloc_v2)(dptr, bytesize);
	alloc_rec(r, rc == CUDA_SUCCESS, dptr ? *dptr : 0, bytesize, GSPY_MEM_device, 0);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
				   size_t height, unsigned int elem)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemAllocPitch_v2, GSPY_KIND_alloc);
	CUresult rc = GS_REAL(cuMemAllocPitch_v2)(dptr, pitch, width, height, elem);
	int ok = rc == CUDA_SUCCESS;
	alloc_rec(r, ok, ok ? *dptr : 0, ok ? *pitch * height : width * height,
		  GSPY_MEM_device, 0);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemAllocManaged, GSPY_KIND_alloc);
	CUresult rc = GS_REAL(cuMemAllocManaged)(dptr, bytesize, flags);
	alloc_rec(r, rc == CUDA_SUCCESS, dptr ? *dptr : 0, bytesize, GSPY_MEM_managed, 0);
	gs_end(r, rc);
	return rc;
}

static CUresult alloc_async(unsigned api, CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_alloc);
	CUresult rc = ((__typeof__(&cuMemAllocAsync))gs_real(api))(dptr, bytesize, s);
	alloc_rec(r, rc == CUDA_SUCCESS, dptr ? *dptr : 0, bytesize, GSPY_MEM_device,
		  (uint64_t)s);
	if (r)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
	return alloc_async(GSPY_API_cuMemAllocAsync, dptr, bytesize, s);
}

GS_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
	return alloc_async(GSPY_API_cuMemAllocAsync_ptsz, dptr, bytesize, s);
}

static CUresult alloc_pool(unsigned api, CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
			   CUstream s)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_alloc);
	CUresult rc = ((__typeof__(&cuMemAllocFromPoolAsync))gs_real(api))(dptr, bytesize, pool, s);
	alloc_rec(r, rc == CUDA_SUCCESS, dptr ? *dptr : 0, bytesize, GSPY_MEM_device,
		  (uint64_t)s);
	if (r)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					CUstream s)
{
	return alloc_pool(GSPY_API_cuMemAllocFromPoolAsync, dptr, bytesize, pool, s);
}

GS_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
					     CUmemoryPool pool, CUstream s)
{
	return alloc_pool(GSPY_API_cuMemAllocFromPoolAsync_ptsz, dptr, bytesize, pool, s);
}

GS_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemFree_v2, GSPY_KIND_free);
	CUresult rc = GS_REAL(cuMemFree_v2)(dptr);
	free_rec(r, rc == CUDA_SUCCESS, dptr, GSPY_MEM_device, 0);
	gs_end(r, rc);
	return rc;
}

static CUresult free_async(unsigned api, CUdeviceptr dptr, CUstream s)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_free);
	CUresult rc = ((__typeof__(&cuMemFreeAsync))gs_real(api))(dptr, s);
	free_rec(r, rc == CUDA_SUCCESS, dptr, GSPY_MEM_device, (uint64_t)s);
	if (r)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
	return free_async(GSPY_API_cuMemFreeAsync, dptr, s);
}

GS_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
	return free_async(GSPY_API_cuMemFreeAsync_ptsz, dptr, s);
}

/* ---- driver: virtual memory management ---------------------------------- */

/* Physical allocations by handle: few and slow, so a locked list. */
#define HANDLE_CAP 4096
static struct {
	pthread_mutex_t lock;
	unsigned n;
	struct { uint64_t handle, size; unsigned mem; } e[HANDLE_CAP];
} handles = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(handles, handles.lock);

static void handle_put(uint64_t h, uint64_t size, unsigned mem)
{
	pthread_mutex_lock(&handles.lock);
	if (handles.n < HANDLE_CAP)
		handles.e[handles.n++] = (__typeof__(handles.e[0])){ h, size, mem };
	pthread_mutex_unlock(&handles.lock);
}

static uint64_t handle_get(uint64_t h, int remove, unsigned *mem)
{
	uint64_t size = 0;
	pthread_mutex_lock(&handles.lock);
	for (unsigned i = 0; i < handles.n; i++) {
		if (handles.e[i].handle != h)
			continue;
		size = handles.e[i].size;
		*mem = handles.e[i].mem;
		if (remove)
			handles.e[i] = handles.e[--handles.n];
		break;
	}
	pthread_mutex_unlock(&handles.lock);
	return size;
}

GS_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemCreate, GSPY_KIND_alloc);
	CUresult rc = GS_REAL(cuMemCreate)(handle, size, prop, flags);
	if (r) {
		unsigned mem = prop && prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE
				       ? GSPY_MEM_pinned : GSPY_MEM_device;
		r->u.mem.bytes = size;
		r->mem = (uint8_t)mem;
		r->device = (int16_t)(prop && mem == GSPY_MEM_device ? prop->location.id : -1);
		if (rc == CUDA_SUCCESS && handle) {
			r->u.mem.addr = *handle;
			handle_put(*handle, size, mem);
		}
	}
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemRelease, GSPY_KIND_free);
	CUresult rc = GS_REAL(cuMemRelease)(handle);
	if (r) {
		unsigned mem = GSPY_MEM_device;
		r->u.mem.addr = handle;
		if (rc == CUDA_SUCCESS)
			r->u.mem.bytes = handle_get(handle, 1, &mem);
		r->mem = (uint8_t)mem;
	}
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemMap, GSPY_KIND_map);
	CUresult rc = GS_REAL(cuMemMap)(ptr, size, offset, handle, flags);
	if (r) {
		unsigned mem = GSPY_MEM_device;
		handle_get(handle, 0, &mem);
		r->u.mem.bytes = size;
		r->u.mem.addr = ptr;
		r->stream = handle;
		r->mem = (uint8_t)mem;
		r->device = (int16_t)gs_current_device();
		if (rc == CUDA_SUCCESS)
			gs_memmap_add(ptr, size, mem, r->device);
	}
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemUnmap, GSPY_KIND_unmap);
	CUresult rc = GS_REAL(cuMemUnmap)(ptr, size);
	if (r) {
		r->u.mem.bytes = size;
		r->u.mem.addr = ptr;
		r->mem = GSPY_MEM_device;
		free_rec(r, rc == CUDA_SUCCESS, ptr, GSPY_MEM_device, 0);
		r->u.mem.bytes = size;
	}
	gs_end(r, rc);
	return rc;
}

/* ---- driver: pinned host memory ------------------------------------------ */

GS_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemHostAlloc, GSPY_KIND_alloc);
	CUresult rc = GS_REAL(cuMemHostAlloc)(pp, bytesize, flags);
	alloc_rec(r, rc == CUDA_SUCCESS, pp ? (uint64_t)*pp : 0, bytesize, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemAllocHost_v2, GSPY_KIND_alloc);
	CUresult rc = GS_REAL(cuMemAllocHost_v2)(pp, bytesize);
	alloc_rec(r, rc == CUDA_SUCCESS, pp ? (uint64_t)*pp : 0, bytesize, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemHostRegister_v2, GSPY_KIND_alloc);
	CUresult rc = GS_REAL(cuMemHostRegister_v2)(p, bytesize, flags);
	alloc_rec(r, rc == CUDA_SUCCESS, (uint64_t)p, bytesize, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemHostUnregister(void *p)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemHostUnregister, GSPY_KIND_free);
	CUresult rc = GS_REAL(cuMemHostUnregister)(p);
	free_rec(r, rc == CUDA_SUCCESS, (uint64_t)p, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuMemFreeHost(void *p)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuMemFreeHost, GSPY_KIND_free);
	CUresult rc = GS_REAL(cuMemFreeHost)(p);
	free_rec(r, rc == CUDA_SUCCESS, (uint64_t)p, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

/* ---- runtime --------------------------------------------------------------- */

GS_API cudaError_t cudaMalloc(void **p, size_t size)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaMalloc, GSPY_KIND_alloc);
	cudaError_t rc = GS_REAL(cudaMalloc)(p, size);
	alloc_rec(r, rc == cudaSuccess, p ? (uint64_t)*p : 0, size, GSPY_MEM_device, 0);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaMallocPitch, GSPY_KIND_alloc);
	cudaError_t rc = GS_REAL(cudaMallocPitch)(p, pitch, width, height);
	int ok = rc == cudaSuccess;
	alloc_rec(r, ok, ok ? (uint64_t)*p : 0, ok ? *pitch * height : width * height,
		  GSPY_MEM_device, 0);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaMallocManaged, GSPY_KIND_alloc);
	cudaError_t rc = GS_REAL(cudaMallocManaged)(p, size, flags);
	alloc_rec(r, rc == cudaSuccess, p ? (uint64_t)*p : 0, size, GSPY_MEM_managed, 0);
	gs_end(r, rc);
	return rc;
}

static cudaError_t rt_alloc_async(unsigned api, void **p, size_t size, cudaStream_t s)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_alloc);
	cudaError_t rc = ((__typeof__(&cudaMallocAsync))gs_real(api))(p, size, s);
	alloc_rec(r, rc == cudaSuccess, p ? (uint64_t)*p : 0, size, GSPY_MEM_device, (uint64_t)s);
	if (r)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
	return rt_alloc_async(GSPY_API_cudaMallocAsync, p, size, s);
}

GS_API cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, cudaStream_t s)
{
	return rt_alloc_async(GSPY_API_cudaMallocAsync_ptsz, p, size, s);
}

static cudaError_t rt_alloc_pool(unsigned api, void **p, size_t size, cudaMemPool_t pool,
				 cudaStream_t s)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_alloc);
	cudaError_t rc = ((__typeof__(&cudaMallocFromPoolAsync))gs_real(api))(p, size, pool, s);
	alloc_rec(r, rc == cudaSuccess, p ? (uint64_t)*p : 0, size, GSPY_MEM_device, (uint64_t)s);
	if (r)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool,
					   cudaStream_t s)
{
	return rt_alloc_pool(GSPY_API_cudaMallocFromPoolAsync, p, size, pool, s);
}

GS_API cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t size, cudaMemPool_t pool,
						cudaStream_t s)
{
	return rt_alloc_pool(GSPY_API_cudaMallocFromPoolAsync_ptsz, p, size, pool, s);
}

GS_API cudaError_t cudaFree(void *p)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaFree, GSPY_KIND_free);
	cudaError_t rc = GS_REAL(cudaFree)(p);
	free_rec(r, rc == cudaSuccess, (uint64_t)p, GSPY_MEM_device, 0);
	gs_end(r, rc);
	return rc;
}

static cudaError_t rt_free_async(unsigned api, void *p, cudaStream_t s)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_free);
	cudaError_t rc = ((__typeof__(&cudaFreeAsync))gs_real(api))(p, s);
	free_rec(r, rc == cudaSuccess, (uint64_t)p, GSPY_MEM_device, (uint64_t)s);
	if (r)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
	return rt_free_async(GSPY_API_cudaFreeAsync, p, s);
}

GS_API cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s)
{
	return rt_free_async(GSPY_API_cudaFreeAsync_ptsz, p, s);
}

GS_API cudaError_t cudaMallocHost(void **p, size_t size)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaMallocHost, GSPY_KIND_alloc);
	cudaError_t rc = GS_REAL(cudaMallocHost)(p, size);
	alloc_rec(r, rc == cudaSuccess, p ? (uint64_t)*p : 0, size, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaHostAlloc, GSPY_KIND_alloc);
	cudaError_t rc = GS_REAL(cudaHostAlloc)(p, size, flags);
	alloc_rec(r, rc == cudaSuccess, p ? (uint64_t)*p : 0, size, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaHostRegister(void *p, size_t size, unsigned int flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaHostRegister, GSPY_KIND_alloc);
	cudaError_t rc = GS_REAL(cudaHostRegister)(p, size, flags);
	alloc_rec(r, rc == cudaSuccess, (uint64_t)p, size, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaHostUnregister(void *p)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaHostUnregister, GSPY_KIND_free);
	cudaError_t rc = GS_REAL(cudaHostUnregister)(p);
	free_rec(r, rc == cudaSuccess, (uint64_t)p, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaFreeHost(void *p)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaFreeHost, GSPY_KIND_free);
	cudaError_t rc = GS_REAL(cudaFreeHost)(p);
	free_rec(r, rc == cudaSuccess, (uint64_t)p, GSPY_MEM_pinned, 0);
	gs_end(r, rc);
	return rc;
}
