/* SPDX-License-Identifier: MIT */
/*
 * Memset family: cuMemsetD8/D16/D32 and their 2D forms, sync and async,
 * per-thread variants, and the runtime's cudaMemset*. Bytes are the bytes
 * written (elements times element size).
 */
#define _GNU_SOURCE
#include "cuda_api.h"
#include "gs.h"
#include "memmap.h"
#include "symbols.h"

static void set_rec(struct gspy_record *r, uint64_t dst, uint64_t bytes, uint64_t stream, int async)
{
	if (!r)
		return;
	struct gs_range g;
	r->u.mem.bytes = bytes;
	r->u.mem.addr = dst;
	r->stream = stream;
	if (async)
		r->flags |= GSPY_FLAG_ASYNC;
	r->mem = GSPY_MEM_device;
	/* Pinned host memory has no device of its own: the current one writes it. */
	r->device = (int16_t)(gs_memmap_find(dst, &g) && g.device >= 0 ? g.device : gs_current_device());
}

static CUresult set8(unsigned api, CUdeviceptr d, unsigned char v, size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)0);
	CUresult rc = ((__typeof__(&cuMemsetD8_v2))gs_real(api))(d, v, n);
	set_rec(r, d, (uint64_t)n * 1, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return set8(GSPY_API_cuMemsetD8_v2, d, v, n); }
GS_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) { return set8(GSPY_API_cuMemsetD8_v2_ptds, d, v, n); }

static CUresult set8_async(unsigned api, CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)st);
	CUresult rc = ((__typeof__(&cuMemsetD8Async))gs_real(api))(d, v, n, st);
	set_rec(r, d, (uint64_t)n * 1, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) { return set8_async(GSPY_API_cuMemsetD8Async, d, v, n, st); }
GS_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream st) { return set8_async(GSPY_API_cuMemsetD8Async_ptsz, d, v, n, st); }

static CUresult set2d8(unsigned api, CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)0);
	CUresult rc = ((__typeof__(&cuMemsetD2D8_v2))gs_real(api))(d, pitch, v, w, h);
	set_rec(r, d, (uint64_t)w * h * 1, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) { return set2d8(GSPY_API_cuMemsetD2D8_v2, d, pitch, v, w, h); }
GS_API CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) { return set2d8(GSPY_API_cuMemsetD2D8_v2_ptds, d, pitch, v, w, h); }

static CUresult set2d8_async(unsigned api, CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)st);
	CUresult rc = ((__typeof__(&cuMemsetD2D8Async))gs_real(api))(d, pitch, v, w, h, st);
	set_rec(r, d, (uint64_t)w * h * 1, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream st) { return set2d8_async(GSPY_API_cuMemsetD2D8Async, d, pitch, v, w, h, st); }
GS_API CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream st) { return set2d8_async(GSPY_API_cuMemsetD2D8Async_ptsz, d, pitch, v, w, h, st); }

static CUresult set16(unsigned api, CUdeviceptr d, unsigned short v, size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)0);
	CUresult rc = ((__typeof__(&cuMemsetD16_v2))gs_real(api))(d, v, n);
	set_rec(r, d, (uint64_t)n * 2, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { return set16(GSPY_API_cuMemsetD16_v2, d, v, n); }
GS_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n) { return set16(GSPY_API_cuMemsetD16_v2_ptds, d, v, n); }

static CUresult set16_async(unsigned api, CUdeviceptr d, unsigned short v, size_t n, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)st);
	CUresult rc = ((__typeof__(&cuMemsetD16Async))gs_real(api))(d, v, n, st);
	set_rec(r, d, (uint64_t)n * 2, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream st) { return set16_async(GSPY_API_cuMemsetD16Async, d, v, n, st); }
GS_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream st) { return set16_async(GSPY_API_cuMemsetD16Async_ptsz, d, v, n, st); }

static CUresult set2d16(unsigned api, CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)0);
	CUresult rc = ((__typeof__(&cuMemsetD2D16_v2))gs_real(api))(d, pitch, v, w, h);
	set_rec(r, d, (uint64_t)w * h * 2, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) { return set2d16(GSPY_API_cuMemsetD2D16_v2, d, pitch, v, w, h); }
GS_API CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) { return set2d16(GSPY_API_cuMemsetD2D16_v2_ptds, d, pitch, v, w, h); }

static CUresult set2d16_async(unsigned api, CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)st);
	CUresult rc = ((__typeof__(&cuMemsetD2D16Async))gs_real(api))(d, pitch, v, w, h, st);
	set_rec(r, d, (uint64_t)w * h * 2, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream st) { return set2d16_async(GSPY_API_cuMemsetD2D16Async, d, pitch, v, w, h, st); }
GS_API CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream st) { return set2d16_async(GSPY_API_cuMemsetD2D16Async_ptsz, d, pitch, v, w, h, st); }

static CUresult set32(unsigned api, CUdeviceptr d, unsigned int v, size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)0);
	CUresult rc = ((__typeof__(&cuMemsetD32_v2))gs_real(api))(d, v, n);
	set_rec(r, d, (uint64_t)n * 4, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) { return set32(GSPY_API_cuMemsetD32_v2, d, v, n); }
GS_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) { return set32(GSPY_API_cuMemsetD32_v2_ptds, d, v, n); }

static CUresult set32_async(unsigned api, CUdeviceptr d, unsigned int v, size_t n, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)st);
	CUresult rc = ((__typeof__(&cuMemsetD32Async))gs_real(api))(d, v, n, st);
	set_rec(r, d, (uint64_t)n * 4, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream st) { return set32_async(GSPY_API_cuMemsetD32Async, d, v, n, st); }
GS_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream st) { return set32_async(GSPY_API_cuMemsetD32Async_ptsz, d, v, n, st); }

static CUresult set2d32(unsigned api, CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)0);
	CUresult rc = ((__typeof__(&cuMemsetD2D32_v2))gs_real(api))(d, pitch, v, w, h);
	set_rec(r, d, (uint64_t)w * h * 4, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h) { return set2d32(GSPY_API_cuMemsetD2D32_v2, d, pitch, v, w, h); }
GS_API CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h) { return set2d32(GSPY_API_cuMemsetD2D32_v2_ptds, d, pitch, v, w, h); }

static CUresult set2d32_async(unsigned api, CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)st);
	CUresult rc = ((__typeof__(&cuMemsetD2D32Async))gs_real(api))(d, pitch, v, w, h, st);
	set_rec(r, d, (uint64_t)w * h * 4, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream st) { return set2d32_async(GSPY_API_cuMemsetD2D32Async, d, pitch, v, w, h, st); }
GS_API CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream st) { return set2d32_async(GSPY_API_cuMemsetD2D32Async_ptsz, d, pitch, v, w, h, st); }

/* ---- runtime ------------------------------------------------------------------ */

static cudaError_t rt_set(unsigned api, void *d, int v, size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)0);
	cudaError_t rc = ((__typeof__(&cudaMemset))gs_real(api))(d, v, n);
	set_rec(r, (uint64_t)d, n, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API cudaError_t cudaMemset(void *d, int v, size_t n) { return rt_set(GSPY_API_cudaMemset, d, v, n); }
GS_API cudaError_t cudaMemset_ptds(void *d, int v, size_t n) { return rt_set(GSPY_API_cudaMemset_ptds, d, v, n); }

static cudaError_t rt_set_async(unsigned api, void *d, int v, size_t n, cudaStream_t st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_memset, (uint64_t)st);
	cudaError_t rc = ((__typeof__(&cudaMemsetAsync))gs_real(api))(d, v, n, st);
	set_rec(r, (uint64_t)d, n, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { return rt_set_async(GSPY_API_cudaMemsetAsync, d, v, n, st); }
GS_API cudaError_t cudaMemsetAsync_ptsz(void *d, int v, size_t n, cudaStream_t st) { return rt_set_async(GSPY_API_cudaMemsetAsync_ptsz, d, v, n, st); }
