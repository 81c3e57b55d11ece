/* SPDX-License-Identifier: MIT */
/*
 * Streams in the driver double: created (handles 0x7010, 0x7020, ...; a
 * non-blocking one has 0x8 added), destroyed, asked whether they capture.
 * By default a handle is never checked, as before these checks existed;
 * two variables make the double as strict as the real driver is:
 *
 * FAKECUDA_STRICT_STREAMS=1: a destroyed stream's handle given to
 * cuEventRecord, a launch or cuStreamIsCapturing (what the real driver
 * leaves undefined) prints "fakecuda: API on destroyed stream 0xHANDLE"
 * on stderr, and the call returns CUDA_ERROR_INVALID_HANDLE.
 *
 * FAKECUDA_STRICT_CAPTURE=1: while a blocking stream is being captured,
 * the legacy stream is unusable, whatever the capture's mode (the CUDA
 * programming guide: it would depend implicitly on the capturing stream).
 * cuEventRecord or a launch on it returns CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
 * and invalidates every such capture: cuStreamIsCapturing then says
 * INVALIDATED, and cuStreamEndCapture returns
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. cuStreamIsCapturing on the
 * legacy stream returns CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and
 * invalidates nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "fakecuda.h"
#include "fakecuda_int.h"

#define EXPORT __attribute__((visibility("default")))
#define NONBLOCKING 0x8u
#define GONE_MAX 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t gone[GONE_MAX]; /* destroyed handles (never reused by cuStreamCreate) */
static int ngone;

static int strict(const char *var)
{
	const char *v = getenv(var);
	return v && !strcmp(v, "1");
}

static int legacy(CUstream hs)
{
	return !hs || hs == CU_STREAM_LEGACY;
}

int fk_blocking(CUstream hs)
{
	return hs != CU_STREAM_PER_THREAD && !((uintptr_t)hs & NONBLOCKING);
}

static int destroyed(CUstream hs)
{
	int found = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < ngone && !found; i++)
		found = gone[i] == (uintptr_t)hs;
	pthread_mutex_unlock(&lock);
	return found;
}

CUresult fk_stream_use(const char *api, CUstream hs)
{
	if (strict("FAKECUDA_STRICT_STREAMS") && !legacy(hs) && destroyed(hs)) {
		fprintf(stderr, "fakecuda: %s on destroyed stream %#lx\n", api, (unsigned long)(uintptr_t)hs);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if (strict("FAKECUDA_STRICT_CAPTURE") && legacy(hs) && fk_invalidate_blocking())
		return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *hs, unsigned flags)
{
	static long next = 0x7000;
	uintptr_t h = (uintptr_t)__atomic_add_fetch(&next, 0x10, __ATOMIC_RELAXED);
	*hs = (CUstream)(h | (flags & CU_STREAM_NON_BLOCKING ? NONBLOCKING : 0));
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream hs)
{
	if (legacy(hs) || hs == CU_STREAM_PER_THREAD)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&lock);
	if (ngone < GONE_MAX)
		gone[ngone++] = (uintptr_t)hs;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

/* The ABI before CUDA 4.0, still exported. */
EXPORT CUresult cuStreamDestroy(CUstream hs) { return cuStreamDestroy_v2(hs); }

/* FAKECUDA_CAPTURING=HANDLE: that stream is being captured into a graph. */
EXPORT CUresult cuStreamIsCapturing(CUstream hs, CUstreamCaptureStatus *s)
{
	CUresult rc = legacy(hs) ? CUDA_SUCCESS : fk_stream_use("cuStreamIsCapturing", hs);
	if (rc)
		return rc;
	if (legacy(hs) && strict("FAKECUDA_STRICT_CAPTURE") && fk_blocking_capture())
		return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	const char *v = getenv("FAKECUDA_CAPTURING");
	int st = fk_capturing(hs);
	*s = st == 2 ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
	     : (v && hs && strtoull(v, NULL, 0) == (uint64_t)(uintptr_t)hs) || st ? CU_STREAM_CAPTURE_STATUS_ACTIVE
									       : CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

static __thread CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *m)
{
	CUstreamCaptureMode old = capture_mode;
	capture_mode = *m;
	*m = old;
	return CUDA_SUCCESS;
}
