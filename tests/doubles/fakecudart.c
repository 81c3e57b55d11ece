/* SPDX-License-Identifier: MIT */
/*
 * Test double of libcudart.so.13. It reaches the driver exactly as the real
 * runtime does: dlopen("libcuda.so.1"), dlsym(handle, "cuGetProcAddress_v2")
 * once, then cuGetProcAddress's lookup of itself ("cuGetProcAddress" at
 * version 12000, or 11030 for the old 4-argument ABI when
 * FAKECUDART_GPA_VERSION=11030), then every entry point by name, version
 * and flags: once with flags 0 and once with the per-thread flag for the
 * _ptds/_ptsz entry points. Built twice: as a shared library and as an
 * archive linked into the program (the stand-in for static cudart).
 * FAKECUDART_STATS=1: at exit, how many times cudaRuntimeGetVersion ran.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "gpuspy/format.h"
#include "fakecuda.h"

#define EXPORT __attribute__((visibility("default")))

typedef CUresult (*gpa5_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa4_fn)(const char *, void **, int, cuuint64_t);

/* The driver table: [0] legacy stream, [1] per-thread default stream. */
static struct drv {
#define GSPY_X(sym, k, ver) __typeof__(&sym) sym;
	GSPY_DRIVER_API_LIST(GSPY_X)
#undef GSPY_X
	CUresult (*cuInit)(unsigned);
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
} drv[2];

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_error;
static gpa5_fn gpa5;
static gpa4_fn gpa4;

static void *proc(const char *name, int version, unsigned long long flags)
{
	void *p = NULL;
	if (gpa5)
		gpa5(name, &p, version, flags, NULL);
	else
		gpa4(name, &p, version, flags);
	return p;
}

static const struct { const char *name; int version; } abis[] = {
#define GSPY_X(sym, k, ver) { #sym, ver },
	GSPY_DRIVER_API_LIST(GSPY_X)
#undef GSPY_X
};

/* The runtime asks at its own version, except for an entry point whose ABI
 * was later replaced (cuCtxSynchronize, the 12.8 batch copy): it asks for
 * the old ABI at that ABI's version, as a runtime built for it would. */
static int ask_version(const char *name, int ver, int rv)
{
	char b[64], o[64];
	fakecuda_base_name(name, b, sizeof(b));
	for (size_t i = 0; i < sizeof(abis) / sizeof(abis[0]); i++) {
		fakecuda_base_name(abis[i].name, o, sizeof(o));
		if (!strcmp(o, b) && abis[i].version > ver && abis[i].version <= rv &&
		    !strstr(abis[i].name, "_pt"))
			return ver;
	}
	return rv;
}

static void init(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		init_error = cudaErrorInsufficientDriver;
		return;
	}
	gpa5_fn first = (gpa5_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!first) {
		init_error = cudaErrorInsufficientDriver;
		return;
	}
	const char *v = getenv("FAKECUDART_GPA_VERSION");
	int gv = v ? atoi(v) : 12000;
	void *self = NULL;
	first("cuGetProcAddress", &self, gv, 0, NULL);
	if (gv >= 12000)
		gpa5 = (gpa5_fn)self;
	else
		gpa4 = (gpa4_fn)self;
	if (!self) {
		init_error = cudaErrorInsufficientDriver;
		return;
	}
	const char *abi = getenv("FAKECUDART_VERSION");
	int rv = abi ? atoi(abi) : 13000;
	for (int t = 0; t < 2; t++) {
		unsigned long long fl = t ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
		char b[64];
#define GSPY_X(sym, k, ver)                                                            \
	fakecuda_base_name(#sym, b, sizeof(b));                                       \
	drv[t].sym = (__typeof__(drv[t].sym))proc(b, ask_version(#sym, ver, rv), fl);
		GSPY_DRIVER_API_LIST(GSPY_X)
#undef GSPY_X
		drv[t].cuInit = (CUresult(*)(unsigned))proc("cuInit", rv, fl);
		drv[t].cuModuleGetFunction = (CUresult(*)(CUfunction *, CUmodule, const char *))proc(
			"cuModuleGetFunction", rv, fl);
		drv[t].cuDevicePrimaryCtxRetain =
			(CUresult(*)(CUcontext *, CUdevice))proc("cuDevicePrimaryCtxRetain", rv, fl);
	}
	drv[0].cuInit(0);
	CUcontext ctx;
	drv[0].cuDevicePrimaryCtxRetain(&ctx, 0);
	drv[0].cuCtxSetCurrent(ctx);
}

static struct drv *D(int ptds)
{
	pthread_once(&once, init);
	return &drv[ptds];
}

/* A CUresult maps to the cudaError_t the real runtime would give. */
static cudaError_t err(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS: return cudaSuccess;
	case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
	case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
	default: return (cudaError_t)r;
	}
}
#define READY()                                                                    \
	do {                                                                       \
		D(0);                                                              \
		if (init_error)                                                    \
			return (cudaError_t)init_error;                            \
	} while (0)

/* ---- kernels ---------------------------------------------------------------- */

static struct { const void *stub; CUfunction f; } kernels[256];
static int nkernels;

/* The runtime has no link-time dependency on the driver: the double's
 * kernel registry is looked up in the loaded libcuda.so.1. */
EXPORT void fakecudart_register(const void *stub, const char *name, fake_kernel_fn body)
{
	D(0);
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	CUfunction (*mk)(const char *, fake_kernel_fn) =
		h ? (CUfunction(*)(const char *, fake_kernel_fn))dlsym(h, "fakecuda_function") : NULL;
	if (!mk)
		return;
	kernels[nkernels].stub = stub;
	kernels[nkernels].f = mk(name, body);
	nkernels++;
}

static CUfunction func_of(const void *stub)
{
	for (int i = 0; i < nkernels; i++)
		if (kernels[i].stub == stub)
			return kernels[i].f;
	return NULL;
}

EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *stub)
{
	CUfunction f = func_of(stub);
	*k = (cudaKernel_t)f;
	return f ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

/* FAKECUDART_STATS=1: say at exit how many times the version was asked. */
static unsigned long version_calls;
__attribute__((destructor)) static void fake_stats(void)
{
	const char *v = getenv("FAKECUDART_STATS");
	if (v && *v == '1')
		fprintf(stderr, "fakecudart: %lu cudaRuntimeGetVersion calls\n", version_calls);
}
EXPORT cudaError_t cudaRuntimeGetVersion(int *v)
{
	__atomic_add_fetch(&version_calls, 1, __ATOMIC_RELAXED);
	*v = 13000;
	return cudaSuccess;
}

/* ---- allocation ------------------------------------------------------------ */

EXPORT cudaError_t cudaMalloc(void **p, size_t n) { READY(); return err(D(0)->cuMemAlloc_v2((CUdeviceptr *)p, n)); }
EXPORT cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t w, size_t h) { READY(); return err(D(0)->cuMemAllocPitch_v2((CUdeviceptr *)p, pitch, w, h, 4)); }
EXPORT cudaError_t cudaMallocManaged(void **p, size_t n, unsigned f) { READY(); return err(D(0)->cuMemAllocManaged((CUdeviceptr *)p, n, f)); }
EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) { READY(); return err(D(0)->cuMemAllocAsync((CUdeviceptr *)p, n, s)); }
EXPORT cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s) { READY(); return err(D(1)->cuMemAllocAsync((CUdeviceptr *)p, n, s)); }
EXPORT cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, cudaMemPool_t m, cudaStream_t s) { READY(); return err(D(0)->cuMemAllocFromPoolAsync((CUdeviceptr *)p, n, (CUmemoryPool)m, s)); }
EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t n, cudaMemPool_t m, cudaStream_t s) { READY(); return err(D(1)->cuMemAllocFromPoolAsync((CUdeviceptr *)p, n, (CUmemoryPool)m, s)); }
EXPORT cudaError_t cudaFree(void *p) { READY(); return p ? err(D(0)->cuMemFree_v2((CUdeviceptr)p)) : cudaSuccess; }
EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { READY(); return err(D(0)->cuMemFreeAsync((CUdeviceptr)p, s)); }
EXPORT cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { READY(); return err(D(1)->cuMemFreeAsync((CUdeviceptr)p, s)); }
EXPORT cudaError_t cudaMallocHost(void **p, size_t n) { READY(); return err(D(0)->cuMemAllocHost_v2(p, n)); }
EXPORT cudaError_t cudaHostAlloc(void **p, size_t n, unsigned f) { READY(); return err(D(0)->cuMemHostAlloc(p, n, f)); }
EXPORT cudaError_t cudaHostRegister(void *p, size_t n, unsigned f) { READY(); return err(D(0)->cuMemHostRegister_v2(p, n, f)); }
EXPORT cudaError_t cudaHostUnregister(void *p) { READY(); return err(D(0)->cuMemHostUnregister(p)); }
EXPORT cudaError_t cudaFreeHost(void *p) { READY(); return err(D(0)->cuMemFreeHost(p)); }

/* ---- copies and memsets ------------------------------------------------------ */

static cudaError_t copy(struct drv *d, void *dst, const void *src, size_t n, enum cudaMemcpyKind k,
			CUstream s, int async)
{
	CUdeviceptr dd = (CUdeviceptr)dst, ss = (CUdeviceptr)src;
	switch (k) {
	case cudaMemcpyHostToDevice:
		return err(async ? d->cuMemcpyHtoDAsync_v2(dd, src, n, s) : d->cuMemcpyHtoD_v2(dd, src, n));
	case cudaMemcpyDeviceToHost:
		return err(async ? d->cuMemcpyDtoHAsync_v2(dst, ss, n, s) : d->cuMemcpyDtoH_v2(dst, ss, n));
	case cudaMemcpyDeviceToDevice:
		return err(async ? d->cuMemcpyDtoDAsync_v2(dd, ss, n, s) : d->cuMemcpyDtoD_v2(dd, ss, n));
	case cudaMemcpyHostToHost:
	case cudaMemcpyDefault:
		return err(async ? d->cuMemcpyAsync(dd, ss, n, s) : d->cuMemcpy(dd, ss, n));
	}
	return cudaErrorInvalidMemcpyDirection;
}

EXPORT cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { READY(); return copy(D(0), d, s, n, k, 0, 0); }
EXPORT cudaError_t cudaMemcpy_ptds(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { READY(); return copy(D(1), d, s, n, k, 0, 0); }
EXPORT cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) { READY(); return copy(D(0), d, s, n, k, st, 1); }
EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) { READY(); return copy(D(1), d, s, n, k, st, 1); }
EXPORT cudaError_t cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n)
{ READY(); return err(D(0)->cuMemcpyPeer((CUdeviceptr)d, (CUcontext)(uintptr_t)((dd + 1) << 4), (CUdeviceptr)s, (CUcontext)(uintptr_t)((sd + 1) << 4), n)); }
EXPORT cudaError_t cudaMemcpyPeerAsync(void *d, int dd, const void *s, int sd, size_t n, cudaStream_t st)
{ READY(); return err(D(0)->cuMemcpyPeerAsync((CUdeviceptr)d, (CUcontext)(uintptr_t)((dd + 1) << 4), (CUdeviceptr)s, (CUcontext)(uintptr_t)((sd + 1) << 4), n, st)); }

static CUDA_MEMCPY2D desc2d(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k)
{
	CUDA_MEMCPY2D c;
	memset(&c, 0, sizeof(c));
	int sh = k == cudaMemcpyHostToDevice || k == cudaMemcpyHostToHost;
	int dh = k == cudaMemcpyDeviceToHost || k == cudaMemcpyHostToHost;
	c.srcMemoryType = k == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : sh ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	c.dstMemoryType = k == cudaMemcpyDefault ? CU_MEMORYTYPE_UNIFIED : dh ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	c.srcHost = s; c.srcDevice = (CUdeviceptr)s; c.srcPitch = sp;
	c.dstHost = d; c.dstDevice = (CUdeviceptr)d; c.dstPitch = dp;
	c.WidthInBytes = w; c.Height = h;
	return c;
}
/* The real runtime's cudaMemcpy2D calls cuMemcpy2DUnaligned (H200,
 * tests/gpu/results/hostile/all-rt_families.txt); its async form cuMemcpy2DAsync. */
EXPORT cudaError_t cudaMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k)
{ READY(); CUDA_MEMCPY2D c = desc2d(d, dp, s, sp, w, h, k); return err(D(0)->cuMemcpy2DUnaligned_v2(&c)); }
EXPORT cudaError_t cudaMemcpy2D_ptds(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k)
{ READY(); CUDA_MEMCPY2D c = desc2d(d, dp, s, sp, w, h, k); return err(D(1)->cuMemcpy2DUnaligned_v2(&c)); }
EXPORT cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st)
{ READY(); CUDA_MEMCPY2D c = desc2d(d, dp, s, sp, w, h, k); return err(D(0)->cuMemcpy2DAsync_v2(&c, st)); }
EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st)
{ READY(); CUDA_MEMCPY2D c = desc2d(d, dp, s, sp, w, h, k); return err(D(1)->cuMemcpy2DAsync_v2(&c, st)); }

EXPORT cudaError_t cudaMemset(void *p, int v, size_t n) { READY(); return err(D(0)->cuMemsetD8_v2((CUdeviceptr)p, (unsigned char)v, n)); }
EXPORT cudaError_t cudaMemset_ptds(void *p, int v, size_t n) { READY(); return err(D(1)->cuMemsetD8_v2((CUdeviceptr)p, (unsigned char)v, n)); }
EXPORT cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) { READY(); return err(D(0)->cuMemsetD8Async((CUdeviceptr)p, (unsigned char)v, n, s)); }
EXPORT cudaError_t cudaMemsetAsync_ptsz(void *p, int v, size_t n, cudaStream_t s) { READY(); return err(D(1)->cuMemsetD8Async((CUdeviceptr)p, (unsigned char)v, n, s)); }

/* ---- launches ----------------------------------------------------------------- */

static cudaError_t launch(struct drv *d, CUfunction f, dim3 g, dim3 b, void **args, size_t sm, cudaStream_t s)
{
	if (!f)
		return cudaErrorInvalidDeviceFunction;
	return err(d->cuLaunchKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)sm, s, args, NULL));
}
EXPORT cudaError_t cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) { READY(); return launch(D(0), func_of(fn), g, b, a, sm, s); }
EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *fn, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) { READY(); return launch(D(1), func_of(fn), g, b, a, sm, s); }
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) { READY(); return launch(D(0), (CUfunction)k, g, b, a, sm, s); }
EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) { READY(); return launch(D(1), (CUfunction)k, g, b, a, sm, s); }

static cudaError_t launch_ex(struct drv *d, const cudaLaunchConfig_t *c, const void *fn, void **a)
{
	CUfunction f = func_of(fn);
	if (!f)
		return cudaErrorInvalidDeviceFunction;
	CUlaunchConfig lc;
	memset(&lc, 0, sizeof(lc));
	lc.gridDimX = c->gridDim.x; lc.gridDimY = c->gridDim.y; lc.gridDimZ = c->gridDim.z;
	lc.blockDimX = c->blockDim.x; lc.blockDimY = c->blockDim.y; lc.blockDimZ = c->blockDim.z;
	lc.sharedMemBytes = (unsigned)c->dynamicSmemBytes;
	lc.hStream = c->stream;
	return err(d->cuLaunchKernelEx(&lc, f, a, NULL));
}
EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *fn, void **a) { READY(); return launch_ex(D(0), c, fn, a); }
EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c, const void *fn, void **a) { READY(); return launch_ex(D(1), c, fn, a); }
EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *fn, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s)
{ READY(); CUfunction f = func_of(fn); return f ? err(D(0)->cuLaunchCooperativeKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)sm, s, a)) : cudaErrorInvalidDeviceFunction; }
EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *fn, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s)
{ READY(); CUfunction f = func_of(fn); return f ? err(D(1)->cuLaunchCooperativeKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)sm, s, a)) : cudaErrorInvalidDeviceFunction; }
EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data) { READY(); return err(D(0)->cuLaunchHostFunc(s, fn, data)); }
EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *data) { READY(); return err(D(1)->cuLaunchHostFunc(s, fn, data)); }
EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t g, cudaStream_t s) { READY(); return err(D(0)->cuGraphLaunch((CUgraphExec)g, s)); }
EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t g, cudaStream_t s) { READY(); return err(D(1)->cuGraphLaunch((CUgraphExec)g, s)); }

/* ---- waits --------------------------------------------------------------------- */

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s) { READY(); return err(D(0)->cuStreamSynchronize(s)); }
EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { READY(); return err(D(1)->cuStreamSynchronize(s)); }
EXPORT cudaError_t cudaDeviceSynchronize(void) { READY(); return err(D(0)->cuCtxSynchronize()); }
EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e) { READY(); return err(D(0)->cuEventSynchronize((CUevent)e)); }
EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f) { READY(); return err(D(0)->cuStreamWaitEvent(s, (CUevent)e, f)); }
EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned f) { READY(); return err(D(1)->cuStreamWaitEvent(s, (CUevent)e, f)); }

/* ---- driver entry points ---------------------------------------------------------- */

EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned int v, unsigned long long flags, enum cudaDriverEntryPointQueryResult *st)
{
	READY();
	*fn = proc(sym, (int)v, flags);
	if (st)
		*st = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
	return cudaSuccess;
}
EXPORT cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fn, unsigned long long flags, enum cudaDriverEntryPointQueryResult *st)
{
	return cudaGetDriverEntryPointByVersion(sym, fn, 13000, flags, st);
}

/* ---- what nvcc-generated host code calls -------------------------------------------
 * So that programs built by nvcc with -cudart shared (examples/) run on the
 * doubles: kernels register under their (mangled) device names and do
 * nothing when launched. */

static void *fatbin_handle = &fatbin_handle;

EXPORT void **__cudaRegisterFatBinary(void *fatCubin)
{
	(void)fatCubin;
	return (void **)&fatbin_handle;
}

EXPORT void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
EXPORT void __cudaUnregisterFatBinary(void **h) { (void)h; }

EXPORT void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName,
				   int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
	(void)h; (void)deviceFun; (void)thread_limit; (void)tid; (void)bid; (void)bDim; (void)gDim; (void)wSize;
	fakecudart_register(hostFun, deviceName, NULL);
}

EXPORT void __cudaRegisterVar(void **h, char *hostVar, char *deviceAddress, const char *deviceName,
			      int ext, size_t size, int constant, int global)
{
	(void)h; (void)hostVar; (void)deviceAddress; (void)deviceName; (void)ext; (void)size; (void)constant; (void)global;
}

static __thread struct { dim3 g, b; size_t sm; void *st; } call_cfg[8];
static __thread int call_depth;

EXPORT unsigned __cudaPushCallConfiguration(dim3 g, dim3 b, size_t sm, void *st)
{
	if (call_depth < 8) {
		call_cfg[call_depth].g = g;
		call_cfg[call_depth].b = b;
		call_cfg[call_depth].sm = sm;
		call_cfg[call_depth].st = st;
	}
	call_depth++;
	return 0;
}

EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *g, dim3 *b, size_t *sm, void *st)
{
	if (call_depth <= 0)
		return cudaErrorMissingConfiguration;
	call_depth--;
	if (call_depth < 8) {
		*g = call_cfg[call_depth].g;
		*b = call_cfg[call_depth].b;
		*sm = call_cfg[call_depth].sm;
		*(void **)st = call_cfg[call_depth].st;
	}
	return cudaSuccess;
}

EXPORT cudaError_t cudaGetLastError(void) { return cudaSuccess; }
EXPORT cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
EXPORT const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "error"; }
EXPORT cudaError_t cudaSetDevice(int d) { READY(); (void)d; return cudaSuccess; }
EXPORT cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
EXPORT cudaError_t cudaStreamCreate(cudaStream_t *s) { static long next = 0x9000; *s = (cudaStream_t)(next += 0x10); return cudaSuccess; }
EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s) { (void)s; return cudaSuccess; }
