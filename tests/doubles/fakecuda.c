/* SPDX-License-Identifier: MIT */
/*
 * Test double of libcuda.so.1: the driver entry points gpuspy intercepts,
 * running without a GPU. Device memory is host memory that the double
 * remembers as device memory (so cuPointerGetAttribute answers like the
 * real driver); kernels are named functions that run on the host, or do
 * nothing. Its copies and memsets are in fakecopy.c, its graphs in
 * fakegraph.c, its streams in fakestream.c, its cuGetProcAddress in
 * fakeproc.c.
 *
 * Fault injection: FAKECUDA_FAIL="cuMemAlloc_v2:2,cuLaunchKernel:98" makes
 * the named entry points return the given CUresult without doing anything.
 * FAKECUDA_ASSERT=NAME: the kernel NAME trips a device-side assert, as on
 * the GPU: its launch succeeds, and from then on the context's error is
 * sticky: every entry point that FAKECUDA_FAIL could fail returns
 * CUDA_ERROR_ASSERT (710), doing nothing (fakecuda_sticky_error says so).
 * With CUDA_LAUNCH_BLOCKING=1 that launch itself returns it.
 * FAKECUDA_NEWER_ABI=1: cuGetProcAddress answers one entry point in an ABI
 * newer than gpuspy knows (launch_host_func_v2 below). The strict checks
 * of streams and captures (FAKECUDA_STRICT_*) are fakestream.c's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"
#include "gpuspy/format.h"
#include "fakecuda.h"
#include "fakecuda_int.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- fault injection ------------------------------------------------------- */

static int sticky; /* the context's sticky error (FAKECUDA_ASSERT), 0 none */

EXPORT int fakecuda_sticky_error(void) { return __atomic_load_n(&sticky, __ATOMIC_ACQUIRE); }

int fail(const char *name)
{
	int st = fakecuda_sticky_error();
	if (st)
		return st;
	const char *spec = getenv("FAKECUDA_FAIL");
	if (!spec)
		return 0;
	size_t n = strlen(name);
	for (const char *p = spec; p && *p;) {
		if (strncmp(p, name, n) == 0 && p[n] == ':')
			return atoi(p + n + 1);
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return 0;
}

/* ---- memory the double knows ---------------------------------------------- */

struct range { uintptr_t base; size_t size; int type; };
static struct range ranges[65536];
static int nranges;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void remember(void *p, size_t size, int type)
{
	pthread_mutex_lock(&lock);
	if (nranges < 65536)
		ranges[nranges++] = (struct range){ (uintptr_t)p, size, type };
	pthread_mutex_unlock(&lock);
}

static int forget(void *p, int type)
{
	int found = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < nranges; i++)
		if (ranges[i].base == (uintptr_t)p && ranges[i].type == type) {
			ranges[i] = ranges[--nranges];
			found = 1;
			break;
		}
	pthread_mutex_unlock(&lock);
	return found;
}

static int type_of(uintptr_t a)
{
	int t = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < nranges; i++)
		if (a >= ranges[i].base && a - ranges[i].base < ranges[i].size) {
			t = ranges[i].type;
			break;
		}
	pthread_mutex_unlock(&lock);
	return t;
}

/* ---- a profiling tool (fakecuda.h) ------------------------------------------- */

static const struct fakecuda_tool *tool;
static __thread int cur_dev = -1;

EXPORT void fakecuda_set_tool(const struct fakecuda_tool *t) { __atomic_store_n(&tool, t, __ATOMIC_RELEASE); }

unsigned tool_enter(const char *api)
{
	const struct fakecuda_tool *t = __atomic_load_n(&tool, __ATOMIC_ACQUIRE);
	return t ? t->enter(api) : 0;
}

void tool_exit(const char *api, unsigned corr)
{
	const struct fakecuda_tool *t = __atomic_load_n(&tool, __ATOMIC_ACQUIRE);
	if (t)
		t->exit(api, corr);
}

void tool_work(unsigned corr, int what, CUstream hs, unsigned long long ns, unsigned long long bytes,
		      int src, int dst, const char *name, unsigned graph)
{
	const struct fakecuda_tool *t = __atomic_load_n(&tool, __ATOMIC_ACQUIRE);
	uint64_t st = (uint64_t)(uintptr_t)hs;
	if (!t)
		return;
	struct fakecuda_work w = { what, st == (uint64_t)(uintptr_t)CU_STREAM_LEGACY ? 0 : st,
				   cur_dev < 0 ? 0 : cur_dev, ns, bytes, src, dst, name, graph };
	t->work(corr, &w);
}

void tool_wait(CUstream hs, int all)
{
	const struct fakecuda_tool *t = __atomic_load_n(&tool, __ATOMIC_ACQUIRE);
	uint64_t st = (uint64_t)(uintptr_t)hs;
	if (!t || !t->pending_ns)
		return;
	/* The legacy stream waits for every blocking stream. */
	if (all || st == (uint64_t)(uintptr_t)CU_STREAM_LEGACY)
		st = FAKECUDA_ALL_STREAMS;
	unsigned long long ns = t->pending_ns(st, cur_dev < 0 ? 0 : cur_dev);
	if (ns > 1000000000ull)
		ns = 1000000000ull; /* a second at most: a double, not a hang */
	struct timespec d = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	while (ns && nanosleep(&d, &d) != 0)
		;
}

void tool_set(unsigned corr, CUstream hs, size_t n)
{
	tool_work(corr, FAKECUDA_MEMSET, hs, n / 100, n, 0, 0, NULL, 0);
}

void tool_copy(unsigned corr, CUstream hs, uintptr_t d, uintptr_t s, size_t n)
{
	tool_graph_copy(corr, hs, d, s, n, 0);
}

void tool_graph_copy(unsigned corr, CUstream hs, uintptr_t d, uintptr_t s, size_t n, unsigned graph)
{
	if (__atomic_load_n(&tool, __ATOMIC_ACQUIRE)) /* no tool, no lookups */
		tool_work(corr, FAKECUDA_COPY, hs, n / 10, n, type_of(s), type_of(d), NULL, graph);
}

/* ---- kernels --------------------------------------------------------------- */

struct CUfunc_st { char name[128]; fake_kernel_fn body; };
static struct CUfunc_st funcs[256];
static int nfuncs;

EXPORT CUfunction fakecuda_function(const char *name, fake_kernel_fn body)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < nfuncs; i++)
		if (strcmp(funcs[i].name, name) == 0) {
			if (body)
				funcs[i].body = body;
			pthread_mutex_unlock(&lock);
			return &funcs[i];
		}
	struct CUfunc_st *f = &funcs[nfuncs++];
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->body = body;
	pthread_mutex_unlock(&lock);
	return f;
}

/* Spends $var ns (or dflt) of host time, read once into *cached. */
static void host_cost(const char *var, long dflt, long *cached)
{
	long ns = __atomic_load_n(cached, __ATOMIC_RELAXED);
	if (ns < 0) {
		const char *v = getenv(var);
		ns = v ? atol(v) : dflt;
		__atomic_store_n(cached, ns, __ATOMIC_RELAXED);
	}
	if (!ns)
		return;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

/* FAKECUDA_LAUNCH_NS=N makes each launch take N ns of host time, like a
 * real driver's launch path (for the launch-bound diagnosis test). */
static void launch_cost(void)
{
	static long cached = -1;
	host_cost("FAKECUDA_LAUNCH_NS", 0, &cached);
}

/* A wait on the double takes 20 us of host time (FAKECUDA_SYNC_NS=N:
 * N ns), as a real one does while the GPU finishes: over gpuspy's 10 us
 * default below which a wait keeps no stack. */
static void sync_cost(void)
{
	static long cached = -1;
	host_cost("FAKECUDA_SYNC_NS", 20000, &cached);
}

CUresult run(CUfunction f, void **params)
{
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	launch_cost();
	if (f->body)
		f->body(params);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	(void)m;
	*f = fakecuda_function(name, NULL);
	return CUDA_SUCCESS;
}

const char *fk_function_name(CUfunction f) { return f->name; }

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
	errno = ENOTTY; /* like the real driver's ioctls: a query may leave errno */
	if (!f || !name)
		return CUDA_ERROR_INVALID_VALUE;
	*name = f->name;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel k)
{
	return cuFuncGetName(name, (CUfunction)k);
}

/* ---- init, contexts, pointers ---------------------------------------------- */

/* Like the real driver, the first cuInit loads CUDA_INJECTION64_PATH and
 * calls its InitializeInjection. */
static void inject(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	void *h = path && *path ? dlopen(path, RTLD_NOW) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (init)
		init();
}

EXPORT CUresult cuInit(unsigned int flags)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	(void)flags;
	FAIL_CHECK("cuInit");
	pthread_once(&once, inject);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
/* Devices of the double have 80 GiB, or FAKECUDA_DEVICE_MEM_MB. */
EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	errno = ENOTTY; /* like the real driver's ioctls: a query may leave errno */
	(void)d;
	const char *v = getenv("FAKECUDA_DEVICE_MEM_MB");
	*bytes = (v ? (size_t)atol(v) : 81920) << 20;
	return CUDA_SUCCESS;
}
/* Device d sits on PCI bus 0x10 + d (the NVML double finds it there). */
EXPORT CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice d)
{
	snprintf(buf, (size_t)len, "0000:%02X:00.0", 0x10 + d);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	errno = ENOTTY; /* like the real driver's ioctls: a query may leave errno */
	if (cur_dev < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = cur_dev;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { cur_dev = c ? (int)((uintptr_t)c >> 4) - 1 : -1; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
	*c = cur_dev < 0 ? NULL : (CUcontext)(uintptr_t)((cur_dev + 1) << 4);
	return CUDA_SUCCESS;
}
/* Push and pop keep a per-thread stack, like the driver's. */
static __thread int ctx_stack[16], ctx_depth;
/* Internal calls do not go through the exported names (which a tool's
 * wrappers interpose), as in the driver. */
static CUresult push_ctx(CUcontext c)
{
	if (ctx_depth == 16)
		return CUDA_ERROR_INVALID_VALUE;
	ctx_stack[ctx_depth++] = cur_dev;
	cur_dev = c ? (int)((uintptr_t)c >> 4) - 1 : -1;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c) { return push_ctx(c); }
/* A created context (here the device's name again) is pushed, current. */
static CUresult create_ctx(CUcontext *c, CUdevice d)
{
	*c = (CUcontext)(uintptr_t)((d + 1) << 4);
	return push_ctx(*c);
}
EXPORT CUresult cuCtxCreate_v2(CUcontext *c, unsigned f, CUdevice d) { (void)f; return create_ctx(c, d); }
EXPORT CUresult cuCtxCreate_v3(CUcontext *c, CUexecAffinityParam *p, int n, unsigned f, CUdevice d)
{
	(void)p; (void)n; (void)f;
	return create_ctx(c, d);
}
EXPORT CUresult cuCtxCreate_v4(CUcontext *c, CUctxCreateParams *p, unsigned f, CUdevice d)
{
	(void)p; (void)f;
	return create_ctx(c, d);
}
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	if (c)
		cuCtxGetCurrent(c);
	cur_dev = ctx_depth ? ctx_stack[--ctx_depth] : -1;
	return CUDA_SUCCESS;
}
/* Contexts of the double are (device + 1) << 4. */
/* The double's contexts are names of devices: destroying one tells a tool,
 * as the real driver tells CUPTI, and pops it if it is current. */
EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
	const struct fakecuda_tool *t = __atomic_load_n(&tool, __ATOMIC_ACQUIRE);
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (t && t->context_destroy)
		t->context_destroy(c);
	if (cur_dev >= 0 && c == (CUcontext)(uintptr_t)((cur_dev + 1) << 4))
		cur_dev = ctx_depth ? ctx_stack[--ctx_depth] : -1;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = (CUcontext)(uintptr_t)((d + 1) << 4); return CUDA_SUCCESS; }

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
	errno = ENOTTY; /* like the real driver's ioctls: a query may leave errno */
	int t = type_of(p);
	if (!t)
		return CUDA_ERROR_INVALID_VALUE;
	if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
		*(unsigned *)data = t == 2 ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
	else if (a == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		*(int *)data = cur_dev < 0 ? 0 : cur_dev;
	else
		return CUDA_ERROR_NOT_SUPPORTED;
	return CUDA_SUCCESS;
}

/* ---- allocation -------------------------------------------------------------- */

enum { DEV = 1, PINNED = 2 };

static CUresult dev_alloc(CUdeviceptr *p, size_t n)
{
	/* More than the device has fails as on a GPU, before the host's
	 * allocator is asked (under ASan it would abort the program). */
	const char *v = getenv("FAKECUDA_DEVICE_MEM_MB");
	if (n > ((v ? (size_t)atol(v) : 81920) << 20))
		return CUDA_ERROR_OUT_OF_MEMORY;
	void *m = aligned_alloc(256, (n + 255) & ~(size_t)255);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	remember(m, n, DEV);
	*p = (CUdeviceptr)m;
	return CUDA_SUCCESS;
}

static CUresult dev_free(CUdeviceptr p)
{
	if (!p)
		return CUDA_SUCCESS;
	if (!forget((void *)p, DEV))
		return CUDA_ERROR_INVALID_VALUE;
	free((void *)p);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { FAIL_CHECK("cuMemAlloc_v2"); return dev_alloc(p, n); }
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned e)
{
	(void)e;
	FAIL_CHECK("cuMemAllocPitch_v2");
	*pitch = (w + 511) & ~(size_t)511;
	return dev_alloc(p, *pitch * h);
}
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned f) { (void)f; FAIL_CHECK("cuMemAllocManaged"); return dev_alloc(p, n); }
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
	FAIL_CHECK("cuMemAllocAsync");
	CUresult rc = dev_alloc(p, n);
	if (!rc)
		fk_capture_alloc(s, *p, n);
	return rc;
}
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s) { return cuMemAllocAsync(p, n, s); }
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { (void)pool; (void)s; FAIL_CHECK("cuMemAllocFromPoolAsync"); return dev_alloc(p, n); }
EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { return cuMemAllocFromPoolAsync(p, n, pool, s); }
/* cuMemFree waits for the device, as a real one does (sync_cost). */
EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	FAIL_CHECK("cuMemFree_v2");
	tool_wait(NULL, 1);
	sync_cost();
	return dev_free(p);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	FAIL_CHECK("cuMemFreeAsync");
	return fk_capture_free(s, p) ? CUDA_SUCCESS : dev_free(p);
}
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return cuMemFreeAsync(p, s); }

struct vmm { size_t size; };
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop, unsigned long long f)
{
	(void)prop; (void)f;
	FAIL_CHECK("cuMemCreate");
	struct vmm *v = malloc(sizeof(*v));
	v->size = n;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)v;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h) { FAIL_CHECK("cuMemRelease"); free((void *)(uintptr_t)h); return CUDA_SUCCESS; }
EXPORT CUresult cuMemAddressReserve(CUdeviceptr *p, size_t n, size_t align, CUdeviceptr addr, unsigned long long f)
{
	(void)align; (void)addr; (void)f;
	*p = (CUdeviceptr)aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
EXPORT CUresult cuMemAddressFree(CUdeviceptr p, size_t n) { (void)n; free((void *)p); return CUDA_SUCCESS; }
EXPORT CUresult cuMemMap(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f)
{
	(void)off; (void)h; (void)f;
	FAIL_CHECK("cuMemMap");
	remember((void *)p, n, DEV);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t n) { (void)n; FAIL_CHECK("cuMemUnmap"); forget((void *)p, DEV); return CUDA_SUCCESS; }

static CUresult host_alloc(void **p, size_t n)
{
	*p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
	if (!*p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	remember(*p, n, PINNED);
	return CUDA_SUCCESS;
}
EXPORT CUresult cuMemHostAlloc(void **p, size_t n, unsigned f) { (void)f; FAIL_CHECK("cuMemHostAlloc"); return host_alloc(p, n); }
EXPORT CUresult cuMemAllocHost_v2(void **p, size_t n) { FAIL_CHECK("cuMemAllocHost_v2"); return host_alloc(p, n); }
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned f) { (void)f; FAIL_CHECK("cuMemHostRegister_v2"); remember(p, n, PINNED); return CUDA_SUCCESS; }
EXPORT CUresult cuMemHostUnregister(void *p) { FAIL_CHECK("cuMemHostUnregister"); return forget(p, PINNED) ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED; }
EXPORT CUresult cuMemFreeHost(void *p) { FAIL_CHECK("cuMemFreeHost"); if (!forget(p, PINNED)) return CUDA_ERROR_INVALID_VALUE; free(p); return CUDA_SUCCESS; }

/* ---- a GPU timeline for events ---------------------------------------------- */

/* Each stream has a clock of GPU work: a kernel launch advances its
 * stream's clock by grid_x microseconds; copies and memsets take no time.
 * An event recorded on a stream takes the stream's clock. The GPU is one
 * event "behind" on each stream: an event is finished once a later one was
 * recorded on its stream (events complete in stream order), else from its
 * second cuEventQuery on (the first answers CUDA_ERROR_NOT_READY).
 * FAKECUDA_STATS=1: print the number of event queries at exit. */
struct fake_event { uint64_t t, seq; int recorded, queries; const uint64_t *last; };
static struct { uint64_t stream; int dev; uint64_t ns, seq; } clocks[256];
static int nclocks;
static unsigned long event_queries;

__attribute__((destructor)) static void fake_stats(void)
{
	const char *v = getenv("FAKECUDA_STATS");
	if (v && *v == '1')
		fprintf(stderr, "fakecuda: %lu event queries\n", event_queries);
}

/* Lock-free for a stream already seen (launches from many threads). */
#define stream_clock(hs) (&stream_of(hs)->ns)
static __typeof__(&clocks[0]) stream_of(CUstream hs)
{
	uint64_t st = (uint64_t)(uintptr_t)hs;
	int dev = st == 0 || st == (uint64_t)(uintptr_t)CU_STREAM_LEGACY ? cur_dev : -1;
	if (st == (uint64_t)(uintptr_t)CU_STREAM_LEGACY)
		st = 0;
	for (int pass = 0; pass < 2; pass++) {
		int n = __atomic_load_n(&nclocks, __ATOMIC_ACQUIRE);
		for (int i = 0; i < n; i++)
			if (clocks[i].stream == st && clocks[i].dev == dev)
				return &clocks[i];
		if (pass)
			break;
		pthread_mutex_lock(&lock);
		n = nclocks;
		int i = 0;
		while (i < n && !(clocks[i].stream == st && clocks[i].dev == dev))
			i++;
		if (i == n && n < 256) {
			clocks[n].stream = st;
			clocks[n].dev = dev;
			__atomic_store_n(&nclocks, n + 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&lock);
	}
	return &clocks[255];
}

void gpu_work(CUstream hs, unsigned grid_x)
{
	__atomic_add_fetch(stream_clock(hs), (uint64_t)grid_x * 1000, __ATOMIC_RELAXED);
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
	(void)flags;
	FAIL_CHECK("cuEventCreate");
	*e = (CUevent)calloc(1, sizeof(struct fake_event));
	return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
EXPORT CUresult cuEventDestroy_v2(CUevent e) { free(e); return CUDA_SUCCESS; }
EXPORT CUresult cuEventRecord(CUevent e, CUstream hs)
{
	FAIL_CHECK("cuEventRecord");
	CUresult rc = fk_stream_use("cuEventRecord", hs);
	if (rc)
		return rc;
	struct fake_event *x = (struct fake_event *)e;
	__typeof__(&clocks[0]) c = stream_of(hs);
	x->t = __atomic_load_n(&c->ns, __ATOMIC_RELAXED);
	x->seq = __atomic_add_fetch(&c->seq, 1, __ATOMIC_RELAXED);
	x->last = &c->seq;
	x->recorded = 1;
	x->queries = 0;
	return CUDA_SUCCESS;
}
EXPORT CUresult cuEventQuery(CUevent e)
{
	struct fake_event *x = (struct fake_event *)e;
	__atomic_add_fetch(&event_queries, 1, __ATOMIC_RELAXED);
	if (!x->recorded || x->queries++ > 0 || __atomic_load_n(x->last, __ATOMIC_RELAXED) > x->seq)
		return CUDA_SUCCESS;
	return CUDA_ERROR_NOT_READY;
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
	const struct fake_event *x = (const void *)a, *y = (const void *)b;
	if (!x->recorded || !y->recorded)
		return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)((double)((int64_t)(y->t - x->t)) / 1e6);
	return CUDA_SUCCESS;
}
#undef cuEventElapsedTime /* the ABI before CUDA 12.8 */
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b);
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime_v2(ms, a, b); }
/* Streams, their capture status and the strict checks: fakestream.c. */

/* ---- launches ------------------------------------------------------------------ */

static CUresult launch(const char *api, CUfunction f, unsigned gx, CUstream hs, void **params)
{
	CUresult bad = fk_stream_use(api, hs);
	if (bad)
		return bad;
	unsigned corr = tool_enter(api);
	if (f && fk_capture_kernel(hs, f, gx, 1)) {
		tool_exit(api, corr);
		return CUDA_SUCCESS;
	}
	CUresult rc = run(f, params);
	if (!rc) {
		gpu_work(hs, gx);
		tool_work(corr, FAKECUDA_KERNEL, hs, (unsigned long long)gx * 1000, 0, 0, 0, f->name, 0);
		const char *as = getenv("FAKECUDA_ASSERT"), *blocking = getenv("CUDA_LAUNCH_BLOCKING");
		if (as && f && !strcmp(as, f->name)) {
			__atomic_store_n(&sticky, CUDA_ERROR_ASSERT, __ATOMIC_RELEASE);
			if (blocking && !strcmp(blocking, "1"))
				rc = CUDA_ERROR_ASSERT; /* the launch waited for its kernel */
		}
	}
	tool_exit(api, corr);
	return rc;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sm, CUstream hs, void **params, void **extra)
{ (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)sm; (void)extra; FAIL_CHECK("cuLaunchKernel"); return launch("cuLaunchKernel", f, gx, hs, params); }
EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sm, CUstream hs, void **params, void **extra)
{ return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sm, hs ? hs : CU_STREAM_PER_THREAD, params, extra); }
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{ (void)extra; FAIL_CHECK("cuLaunchKernelEx"); return launch("cuLaunchKernelEx", f, c ? c->gridDimX : 0, c ? c->hStream : NULL, params); }
EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) { return cuLaunchKernelEx(c, f, params, extra); }
EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sm, CUstream hs, void **params)
{ (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)sm; FAIL_CHECK("cuLaunchCooperativeKernel"); return launch("cuLaunchCooperativeKernel", f, gx, hs, params); }
EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sm, CUstream hs, void **params)
{ return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, sm, hs, params); }
/* Internal calls do not go through the exported names, as in the driver. */
static CUresult host_func(CUstream hs, CUhostFn fn, void *data) { (void)hs; FAIL_CHECK("cuLaunchHostFunc"); fn(data); return CUDA_SUCCESS; }
EXPORT CUresult cuLaunchHostFunc(CUstream hs, CUhostFn fn, void *data) { return host_func(hs, fn, data); }
EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream hs, CUhostFn fn, void *data) { return cuLaunchHostFunc(hs, fn, data); }
/* FAKECUDA_NEWER_ABI=1: an ABI newer than gpuspy knows. cuGetProcAddress
 * answers "cuLaunchHostFunc" at version 13010 or later with this function
 * of four arguments (cuda-python 13 declares a cuLaunchHostFunc_v2 so),
 * not exported by name; a syncMode other than 0 or 1 is invalid.
 * fakecuda_newer_abi_calls() says how many times it was called. */
static int newer_calls;
EXPORT int fakecuda_newer_abi_calls(void) { return __atomic_load_n(&newer_calls, __ATOMIC_RELAXED); }
CUresult launch_host_func_v2(CUstream hs, CUhostFn fn, void *data, unsigned sync_mode)
{
	__atomic_add_fetch(&newer_calls, 1, __ATOMIC_RELAXED);
	if (sync_mode > 1)
		return CUDA_ERROR_INVALID_VALUE;
	return host_func(hs, fn, data);
}

/* ---- waits ------------------------------------------------------------------------ */

/* Stream 0xb10c never finishes: the wait blocks until a signal handler
 * jumps out of it (tests/hostile/prog_longjmp.c). */
EXPORT CUresult cuStreamSynchronize(CUstream hs)
{
	FAIL_CHECK("cuStreamSynchronize");
	while (hs == (CUstream)0xb10c)
		pause();
	tool_wait(hs, 0);
	sync_cost();
	return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hs) { return cuStreamSynchronize(hs); }
EXPORT CUresult cuCtxSynchronize(void) { FAIL_CHECK("cuCtxSynchronize"); tool_wait(NULL, 1); sync_cost(); return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSynchronize_v2(CUcontext c) { (void)c; FAIL_CHECK("cuCtxSynchronize_v2"); tool_wait(NULL, 1); sync_cost(); return CUDA_SUCCESS; }
EXPORT CUresult cuEventSynchronize(CUevent e) { (void)e; FAIL_CHECK("cuEventSynchronize"); sync_cost(); return CUDA_SUCCESS; }
EXPORT CUresult cuStreamWaitEvent(CUstream hs, CUevent e, unsigned f) { (void)hs; (void)e; (void)f; FAIL_CHECK("cuStreamWaitEvent"); return CUDA_SUCCESS; }
EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream hs, CUevent e, unsigned f) { return cuStreamWaitEvent(hs, e, f); }
