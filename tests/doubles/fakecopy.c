/* SPDX-License-Identifier: MIT */
/*
 * The driver double's copies and memsets (one family each, with their
 * per-thread variants): each does its work on host memory, or becomes a
 * node of the graph its stream is capturing (fakegraph.c), and tells the
 * profiling tool, as the rest of fakecuda.c does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "fakecuda.h"
#include "fakecuda_int.h"

#define EXPORT __attribute__((visibility("default")))
/* The copies' and memsets' parameters: none more, or the stream. */
#define NOTHING
#define COMMA_STREAM , CUstream hs __attribute__((unused))

/* ---- copies ------------------------------------------------------------------ */

/* A copy with no stream waits for the GPU, its own work included. */
#define COPY1(name, dt, st, extra_params, stream)                                     \
	EXPORT CUresult name(dt d, st s, size_t n extra_params)                       \
	{                                                                            \
		FAIL_CHECK(#name);                                                   \
		unsigned corr_ = tool_enter(#name);                                  \
		if (!fk_capture_copy(stream, (uintptr_t)d, (uintptr_t)s, n)) {      \
			memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n); \
			tool_copy(corr_, stream, (uintptr_t)d, (uintptr_t)s, n);     \
			if (#stream[0] == 'N') /* NULL: no stream given */    \
				tool_wait(NULL, 1);                                  \
		}                                                                    \
		tool_exit(#name, corr_);                                             \
		return CUDA_SUCCESS;                                                 \
	}
COPY1(cuMemcpy, CUdeviceptr, CUdeviceptr, NOTHING, NULL)
COPY1(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr, NOTHING, NULL)
COPY1(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, COMMA_STREAM, hs)
COPY1(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr, COMMA_STREAM, hs)
COPY1(cuMemcpyHtoD_v2, CUdeviceptr, const void *, NOTHING, NULL)
COPY1(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void *, NOTHING, NULL)
COPY1(cuMemcpyDtoH_v2, void *, CUdeviceptr, NOTHING, NULL)
COPY1(cuMemcpyDtoH_v2_ptds, void *, CUdeviceptr, NOTHING, NULL)
COPY1(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, NOTHING, NULL)
COPY1(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr, NOTHING, NULL)
COPY1(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void *, COMMA_STREAM, hs)
COPY1(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void *, COMMA_STREAM, hs)
COPY1(cuMemcpyDtoHAsync_v2, void *, CUdeviceptr, COMMA_STREAM, hs)
COPY1(cuMemcpyDtoHAsync_v2_ptsz, void *, CUdeviceptr, COMMA_STREAM, hs)
COPY1(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr, COMMA_STREAM, hs)
COPY1(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr, COMMA_STREAM, hs)

/* Copies between two contexts: CUPTI reports them as peer-to-peer
 * (MEMCPY2) records, a kind the double does not make (gpuspy does not ask
 * for it); within one context, as a device-to-device MEMCPY record. The
 * driver-API callbacks come either way. */
static CUresult peer(const char *api, CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream hs)
{
	FAIL_CHECK(api);
	unsigned corr = tool_enter(api);
	memmove((void *)d, (void *)s, n);
	if (dc == sc)
		tool_copy(corr, hs, d, s, n);
	tool_exit(api, corr);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) { return peer("cuMemcpyPeer", d, dc, s, sc, n, NULL); }
EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) { return peer("cuMemcpyPeer_ptds", d, dc, s, sc, n, NULL); }
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream hs) { return peer("cuMemcpyPeerAsync", d, dc, s, sc, n, hs); }
EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream hs) { return peer("cuMemcpyPeerAsync_ptsz", d, dc, s, sc, n, hs); }

static uintptr_t end2d(CUmemorytype t, const void *h, CUdeviceptr d) { return t == CU_MEMORYTYPE_HOST ? (uintptr_t)h : (uintptr_t)d; }

/* 2D and 3D copies: one MEMCPY record of the bytes moved (width x height
 * x depth), its ends' kinds those of the base pointers. */
static CUresult copy2d(const char *api, const CUDA_MEMCPY2D *p, CUstream hs)
{
	FAIL_CHECK(api);
	unsigned corr = tool_enter(api);
	char *d = (char *)end2d(p->dstMemoryType, p->dstHost, p->dstDevice);
	const char *s = (const char *)end2d(p->srcMemoryType, p->srcHost, p->srcDevice);
	for (size_t y = 0; y < p->Height; y++)
		memmove(d + (p->dstY + y) * p->dstPitch + p->dstXInBytes,
			s + (p->srcY + y) * p->srcPitch + p->srcXInBytes, p->WidthInBytes);
	tool_copy(corr, hs, (uintptr_t)d, (uintptr_t)s, p->WidthInBytes * p->Height);
	tool_exit(api, corr);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) { return copy2d("cuMemcpy2D_v2", p, NULL); }
EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) { return copy2d("cuMemcpy2D_v2_ptds", p, NULL); }
EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p) { return copy2d("cuMemcpy2DUnaligned_v2", p, NULL); }
EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p) { return copy2d("cuMemcpy2DUnaligned_v2_ptds", p, NULL); }
EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream hs) { return copy2d("cuMemcpy2DAsync_v2", p, hs); }
EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream hs) { return copy2d("cuMemcpy2DAsync_v2_ptsz", p, hs); }

static CUresult copy3d(const char *api, char *d, const char *s, size_t dp, size_t dh, size_t sp, size_t sh,
		       size_t w, size_t h, size_t depth, int cross, CUstream hs)
{
	FAIL_CHECK(api);
	unsigned corr = tool_enter(api);
	size_t z_n = depth ? depth : 1;
	for (size_t z = 0; z < z_n; z++)
		for (size_t y = 0; y < h; y++)
			memmove(d + (z * dh + y) * dp, s + (z * sh + y) * sp, w);
	if (!cross)
		tool_copy(corr, hs, (uintptr_t)d, (uintptr_t)s, w * h * z_n);
	tool_exit(api, corr);
	return CUDA_SUCCESS;
}
#define COPY3D(api, p, cross, hs)                                                                       \
	copy3d(api, (char *)end2d((p)->dstMemoryType, (p)->dstHost, (p)->dstDevice),                  \
	       (const char *)end2d((p)->srcMemoryType, (p)->srcHost, (p)->srcDevice), (p)->dstPitch,   \
	       (p)->dstHeight, (p)->srcPitch, (p)->srcHeight, (p)->WidthInBytes, (p)->Height, (p)->Depth, \
	       cross, hs)
EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) { return COPY3D("cuMemcpy3D_v2", p, 0, NULL); }
EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p) { return COPY3D("cuMemcpy3D_v2_ptds", p, 0, NULL); }
EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream hs) { return COPY3D("cuMemcpy3DAsync_v2", p, 0, hs); }
EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream hs) { return COPY3D("cuMemcpy3DAsync_v2_ptsz", p, 0, hs); }
EXPORT CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p) { return COPY3D("cuMemcpy3DPeer", p, p->dstContext != p->srcContext, NULL); }
EXPORT CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p) { return COPY3D("cuMemcpy3DPeer_ptds", p, p->dstContext != p->srcContext, NULL); }
EXPORT CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream hs) { return COPY3D("cuMemcpy3DPeerAsync", p, p->dstContext != p->srcContext, hs); }
EXPORT CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream hs) { return COPY3D("cuMemcpy3DPeerAsync_ptsz", p, p->dstContext != p->srcContext, hs); }

/* Batched copies: one MEMCPY record of the batch's summed bytes, its ends
 * those of the first copy (what the H200's CUPTI gave a batch of three
 * copies: tests/gpu/results/copies-check.md). */
static CUresult batch(const char *api, CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUstream hs)
{
	unsigned corr = tool_enter(api);
	size_t total = 0;
	for (size_t i = 0; i < c; i++) {
		memmove((void *)d[i], (void *)s[i], n[i]);
		total += n[i];
	}
	if (c)
		tool_copy(corr, hs, d[0], s[0], total);
	tool_exit(api, corr);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, size_t *ai, size_t na, size_t *fi, CUstream hs)
{ (void)a; (void)ai; (void)na; FAIL_CHECK("cuMemcpyBatchAsync"); if (fi) *fi = SIZE_MAX; return batch("cuMemcpyBatchAsync", d, s, n, c, hs); }
EXPORT CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, size_t *ai, size_t na, size_t *fi, CUstream hs)
{ return cuMemcpyBatchAsync(d, s, n, c, a, ai, na, fi, hs); }
EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, size_t *ai, size_t na, CUstream hs)
{ (void)a; (void)ai; (void)na; FAIL_CHECK("cuMemcpyBatchAsync_v2"); return batch("cuMemcpyBatchAsync_v2", d, s, n, c, hs); }
EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, size_t *ai, size_t na, CUstream hs)
{ return cuMemcpyBatchAsync_v2(d, s, n, c, a, ai, na, hs); }

/* ---- memsets ----------------------------------------------------------------- */

#define SET1(name, T, async, stream)                                                      \
	EXPORT CUresult name(CUdeviceptr d, T v, size_t n async)                           \
	{                                                                                 \
		FAIL_CHECK(#name);                                                        \
		unsigned corr_ = tool_enter(#name);                                       \
		if (!fk_capture_memset(stream, d, sizeof(T), n)) {                        \
			for (size_t i = 0; i < n; i++)                                    \
				((T *)d)[i] = v;                                          \
			tool_set(corr_, stream, n * sizeof(T));                           \
		}                                                                         \
		tool_exit(#name, corr_);                                                  \
		return CUDA_SUCCESS;                                                      \
	}
#define SET2(name, T, async, stream)                                                      \
	EXPORT CUresult name(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h async)   \
	{                                                                                 \
		FAIL_CHECK(#name);                                                        \
		unsigned corr_ = tool_enter(#name);                                       \
		for (size_t y = 0; y < h; y++)                                            \
			for (size_t i = 0; i < w; i++)                                    \
				((T *)(d + y * pitch))[i] = v;                            \
		tool_set(corr_, stream, w * h * sizeof(T));                               \
		tool_exit(#name, corr_);                                                  \
		return CUDA_SUCCESS;                                                      \
	}
SET1(cuMemsetD8_v2, unsigned char, NOTHING, NULL)
SET1(cuMemsetD8_v2_ptds, unsigned char, NOTHING, NULL)
SET1(cuMemsetD16_v2, unsigned short, NOTHING, NULL)
SET1(cuMemsetD16_v2_ptds, unsigned short, NOTHING, NULL)
SET1(cuMemsetD32_v2, unsigned int, NOTHING, NULL)
SET1(cuMemsetD32_v2_ptds, unsigned int, NOTHING, NULL)
SET1(cuMemsetD8Async, unsigned char, COMMA_STREAM, hs)
SET1(cuMemsetD8Async_ptsz, unsigned char, COMMA_STREAM, hs)
SET1(cuMemsetD16Async, unsigned short, COMMA_STREAM, hs)
SET1(cuMemsetD16Async_ptsz, unsigned short, COMMA_STREAM, hs)
SET1(cuMemsetD32Async, unsigned int, COMMA_STREAM, hs)
SET1(cuMemsetD32Async_ptsz, unsigned int, COMMA_STREAM, hs)
SET2(cuMemsetD2D8_v2, unsigned char, NOTHING, NULL)
SET2(cuMemsetD2D8_v2_ptds, unsigned char, NOTHING, NULL)
SET2(cuMemsetD2D16_v2, unsigned short, NOTHING, NULL)
SET2(cuMemsetD2D16_v2_ptds, unsigned short, NOTHING, NULL)
SET2(cuMemsetD2D32_v2, unsigned int, NOTHING, NULL)
SET2(cuMemsetD2D32_v2_ptds, unsigned int, NOTHING, NULL)
SET2(cuMemsetD2D8Async, unsigned char, COMMA_STREAM, hs)
SET2(cuMemsetD2D8Async_ptsz, unsigned char, COMMA_STREAM, hs)
SET2(cuMemsetD2D16Async, unsigned short, COMMA_STREAM, hs)
SET2(cuMemsetD2D16Async_ptsz, unsigned short, COMMA_STREAM, hs)
SET2(cuMemsetD2D32Async, unsigned int, COMMA_STREAM, hs)
SET2(cuMemsetD2D32Async_ptsz, unsigned int, COMMA_STREAM, hs)
