/* SPDX-License-Identifier: MIT */
/*
 * Copy family: every cuMemcpy* (sync and async, 1D/2D/3D, peer, batch in
 * the 12.8 and 13.0 ABIs, per-thread variants) and the runtime's
 * cudaMemcpy*. Each record gets bytes, direction and the host side's memory
 * kind: pinned when the host range came from a recorded pinned allocation
 * or registration, pageable otherwise.
 */
#define _GNU_SOURCE
#include "cuda_api.h"
#include "gs.h"
#include "memmap.h"
#include "symbols.h"

enum { H, D, U }; /* what the API says an end is: host, device, unified */

static unsigned end_kind(uint64_t a, int hint, int *dev)
{
	struct gs_range g;
	*dev = -1;
	if (hint == U)
		return gs_classify(a, dev);
	int found = gs_memmap_find(a, &g);
	if (hint == H)
		return found && g.mem == GSPY_MEM_pinned ? GSPY_MEM_pinned : GSPY_MEM_pageable;
	/* A "device" end inside pinned host memory (mapped for the device, as
	 * XLA's small result buffers are): the copy touches host memory, and
	 * CUPTI calls it host-to-host. */
	if (found && g.mem == GSPY_MEM_pinned)
		return GSPY_MEM_pinned;
	*dev = found ? g.device : gs_current_device();
	return GSPY_MEM_device;
}

static void copy_rec(struct gspy_record *r, uint64_t dst, int dh, uint64_t src, int sh,
		     uint64_t bytes, uint64_t stream, int async)
{
	if (!r)
		return;
	int dd, sd;
	unsigned dm = end_kind(dst, dh, &dd), sm = end_kind(src, sh, &sd);
	r->u.mem.bytes = bytes;
	r->stream = stream;
	if (async)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_copy_dir(r, dm, dd, sm, sd);
	/* The host side, which the reader ties to its host allocation. */
	r->u.mem.addr = r->dir == GSPY_DIR_d2h ? dst : r->dir == GSPY_DIR_h2d || r->dir == GSPY_DIR_h2h ? src : dst;
}

static int hint_of(CUmemorytype t)
{
	return t == CU_MEMORYTYPE_HOST ? H : t == CU_MEMORYTYPE_UNIFIED ? U : D;
}

static uint64_t addr_of(CUmemorytype t, const void *host, CUdeviceptr dev)
{
	return t == CU_MEMORYTYPE_HOST ? (uint64_t)host : t == CU_MEMORYTYPE_ARRAY ? 0 : dev;
}

/* ---- 1D ------------------------------------------------------------------- */

#define REAL_AS(fn, api) ((__typeof__(&fn))gs_real(api))

static CUresult cpy(unsigned api, CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	CUresult rc = REAL_AS(cuMemcpy, api)(dst, src, n);
	copy_rec(r, dst, U, src, U, n, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return cpy(GSPY_API_cuMemcpy, d, s, n); }
GS_API CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return cpy(GSPY_API_cuMemcpy_ptds, d, s, n); }

static CUresult cpy_async(unsigned api, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpyAsync, api)(dst, src, n, st);
	copy_rec(r, dst, U, src, U, n, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return cpy_async(GSPY_API_cuMemcpyAsync, d, s, n, st); }
GS_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return cpy_async(GSPY_API_cuMemcpyAsync_ptsz, d, s, n, st); }

static void peer_rec(struct gspy_record *r, CUdeviceptr d, CUcontext dc, CUdeviceptr s,
		     CUcontext sc, size_t n, CUstream st, int async)
{
	copy_rec(r, d, D, s, D, n, (uint64_t)st, async);
	if (r && dc != sc)
		r->dir = GSPY_DIR_p2p;
}

static CUresult peer(unsigned api, CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
		     size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	CUresult rc = REAL_AS(cuMemcpyPeer, api)(d, dc, s, sc, n);
	peer_rec(r, d, dc, s, sc, n, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) { return peer(GSPY_API_cuMemcpyPeer, d, dc, s, sc, n); }
GS_API CUresult cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) { return peer(GSPY_API_cuMemcpyPeer_ptds, d, dc, s, sc, n); }

static CUresult peer_async(unsigned api, CUdeviceptr d, CUcontext dc, CUdeviceptr s,
			   CUcontext sc, size_t n, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpyPeerAsync, api)(d, dc, s, sc, n, st);
	peer_rec(r, d, dc, s, sc, n, st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st) { return peer_async(GSPY_API_cuMemcpyPeerAsync, d, dc, s, sc, n, st); }
GS_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st) { return peer_async(GSPY_API_cuMemcpyPeerAsync_ptsz, d, dc, s, sc, n, st); }

static CUresult htod(unsigned api, CUdeviceptr d, const void *s, size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	CUresult rc = REAL_AS(cuMemcpyHtoD_v2, api)(d, s, n);
	copy_rec(r, d, D, (uint64_t)s, H, n, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { return htod(GSPY_API_cuMemcpyHtoD_v2, d, s, n); }
GS_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *s, size_t n) { return htod(GSPY_API_cuMemcpyHtoD_v2_ptds, d, s, n); }

static CUresult dtoh(unsigned api, void *d, CUdeviceptr s, size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	CUresult rc = REAL_AS(cuMemcpyDtoH_v2, api)(d, s, n);
	copy_rec(r, (uint64_t)d, H, s, D, n, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { return dtoh(GSPY_API_cuMemcpyDtoH_v2, d, s, n); }
GS_API CUresult cuMemcpyDtoH_v2_ptds(void *d, CUdeviceptr s, size_t n) { return dtoh(GSPY_API_cuMemcpyDtoH_v2_ptds, d, s, n); }

static CUresult dtod(unsigned api, CUdeviceptr d, CUdeviceptr s, size_t n)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	CUresult rc = REAL_AS(cuMemcpyDtoD_v2, api)(d, s, n);
	copy_rec(r, d, D, s, D, n, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return dtod(GSPY_API_cuMemcpyDtoD_v2, d, s, n); }
GS_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return dtod(GSPY_API_cuMemcpyDtoD_v2_ptds, d, s, n); }

static CUresult htod_async(unsigned api, CUdeviceptr d, const void *s, size_t n, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpyHtoDAsync_v2, api)(d, s, n, st);
	copy_rec(r, d, D, (uint64_t)s, H, n, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st) { return htod_async(GSPY_API_cuMemcpyHtoDAsync_v2, d, s, n, st); }
GS_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *s, size_t n, CUstream st) { return htod_async(GSPY_API_cuMemcpyHtoDAsync_v2_ptsz, d, s, n, st); }

static CUresult dtoh_async(unsigned api, void *d, CUdeviceptr s, size_t n, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpyDtoHAsync_v2, api)(d, s, n, st);
	copy_rec(r, (uint64_t)d, H, s, D, n, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st) { return dtoh_async(GSPY_API_cuMemcpyDtoHAsync_v2, d, s, n, st); }
GS_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *d, CUdeviceptr s, size_t n, CUstream st) { return dtoh_async(GSPY_API_cuMemcpyDtoHAsync_v2_ptsz, d, s, n, st); }

static CUresult dtod_async(unsigned api, CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpyDtoDAsync_v2, api)(d, s, n, st);
	copy_rec(r, d, D, s, D, n, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return dtod_async(GSPY_API_cuMemcpyDtoDAsync_v2, d, s, n, st); }
GS_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return dtod_async(GSPY_API_cuMemcpyDtoDAsync_v2_ptsz, d, s, n, st); }

/* ---- 2D and 3D ------------------------------------------------------------ */

static void rec_2d(struct gspy_record *r, const CUDA_MEMCPY2D *p, CUstream st, int async)
{
	if (!r || !p)
		return;
	copy_rec(r, addr_of(p->dstMemoryType, p->dstHost, p->dstDevice), hint_of(p->dstMemoryType),
		 addr_of(p->srcMemoryType, p->srcHost, p->srcDevice), hint_of(p->srcMemoryType),
		 (uint64_t)p->WidthInBytes * p->Height, (uint64_t)st, async);
}

static void rec_3d(struct gspy_record *r, const CUDA_MEMCPY3D *p, CUstream st, int async)
{
	if (!r || !p)
		return;
	copy_rec(r, addr_of(p->dstMemoryType, p->dstHost, p->dstDevice), hint_of(p->dstMemoryType),
		 addr_of(p->srcMemoryType, p->srcHost, p->srcDevice), hint_of(p->srcMemoryType),
		 (uint64_t)p->WidthInBytes * p->Height * (p->Depth ? p->Depth : 1), (uint64_t)st,
		 async);
}

/* A graph's copy node: the copy its launches make. */
void gs_copy_rec_3d(struct gspy_record *r, const CUDA_MEMCPY3D *p)
{
	rec_3d(r, p, 0, 0);
}

static CUresult cpy2d(unsigned api, const CUDA_MEMCPY2D *p)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	CUresult rc = REAL_AS(cuMemcpy2D_v2, api)(p);
	rec_2d(r, p, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) { return cpy2d(GSPY_API_cuMemcpy2D_v2, p); }
GS_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) { return cpy2d(GSPY_API_cuMemcpy2D_v2_ptds, p); }
GS_API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p) { return cpy2d(GSPY_API_cuMemcpy2DUnaligned_v2, p); }
GS_API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p) { return cpy2d(GSPY_API_cuMemcpy2DUnaligned_v2_ptds, p); }

static CUresult cpy2d_async(unsigned api, const CUDA_MEMCPY2D *p, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpy2DAsync_v2, api)(p, st);
	rec_2d(r, p, st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream st) { return cpy2d_async(GSPY_API_cuMemcpy2DAsync_v2, p, st); }
GS_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream st) { return cpy2d_async(GSPY_API_cuMemcpy2DAsync_v2_ptsz, p, st); }

static CUresult cpy3d(unsigned api, const CUDA_MEMCPY3D *p)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	CUresult rc = REAL_AS(cuMemcpy3D_v2, api)(p);
	rec_3d(r, p, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) { return cpy3d(GSPY_API_cuMemcpy3D_v2, p); }
GS_API CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p) { return cpy3d(GSPY_API_cuMemcpy3D_v2_ptds, p); }

static CUresult cpy3d_async(unsigned api, const CUDA_MEMCPY3D *p, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpy3DAsync_v2, api)(p, st);
	rec_3d(r, p, st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream st) { return cpy3d_async(GSPY_API_cuMemcpy3DAsync_v2, p, st); }
GS_API CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream st) { return cpy3d_async(GSPY_API_cuMemcpy3DAsync_v2_ptsz, p, st); }

static void rec_3dpeer(struct gspy_record *r, const CUDA_MEMCPY3D_PEER *p, CUstream st, int async)
{
	if (!r || !p)
		return;
	copy_rec(r, addr_of(p->dstMemoryType, p->dstHost, p->dstDevice), hint_of(p->dstMemoryType),
		 addr_of(p->srcMemoryType, p->srcHost, p->srcDevice), hint_of(p->srcMemoryType),
		 (uint64_t)p->WidthInBytes * p->Height * (p->Depth ? p->Depth : 1), (uint64_t)st,
		 async);
	if (p->dstContext != p->srcContext)
		r->dir = GSPY_DIR_p2p;
}

static CUresult cpy3dpeer(unsigned api, const CUDA_MEMCPY3D_PEER *p)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	CUresult rc = REAL_AS(cuMemcpy3DPeer, api)(p);
	rec_3dpeer(r, p, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p) { return cpy3dpeer(GSPY_API_cuMemcpy3DPeer, p); }
GS_API CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p) { return cpy3dpeer(GSPY_API_cuMemcpy3DPeer_ptds, p); }

static CUresult cpy3dpeer_async(unsigned api, const CUDA_MEMCPY3D_PEER *p, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpy3DPeerAsync, api)(p, st);
	rec_3dpeer(r, p, st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream st) { return cpy3dpeer_async(GSPY_API_cuMemcpy3DPeerAsync, p, st); }
GS_API CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream st) { return cpy3dpeer_async(GSPY_API_cuMemcpy3DPeerAsync_ptsz, p, st); }

/* ---- batches: one record per call, bytes summed, direction of the first ---- */

static void rec_batch(struct gspy_record *r, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
		      size_t count, CUstream st)
{
	if (!r)
		return;
	uint64_t total = 0;
	for (size_t i = 0; sizes && i < count; i++)
		total += sizes[i];
	copy_rec(r, count && dsts ? dsts[0] : 0, U, count && srcs ? srcs[0] : 0, U, total,
		 (uint64_t)st, 1);
}

static CUresult batch128(unsigned api, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
			 size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
			 size_t numAttrs, size_t *failIdx, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpyBatchAsync, api)(dsts, srcs, sizes, count, attrs, attrsIdxs,
						       numAttrs, failIdx, st);
	rec_batch(r, dsts, srcs, sizes, count, st);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyBatchAsync(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, size_t *ai, size_t na, size_t *f, CUstream st) { return batch128(GSPY_API_cuMemcpyBatchAsync, d, s, n, c, a, ai, na, f, st); }
GS_API CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, size_t *ai, size_t na, size_t *f, CUstream st) { return batch128(GSPY_API_cuMemcpyBatchAsync_ptsz, d, s, n, c, a, ai, na, f, st); }

static CUresult batch130(unsigned api, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
			 size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs,
			 size_t numAttrs, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	CUresult rc = REAL_AS(cuMemcpyBatchAsync_v2, api)(dsts, srcs, sizes, count, attrs,
							  attrsIdxs, numAttrs, st);
	rec_batch(r, dsts, srcs, sizes, count, st);
	gs_end(r, rc);
	return rc;
}
GS_API CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, size_t *ai, size_t na, CUstream st) { return batch130(GSPY_API_cuMemcpyBatchAsync_v2, d, s, n, c, a, ai, na, st); }
GS_API CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, size_t *ai, size_t na, CUstream st) { return batch130(GSPY_API_cuMemcpyBatchAsync_v2_ptsz, d, s, n, c, a, ai, na, st); }

/* ---- runtime ----------------------------------------------------------------- */

static void rt_rec(struct gspy_record *r, uint64_t dst, uint64_t src, uint64_t n,
		   enum cudaMemcpyKind kind, uint64_t st, int async)
{
	static const int dh[] = { H, D, H, D, U }, sh[] = { H, H, D, D, U };
	unsigned k = (unsigned)kind <= 4 ? (unsigned)kind : 4;
	copy_rec(r, dst, dh[k], src, sh[k], n, st, async);
}

static cudaError_t rt_cpy(unsigned api, void *d, const void *s, size_t n, enum cudaMemcpyKind k)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	cudaError_t rc = REAL_AS(cudaMemcpy, api)(d, s, n, k);
	rt_rec(r, (uint64_t)d, (uint64_t)s, n, k, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { return rt_cpy(GSPY_API_cudaMemcpy, d, s, n, k); }
GS_API cudaError_t cudaMemcpy_ptds(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { return rt_cpy(GSPY_API_cudaMemcpy_ptds, d, s, n, k); }

static cudaError_t rt_cpy_async(unsigned api, void *d, const void *s, size_t n,
				enum cudaMemcpyKind k, cudaStream_t st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	cudaError_t rc = REAL_AS(cudaMemcpyAsync, api)(d, s, n, k, st);
	rt_rec(r, (uint64_t)d, (uint64_t)s, n, k, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) { return rt_cpy_async(GSPY_API_cudaMemcpyAsync, d, s, n, k, st); }
GS_API cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) { return rt_cpy_async(GSPY_API_cudaMemcpyAsync_ptsz, d, s, n, k, st); }

GS_API cudaError_t cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaMemcpyPeer, GSPY_KIND_copy);
	cudaError_t rc = GS_REAL(cudaMemcpyPeer)(d, dd, s, sd, n);
	copy_rec(r, (uint64_t)d, D, (uint64_t)s, D, n, 0, 0);
	if (r) {
		r->dir = dd != sd ? GSPY_DIR_p2p : GSPY_DIR_d2d;
		r->device = (int16_t)sd;
	}
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaMemcpyPeerAsync(void *d, int dd, const void *s, int sd, size_t n,
				       cudaStream_t st)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaMemcpyPeerAsync, GSPY_KIND_copy);
	cudaError_t rc = GS_REAL(cudaMemcpyPeerAsync)(d, dd, s, sd, n, st);
	copy_rec(r, (uint64_t)d, D, (uint64_t)s, D, n, (uint64_t)st, 1);
	if (r) {
		r->dir = dd != sd ? GSPY_DIR_p2p : GSPY_DIR_d2d;
		r->device = (int16_t)sd;
	}
	gs_end(r, rc);
	return rc;
}

static cudaError_t rt_2d(unsigned api, void *d, size_t dp, const void *s, size_t sp, size_t w,
			 size_t h, enum cudaMemcpyKind k)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)0);
	cudaError_t rc = REAL_AS(cudaMemcpy2D, api)(d, dp, s, sp, w, h, k);
	rt_rec(r, (uint64_t)d, (uint64_t)s, (uint64_t)w * h, k, 0, 0);
	gs_end(r, rc);
	return rc;
}
GS_API cudaError_t cudaMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k) { return rt_2d(GSPY_API_cudaMemcpy2D, d, dp, s, sp, w, h, k); }
GS_API cudaError_t cudaMemcpy2D_ptds(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k) { return rt_2d(GSPY_API_cudaMemcpy2D_ptds, d, dp, s, sp, w, h, k); }

static cudaError_t rt_2d_async(unsigned api, void *d, size_t dp, const void *s, size_t sp,
			       size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_copy, (uint64_t)st);
	cudaError_t rc = REAL_AS(cudaMemcpy2DAsync, api)(d, dp, s, sp, w, h, k, st);
	rt_rec(r, (uint64_t)d, (uint64_t)s, (uint64_t)w * h, k, (uint64_t)st, 1);
	gs_end(r, rc);
	return rc;
}
GS_API cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st) { return rt_2d_async(GSPY_API_cudaMemcpy2DAsync, d, dp, s, sp, w, h, k, st); }
GS_API cudaError_t cudaMemcpy2DAsync_ptsz(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st) { return rt_2d_async(GSPY_API_cudaMemcpy2DAsync_ptsz, d, dp, s, sp, w, h, k, st); }
