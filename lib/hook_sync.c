/* SPDX-License-Identifier: MIT */
/*
 * Wait family: stream, context and event synchronisation and stream waits
 * on events, at the driver and the runtime level. These are where the host
 * stops for the GPU; the record's duration is the time the host waited.
 */
#define _GNU_SOURCE
#include "cuda_api.h"
#include "gs.h"
#include "symbols.h"
#include "gpu_timing.h"

static void sync_rec(struct gspy_record *r, uint64_t stream, uint64_t handle)
{
	if (!r)
		return;
	r->stream = stream;
	r->u.mem.addr = handle; /* event or context */
	r->device = (int16_t)gs_current_device();
}

static CUresult stream_sync(unsigned api, CUstream st)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_sync);
	CUresult rc = ((__typeof__(&cuStreamSynchronize))gs_real(api))(st);
	sync_rec(r, (uint64_t)st, 0);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuStreamSynchronize(CUstream st)
{
	return stream_sync(GSPY_API_cuStreamSynchronize, st);
}

GS_API CUresult cuStreamSynchronize_ptsz(CUstream st)
{
	return stream_sync(GSPY_API_cuStreamSynchronize_ptsz, st);
}

GS_API CUresult cuCtxSynchronize(void)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuCtxSynchronize, GSPY_KIND_sync);
	CUresult rc = GS_REAL(cuCtxSynchronize)();
	sync_rec(r, 0, 0);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuCtxSynchronize_v2, GSPY_KIND_sync);
	CUresult rc = GS_REAL(cuCtxSynchronize_v2)(ctx);
	sync_rec(r, 0, (uint64_t)ctx);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuEventSynchronize(CUevent ev)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuEventSynchronize, GSPY_KIND_sync);
	CUresult rc = GS_REAL(cuEventSynchronize)(ev);
	sync_rec(r, 0, (uint64_t)ev);
	gs_end(r, rc);
	return rc;
}

static CUresult wait_event(unsigned api, CUstream st, CUevent ev, unsigned flags)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_sync);
	CUresult rc = ((__typeof__(&cuStreamWaitEvent))gs_real(api))(st, ev, flags);
	sync_rec(r, (uint64_t)st, (uint64_t)ev);
	if (r)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuStreamWaitEvent(CUstream st, CUevent ev, unsigned int flags)
{
	return wait_event(GSPY_API_cuStreamWaitEvent, st, ev, flags);
}

GS_API CUresult cuStreamWaitEvent_ptsz(CUstream st, CUevent ev, unsigned int flags)
{
	return wait_event(GSPY_API_cuStreamWaitEvent_ptsz, st, ev, flags);
}

/* ---- runtime ----------------------------------------------------------------- */

static cudaError_t rt_stream_sync(unsigned api, cudaStream_t st)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_sync);
	cudaError_t rc = ((__typeof__(&cudaStreamSynchronize))gs_real(api))(st);
	sync_rec(r, (uint64_t)st, 0);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaStreamSynchronize(cudaStream_t st)
{
	return rt_stream_sync(GSPY_API_cudaStreamSynchronize, st);
}

GS_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t st)
{
	return rt_stream_sync(GSPY_API_cudaStreamSynchronize_ptsz, st);
}

GS_API cudaError_t cudaDeviceSynchronize(void)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaDeviceSynchronize, GSPY_KIND_sync);
	cudaError_t rc = GS_REAL(cudaDeviceSynchronize)();
	sync_rec(r, 0, 0);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
	struct gspy_record *r = gs_begin(GSPY_API_cudaEventSynchronize, GSPY_KIND_sync);
	cudaError_t rc = GS_REAL(cudaEventSynchronize)(ev);
	sync_rec(r, 0, (uint64_t)ev);
	gs_end(r, rc);
	return rc;
}

static cudaError_t rt_wait_event(unsigned api, cudaStream_t st, cudaEvent_t ev, unsigned flags)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_sync);
	cudaError_t rc = ((__typeof__(&cudaStreamWaitEvent))gs_real(api))(st, ev, flags);
	sync_rec(r, (uint64_t)st, (uint64_t)ev);
	if (r)
		r->flags |= GSPY_FLAG_ASYNC;
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t ev, unsigned int flags)
{
	return rt_wait_event(GSPY_API_cudaStreamWaitEvent, st, ev, flags);
}

GS_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t st, cudaEvent_t ev, unsigned int flags)
{
	return rt_wait_event(GSPY_API_cudaStreamWaitEvent_ptsz, st, ev, flags);
}

/* ---- streams destroyed: not recorded ------------------------------------
 * GPUSPY_CUPTI=events ends the interval on the stream first, while the
 * handle still names it, and never touches it again (gpu_events.c). */

GS_API CUresult cuStreamDestroy_v2(CUstream st)
{
	gs_events_stream_gone((uint64_t)(uintptr_t)st);
	return GS_REAL(cuStreamDestroy_v2)(st);
}

GS_API CUresult cuStreamDestroy(CUstream st)
{
	gs_events_stream_gone((uint64_t)(uintptr_t)st);
	return GS_REAL(cuStreamDestroy)(st);
}
