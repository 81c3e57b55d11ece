/* SPDX-License-Identifier: MIT */
/*
 * What gpuspy asks the driver itself, after the program's call returned:
 * the current device (cached per thread until the thread's context
 * changes: the context-switching entry points are wrapped here), each
 * device's memory size the first time it is seen, what kind of memory an
 * address is, and kernel names (cached per function handle). Every query
 * keeps errno as the program's call left it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "cuda_api.h"
#include "gs.h"
#include "memmap.h"
#include "symbols.h"
#include "writer.h"
#include "module.h"

/* A libcuda function gpuspy calls itself, looked up once (any thread). */
static void *driver_cached(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!p) {
		p = gs_driver_fn(name);
		if (p)
			__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

/* The first time a device is seen, its memory size goes into the header
 * (the report's out-of-memory diagnosis needs it). */
static uint8_t devices_seen[GSPY_DEVICES];

static void gs_devices_forked(void)
{
	memset(devices_seen, 0, sizeof(devices_seen));
}

static void note_device(int d)
{
	uint8_t *seen = devices_seen;
	if (d < 0 || d >= GSPY_DEVICES || __atomic_exchange_n(&seen[d], 1, __ATOMIC_RELAXED))
		return;
	static void *total_p;
	CUresult (*total)(size_t *, CUdevice) =
		(CUresult(*)(size_t *, CUdevice))driver_cached(&total_p, "cuDeviceTotalMem_v2");
	size_t bytes = 0;
	if (total && total(&bytes, d) == CUDA_SUCCESS)
		gs_writer_device_mem(d, bytes);
}

/* The devices seen so far, as bits (GPUSPY_NVML_MS samples these). */
unsigned gs_devices_seen(void)
{
	unsigned m = 0;
	for (int d = 0; d < GSPY_DEVICES; d++)
		if (__atomic_load_n(&devices_seen[d], __ATOMIC_RELAXED))
			m |= 1u << d;
	return m;
}

/* Device d's PCI bus id ("0000:3b:00.0"), what NVML finds it by: 0, or -1. */
int gs_device_bus_id(int d, char *buf, int len)
{
	static void *bus_p;
	CUresult (*bus)(char *, int, CUdevice) = (CUresult(*)(char *, int, CUdevice))driver_cached(&bus_p, "cuDeviceGetPCIBusId");
	return bus && bus(buf, len, d) == CUDA_SUCCESS ? 0 : -1;
}

/*
 * gpuspy's own driver queries run after the program's call has returned:
 * each keeps errno as that call left it (the driver's ioctls may set it),
 * so the program never sees a value gpuspy caused.
 */
static int current_device_slow(struct gs_tls *t);

int gs_current_device(void)
{
	struct gs_tls *t = &gs_tls;
	if (GS_LIKELY(t->device >= 0 && t->device_known))
		return t->device;
	int e = errno;
	int d = current_device_slow(t);
	errno = e;
	return d;
}

static int current_device_slow(struct gs_tls *t)
{
	static void *get_p;
	CUresult (*get)(CUdevice *) = (CUresult(*)(CUdevice *))driver_cached(&get_p, "cuCtxGetDevice");
	/* Without a current context the answer is -1 until the next context
	 * switch we see, re-asked every 256 calls in case a context appeared
	 * in a way we did not see. */
	if (t->device == -1 && t->device_known && (++t->device_misses & 255) != 0)
		return -1;
	CUdevice d;
	t->device_known = 1;
	t->device = get && get(&d) == CUDA_SUCCESS ? d : -1;
	if (t->device >= 0) {
		__atomic_store_n(&gs_g.cuda_seen, 1, __ATOMIC_RELAXED);
		note_device(t->device);
	}
	return t->device;
}

/* ---- context switches ---------------------------------------------------
 * The current context is the calling thread's, so a switch forgets only
 * this thread's cached device. JAX makes its context current again before
 * every step: the same context keeps the cache. */

/* A push or pop leaves a context current that the thread may not have set
 * through cuCtxSetCurrent: asked again. */
static void ctx_unknown(void)
{
	gs_tls.ctx = NULL;
	gs_tls.device_known = 0;
}

GS_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult rc = GS_REAL(cuCtxSetCurrent)(ctx);
	struct gs_tls *t = &gs_tls;
	if (rc != CUDA_SUCCESS) {
		ctx_unknown(); /* the old context stays: not ctx */
	} else if (ctx != t->ctx) {
		t->ctx = ctx;
		t->device_known = 0;
	}
	return rc;
}

/* A new context is pushed, and current. */
GS_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult rc = GS_REAL(cuCtxCreate_v2)(pctx, flags, dev);
	ctx_unknown();
	return rc;
}

GS_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n, unsigned int flags,
			       CUdevice dev)
{
	CUresult rc = GS_REAL(cuCtxCreate_v3)(pctx, params, n, flags, dev);
	ctx_unknown();
	return rc;
}

GS_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
	CUresult rc = GS_REAL(cuCtxCreate_v4)(pctx, params, flags, dev);
	ctx_unknown();
	return rc;
}

/* The thread's current context, destroyed, is popped. */
GS_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult rc = GS_REAL(cuCtxDestroy_v2)(ctx);
	ctx_unknown();
	return rc;
}

GS_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult rc = GS_REAL(cuCtxPushCurrent_v2)(ctx);
	ctx_unknown();
	return rc;
}

GS_API CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
	CUresult rc = GS_REAL(cuCtxPopCurrent_v2)(ctx);
	ctx_unknown();
	return rc;
}

static unsigned classify_slow(uint64_t addr, int *device);

unsigned gs_classify(uint64_t addr, int *device)
{
	struct gs_range r;
	if (gs_memmap_find(addr, &r)) {
		*device = r.device;
		return r.mem == GSPY_MEM_managed ? GSPY_MEM_device : r.mem;
	}
	int e = errno;
	unsigned m = classify_slow(addr, device);
	errno = e;
	return m;
}

static unsigned classify_slow(uint64_t addr, int *device)
{
	static void *attr_p;
	CUresult (*attr)(void *, CUpointer_attribute, CUdeviceptr) =
		(CUresult(*)(void *, CUpointer_attribute, CUdeviceptr))driver_cached(&attr_p,
										     "cuPointerGetAttribute");
	unsigned type = 0;
	if (attr && attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr) == CUDA_SUCCESS) {
		if (type == CU_MEMORYTYPE_DEVICE) {
			int ord = -1;
			if (attr(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, addr) != CUDA_SUCCESS)
				ord = -1;
			*device = ord;
			return GSPY_MEM_device;
		}
		if (type == CU_MEMORYTYPE_HOST)
			return GSPY_MEM_pinned; /* page-locked by someone we did not see */
	}
	return GSPY_MEM_pageable;
}

/* ---- kernel names, cached per function handle --------------------------- */

#define NAME_CAP (1u << 14)
static struct {
	uint64_t key;
	uint32_t id;
} names[NAME_CAP];

static void names_forked(void)
{
	gs_devices_forked();
	memset(names, 0, sizeof(names)); /* ids belonged to the parent's file */
}

static uint32_t lookup_name(uint64_t func)
{
	static void *fget_p, *kget_p;
	CUresult (*fget)(const char **, CUfunction) =
		(CUresult(*)(const char **, CUfunction))driver_cached(&fget_p, "cuFuncGetName");
	CUresult (*kget)(const char **, CUkernel) =
		(CUresult(*)(const char **, CUkernel))driver_cached(&kget_p, "cuKernelGetName");
	const char *n = NULL;
	int e = errno;
	if (!(fget && fget(&n, (CUfunction)func) == CUDA_SUCCESS && n) &&
	    !(kget && kget(&n, (CUkernel)func) == CUDA_SUCCESS && n))
		n = "(unknown)";
	errno = e;
	return gs_intern(n);
}

uint32_t gs_kernel_name(uint64_t func)
{
	if (!func)
		return 0;
	uint32_t i = (uint32_t)((func >> 4) * 0x9E3779B1u) & (NAME_CAP - 1);
	for (uint32_t probe = 0; probe < 64; probe++, i = (i + 1) & (NAME_CAP - 1)) {
		uint64_t k = __atomic_load_n(&names[i].key, __ATOMIC_ACQUIRE);
		if (k == func) {
			uint32_t id = __atomic_load_n(&names[i].id, __ATOMIC_ACQUIRE);
			return id ? id : lookup_name(func);
		}
		if (k == 0) {
			if (!__atomic_compare_exchange_n(&names[i].key, &k, func, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE)) {
				if (k != func)
					continue;
				return lookup_name(func);
			}
			uint32_t id = lookup_name(func);
			/* The id is published after the name is in the file. */
			__atomic_store_n(&names[i].id, id, __ATOMIC_RELEASE);
			return id;
		}
	}
	return lookup_name(func);
}

GS_MODULE(devices, 30, .forked = names_forked);
