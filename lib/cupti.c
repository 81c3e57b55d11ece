/* SPDX-License-Identifier: MIT */
/*
 * GPU-side truth from CUPTI's activity API (docs/design.md#cupti): kernel,
 * memcpy and memset records with GPU start and end on gpuspy's own clock,
 * written into the same trace file as gpuspy_record kinds gpu_kernel,
 * gpu_copy and gpu_memset.
 *
 * libcupti is dlopen'ed (the copy PyTorch already loaded first), never
 * linked. GPUSPY_CUPTI=auto|on|off: auto turns it on when an NVIDIA driver
 * is present (/dev/nvidiactl), since CUPTI needs the real driver; `events`
 * leaves CUPTI alone and times phases with CUDA events (gpu_events.c).
 *
 * Correlation: CUPTI calls back gpuspy on entry to the driver's launch,
 * copy and memset entry points (only those), with the correlation id that
 * the GPU record will carry; the host record keeps it. On the H200 a
 * callback costs 34-88 ns a call over the bare collector; CUPTI's
 * driver-API records of the same entry points cost about nothing but would
 * have to be joined to the calls by thread and time, and external
 * correlation ids cost 232-525 ns (bench/gpu/cupti_costs.cu).
 *
 * Records reach the trace within two seconds once the program goes quiet,
 * every GPUSPY_CUPTI_FLUSH seconds (default 5) while it keeps launching
 * (the gpuspy-flush thread), at a context's destruction and at exit; see
 * flusher() for why CUPTI's own flush period is not enough.
 *
 * Only one tool may hold CUPTI. gpuspy takes a (silent) subscription as a
 * lock: if another tool holds it (torch.profiler, Nsight), gpuspy says so
 * once and stays with host timing; if gpuspy holds it, a tool that starts
 * later is refused by CUPTI and says so itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cupti.h>

#include "gs.h"
#include "gpu_timing.h"
#include "symbols.h"
#include "writer.h"
#include "module.h"

static struct {
	void *h;
	CUptiResult (*reg_ts)(CUpti_TimestampCallbackFunc);
	CUptiResult (*reg_cb)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*flush_period)(uint32_t);
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
	CUptiResult (*enable_cb)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
	CUptiResult (*enable_domain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
	CUptiResult (*cb_name)(CUpti_CallbackDomain, uint32_t, const char **);
	CUptiResult (*result_string)(CUptiResult, const char **);
	CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
	CUpti_SubscriberHandle sub;
	pthread_mutex_t lock; /* correlation map, names */
	int atexit_done, exiting;
	unsigned long unfinished; /* GPU records without times, left out */
	unsigned long ndropped;   /* GPU records CUPTI dropped for want of buffer space */
	int dropped_said;         /* their total is noted (once, at the process's end) */
	int faulted; /* a call failed with a sticky error: a kernel faulted */
	int injected; /* CUDA_INJECTION64_PATH: no wrapper is in the call path */
	unsigned flush_s; /* GPUSPY_CUPTI_FLUSH: busy flush interval, seconds */
	pid_t flusher_pid; /* the process whose flusher runs (0: none) */
	uint32_t exit_word; /* futex: _exit asked the flusher (1), done (2); exit()'s flush runs (3) */
	/* the latest correlation id, the flusher's "busy": written by every
	 * launch, copy and memset, so on a cache line of its own */
	uint32_t last_corr __attribute__((aligned(64)));
} c = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(cupti, c.lock);


#define NAMES (1u << 12)
static struct { const char *p; uint32_t id; } names[NAMES];

static uint64_t CUPTIAPI timestamp(void)
{
	return gs_now();
}

/* A context is about to be destroyed (cudaDeviceReset, cuCtxDestroy): hand
 * its completed records back while it still exists. */
static void context_ending(void)
{
	if (!__atomic_load_n(&c.exiting, __ATOMIC_ACQUIRE))
		c.flush_all(0);
}

static void CUPTIAPI on_api(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
	(void)u;
	if (GS_LIKELY(d == CUPTI_CB_DOMAIN_DRIVER_API)) {
		const CUpti_CallbackData *cb = data;
		if (cb->callbackSite == CUPTI_API_ENTER) {
			gs_tls.cupti_corr = cb->correlationId;
			__atomic_store_n(&c.last_corr, cb->correlationId, __ATOMIC_RELAXED);
		}
	} else if (d == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		context_ending();
	}
}

/* Callbacks only for the driver entry points that launch, copy or set. */
static unsigned enable_callbacks(void)
{
	unsigned enabled = 0;
	for (uint32_t id = 1; id < 4096; id++) {
		const char *name = NULL;
		if (c.cb_name(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) != CUPTI_SUCCESS || !name)
			break;
		unsigned kind = gs_api_kind(name);
		if ((kind == GSPY_KIND_launch || kind == GSPY_KIND_copy || kind == GSPY_KIND_memset) &&
		    c.enable_cb(1, c.sub, CUPTI_CB_DOMAIN_DRIVER_API, id) == CUPTI_SUCCESS)
			enabled++;
	}
	return enabled;
}

/* gpuspy_pause(): nothing is recorded to correlate, so the driver-API
 * callbacks go off (the activity records keep coming); resume turns them
 * back on. A paused process then pays what a bare CUPTI collector does. */
void gs_cupti_callbacks(int on)
{
	if (!gs_g.cupti || !c.enable_domain || c.injected)
		return;
	pthread_mutex_lock(&c.lock);
	if (on)
		enable_callbacks();
	else
		c.enable_domain(0, c.sub, CUPTI_CB_DOMAIN_DRIVER_API);
	pthread_mutex_unlock(&c.lock);
}

static void CUPTIAPI buffer_request(uint8_t **buf, size_t *size, size_t *max_records)
{
	*size = 8u << 20;
	gs_hold(); /* gpuspy's buffer, on CUPTI's thread too: not the program's */
	*buf = aligned_alloc(8, *size);
	gs_release();
	*max_records = 0;
}

static uint32_t name_id(const char *p)
{
	if (!p)
		return 0;
	uint32_t i = (uint32_t)(((uintptr_t)p >> 3) * 2654435761u) & (NAMES - 1);
	for (uint32_t n = 0; n < 16; n++, i = (i + 1) & (NAMES - 1)) {
		if (names[i].p == p)
			return names[i].id;
		if (!names[i].p) {
			names[i].p = p;
			names[i].id = gs_intern(p);
			return names[i].id;
		}
	}
	return gs_intern(p);
}


static unsigned mem_kind(uint8_t k)
{
	switch (k) {
	case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return GSPY_MEM_pageable;
	case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return GSPY_MEM_pinned;
	case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return GSPY_MEM_managed;
	case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
	case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return GSPY_MEM_device;
	}
	return GSPY_MEM_unknown;
}

static void copy_kind(struct gspy_record *r, const CUpti_ActivityMemcpy6 *m)
{
	switch (m->copyKind) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
		r->dir = GSPY_DIR_h2d;
		r->mem = (uint8_t)mem_kind(m->srcKind);
		break;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
		r->dir = GSPY_DIR_d2h;
		r->mem = (uint8_t)mem_kind(m->dstKind);
		break;
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
		r->dir = GSPY_DIR_h2h;
		r->mem = (uint8_t)mem_kind(m->srcKind);
		break;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		r->dir = GSPY_DIR_p2p;
		break;
	default:
		r->dir = GSPY_DIR_d2d;
		break;
	}
}

static void gpu_record(struct gspy_record *r, unsigned kind, unsigned api, uint64_t start,
		       uint64_t end, uint32_t stream, uint32_t device, uint64_t bytes, uint32_t graph,
		       uint32_t corr)
{
	r->kind = (uint8_t)kind;
	r->api = (uint16_t)api;
	r->start = start;
	r->end = end;
	r->stream = stream;
	r->device = (int16_t)device;
	r->u.gpu.bytes = bytes;
	r->u.gpu.graph_id = graph;
	r->u.gpu.cupti_corr = corr;
}

static int by_start(const void *a, const void *b)
{
	const struct gspy_record *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The records CUPTI dropped from the queue a buffer came back from (its
 * count since the last ask; ctx NULL: the global queue, which every
 * buffer comes from since CUDA 6.0): the first drop is noted at once, in
 * the file's header (a process killed later keeps it), the total at the
 * process's end (dropped_total). Asked after each flush too: records are
 * dropped when no buffer is there, so none may come back after them. */
static void note_dropped(CUcontext ctx, uint32_t stream)
{
	size_t d = 0;
	gs_hold(); /* gpuspy's own calls */
	if (c.dropped && c.dropped(ctx, stream, &d) == CUPTI_SUCCESS && d &&
	    !__atomic_fetch_add(&c.ndropped, d, __ATOMIC_RELAXED))
		gs_warn("CUPTI dropped GPU records for want of buffer space: some kernels, copies and memsets "
			"have no times");
	gs_release();
}

/* After the last flush (exit's, or _exit's and a fatal signal's on the
 * flusher thread): the drops since the last buffer, then the total, once. */
static void dropped_total(void)
{
	note_dropped(NULL, 0);
	unsigned long n = __atomic_load_n(&c.ndropped, __ATOMIC_RELAXED);
	if (n && !__atomic_exchange_n(&c.dropped_said, 1, __ATOMIC_ACQ_REL))
		gs_warn("CUPTI dropped %lu GPU records in all: their kernels, copies and memsets have no times", n);
}

/* CUPTI's worker (or a flushing thread) hands back a full buffer: write its
 * GPU records sorted by start, so that this thread's stream stays ordered
 * for the reader. */
static void CUPTIAPI buffer_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				     size_t valid)
{
	(void)ctx; (void)stream; (void)size;
	int e = errno;
	CUpti_Activity *a = NULL;
	size_t n = 0;
	gs_hold(); /* the allocations below are gpuspy's, not the program's */
	pthread_mutex_lock(&c.lock);
	while (c.next(buf, valid, &a) == CUPTI_SUCCESS)
		n++;
	struct gspy_record *v = n ? calloc(n, sizeof(*v)) : NULL;
	size_t k = 0;
	a = NULL;
	while (v && c.next(buf, valid, &a) == CUPTI_SUCCESS && k < n) {
		struct gspy_record *r = &v[k];
		/* The three record types share these fields under the same names. */
#define GPU_COMMON(x, k, api_, bytes_)                                                  \
	gpu_record(r, k, api_, (x)->start, (x)->end, (x)->streamId, (x)->deviceId, (bytes_), \
		   (x)->graphId, (x)->correlationId)
		if (a->kind == CUPTI_ACTIVITY_KIND_KERNEL || a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			const CUpti_ActivityKernel10 *x = (const void *)a;
			GPU_COMMON(x, GSPY_KIND_gpu_kernel, GSPY_API_cupti_kernel, 0);
			r->name_id = name_id(x->name);
		} else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
			const CUpti_ActivityMemcpy6 *x = (const void *)a;
			GPU_COMMON(x, GSPY_KIND_gpu_copy, GSPY_API_cupti_memcpy, x->bytes);
			copy_kind(r, x);
		} else if (a->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
			const CUpti_ActivityMemset4 *x = (const void *)a;
			GPU_COMMON(x, GSPY_KIND_gpu_memset, GSPY_API_cupti_memset, x->bytes);
		} else {
			continue;
		}
		/* A forced flush hands back work still running without its
		 * times: left out (no place on the timeline), counted. Work
		 * that started and never ended (a kernel that tripped a
		 * device-side assert: its context's error is sticky) is kept,
		 * marked: the post-mortem's first fact. */
		if (!r->start) {
			__atomic_fetch_add(&c.unfinished, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (r->end < r->start) {
			r->end = r->start;
			r->result = GSPY_GPU_UNFINISHED;
		}
		k++;
#undef GPU_COMMON
	}
	pthread_mutex_unlock(&c.lock);
	if (v) {
		qsort(v, k, sizeof(*v), by_start);
		struct gs_tls *t = &gs_tls;
		for (size_t i = 0; i < k; i++)
			gs_commit(t, &v[i]);
		free(v);
	}
	free(buf);
	note_dropped(ctx, stream);
	gs_release();
	errno = e;
}

/*
 * CUPTI's own flush period (cuptiActivityFlushPeriod) hands back only full
 * buffers: a partly filled one would wait for more GPU work or for exit,
 * and die with a killed process. gpuspy's flusher thread asks for the
 * buffers whose records are complete, full or not (the default
 * cuptiActivityFlushAll, which CUPTI documents for a separate thread):
 * once a second while the program is quiet (no launch, copy or memset in
 * the last second: its last records are then in the file within about two
 * seconds), and only every GPUSPY_CUPTI_FLUSH seconds while it keeps
 * launching, since each such flush slowed a launch-bound loop on the H200
 * (a bare collector flushing every second: 0.875..0.913 of untraced
 * against 0.914..0.930 without, every 5 s 0.932), and a busy program's
 * buffers fill and come back on their own. Injected or paused, no
 * callback says whether the program launches: every GPUSPY_CUPTI_FLUSH
 * seconds (a pause is meant to cost little). The thread takes no signal,
 * and what it allocates is not recorded.
 */
static void *flusher(void *arg)
{
	(void)arg;
	gs_tls.depth = 1;
	uint32_t seen = __atomic_load_n(&c.last_corr, __ATOMIC_RELAXED);
	unsigned busy_for = 0;
	for (;;) {
		/* A second, or less when _exit asks (gs_cupti_exit_flush). */
		struct timespec second = { 1, 0 };
		uint32_t w = __atomic_load_n(&c.exit_word, __ATOMIC_ACQUIRE);
		if (w != 1)
			syscall(SYS_futex, &c.exit_word, FUTEX_WAIT_PRIVATE, w, &second, NULL, 0);
		w = __atomic_load_n(&c.exit_word, __ATOMIC_ACQUIRE);
		if (w == 1) {
			if (!__atomic_exchange_n(&c.exiting, 1, __ATOMIC_ACQ_REL)) {
				c.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
				dropped_total();
			}
			__atomic_store_n(&c.exit_word, 2, __ATOMIC_RELEASE);
			syscall(SYS_futex, &c.exit_word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
			for (;;)
				pause(); /* the process is ending */
		}
		if (w != 0)
			continue; /* exit()'s own flush runs, or ran: the process is ending */
		/* Injected or paused, no callback tells: taken as busy. */
		uint32_t now = __atomic_load_n(&c.last_corr, __ATOMIC_RELAXED);
		int busy = now != seen || c.injected || __atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED);
		seen = now;
		if (busy && ++busy_for < c.flush_s)
			continue;
		busy_for = 0;
		if (!__atomic_load_n(&c.exiting, __ATOMIC_ACQUIRE)) {
			c.flush_all(0);
			note_dropped(NULL, 0);
		}
	}
	return NULL;
}

#define EXIT_WAIT_MS 500 /* the longest an exit waits for CUPTI's last flush */

/* The exit flush done (exit_word 2: 0 -> 1 (asked) -> 2, or 0 -> 3
 * (exit() flushes) -> 2), waited for EXIT_WAIT_MS at most: 0, or -1. */
static int wait_flushed(void)
{
	uint64_t end = gs_mono_ns() + EXIT_WAIT_MS * 1000000ull;
	uint32_t v;
	while ((v = __atomic_load_n(&c.exit_word, __ATOMIC_ACQUIRE)) != 2 && gs_wait_while(&c.exit_word, v, end) == 0)
		;
	return v == 2 ? 0 : -1;
}

/*
 * _exit (os._exit, a child's exit after fork) runs no atexit handler, so
 * CUPTI's held records would die with the process. The flusher thread,
 * not the exiting one (which may be in a signal handler, or hold a lock
 * CUPTI wants), makes the forced flush; the exiting thread waits for it
 * at most EXIT_WAIT_MS and then exits whatever happened: the program is
 * never held. A second thread's _exit meanwhile waits for the same
 * flush. Only in the process whose flusher it is (a forked child has
 * none); async-signal-safe.
 */
int gs_cupti_exit_flush(void)
{
	if (!c.flusher_pid || (pid_t)syscall(SYS_getpid) != c.flusher_pid)
		return 0;
	/* A flush another _exit asked for, or exit()'s own (3), is waited
	 * for as if this thread had asked. */
	uint32_t zero = 0;
	if (__atomic_compare_exchange_n(&c.exit_word, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &c.exit_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return wait_flushed();
}

/* exit(): the last flush, here, unless an _exit asked the flusher for it
 * first (then waited for, as _exit does); a thread's _exit meanwhile
 * waits for this one (exit_word 3) rather than end the process in the
 * middle of it. */
static void flush_at_exit(void)
{
	/* A child that no fork handler saw (syscall(SYS_fork), clone) has its
	 * parent's CUPTI state but none of CUPTI's threads: a flush there may
	 * wait for ever. */
	if (__atomic_load_n(&gs_pid, __ATOMIC_RELAXED) != (pid_t)syscall(SYS_getpid))
		return;
	uint32_t zero = 0;
	int own = __atomic_compare_exchange_n(&c.exit_word, &zero, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	__atomic_store_n(&c.exiting, 1, __ATOMIC_RELEASE);
	if (own) {
		if (gs_g.cupti)
			c.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		__atomic_store_n(&c.exit_word, 2, __ATOMIC_RELEASE);
		syscall(SYS_futex, &c.exit_word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	} else {
		wait_flushed();
	}
	unsigned long n = __atomic_load_n(&c.unfinished, __ATOMIC_RELAXED);
	/* After a fault CUPTI hands back the context's records without times,
	 * those of work that ended long before too (the H200 did so). */
	if (n && __atomic_load_n(&c.faulted, __ATOMIC_RELAXED))
		gs_warn("%lu GPU records came back without times after the GPU fault (a call failed with a "
			"sticky error): left out of the trace", n);
	else if (n)
		gs_warn("%lu GPU records had no times (GPU work still running at exit): left out of the trace",
			n);
	if (own && gs_g.cupti)
		dropped_total();
	gs_events_exit();
}

/* Called after the first recorded call returned (the runtime has set up
 * its own exit handlers by then): ours must run before them. */
static void cupti_slow(void)
{
	if ((gs_g.cupti || gs_g.events) && !__atomic_exchange_n(&c.atexit_done, 1, __ATOMIC_RELAXED))
		atexit(flush_at_exit);
}

enum { WANT_OFF, WANT_ON, WANT_EVENTS };
static int want(void)
{
	switch (gs_optu(GS_OPT_CUPTI)) { /* auto|on|off|events */
	case 1:
		return WANT_ON;
	case 2:
		return WANT_OFF;
	case 3:
		return WANT_EVENTS;
	}
	/* auto: a real NVIDIA driver */
	return access("/dev/nvidiactl", F_OK) == 0 ? WANT_ON : WANT_OFF;
}

static void *load(void)
{
	static const char *const names_[] = { "libcupti.so.13", "libcupti.so" };
	for (int i = 0; i < 2; i++) {
		void *h = dlopen(names_[i], RTLD_NOW | RTLD_NOLOAD);
		if (h)
			return h;
	}
	const char *home = getenv("CUDA_HOME");
	char p[512];
	const char *cands[4] = { "libcupti.so.13", NULL, "/usr/local/cuda/lib64/libcupti.so.13",
				 "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13" };
	if (home) {
		snprintf(p, sizeof(p), "%s/lib64/libcupti.so.13", home);
		cands[1] = p;
	}
	for (int i = 0; i < 4; i++) {
		void *h = cands[i] ? dlopen(cands[i], RTLD_NOW | RTLD_LOCAL) : NULL;
		if (h)
			return h;
	}
	return NULL;
}

#define SYM(field, name) (c.field = (__typeof__(c.field))gs_real_dlsym(c.h, name))

/* Returns the enum gspy_gpu_timing state. Called once, with the trace file
 * open, from the first recorded call. */
static unsigned cupti_start(void)
{
	/* A child forked after its parent used CUDA (DataLoader workers)
	 * cannot use CUDA, and CUPTI must not be started there. */
	int w = want();
	if (w == WANT_EVENTS)
		return gs_events_start(); /* no CUPTI: CUDA events at phase boundaries */
	if (gs_g.forked || w == WANT_OFF)
		return GSPY_GPU_TIMING_none;
	c.h = load();
	if (!c.h) {
		gs_warn("CUPTI not found (libcupti.so.13); GPU timing off, host timing only");
		return GSPY_GPU_TIMING_unavailable;
	}
	if (!SYM(reg_ts, "cuptiActivityRegisterTimestampCallback") ||
	    !SYM(reg_cb, "cuptiActivityRegisterCallbacks") || !SYM(enable, "cuptiActivityEnable") ||
	    !SYM(flush_all, "cuptiActivityFlushAll") || !SYM(next, "cuptiActivityGetNextRecord") ||
	    !SYM(subscribe, "cuptiSubscribe") || !SYM(enable_cb, "cuptiEnableCallback") ||
	    !SYM(cb_name, "cuptiGetCallbackName")) {
		gs_warn("this libcupti lacks the activity API gpuspy needs; GPU timing off");
		return GSPY_GPU_TIMING_unavailable;
	}
	SYM(flush_period, "cuptiActivityFlushPeriod");
	SYM(result_string, "cuptiGetResultString");
	SYM(enable_domain, "cuptiEnableDomain");
	SYM(dropped, "cuptiActivityGetNumDroppedRecords");
	CUptiResult rc = c.subscribe(&c.sub, on_api, NULL);
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		gs_warn("another tool holds CUPTI (torch.profiler, Nsight Systems, ...): it gets the GPU "
			"data; gpuspy records host timing only in this process");
		return GSPY_GPU_TIMING_in_use;
	}
	/* The clock first: records must use gpuspy's clock from the start. */
	if (rc != CUPTI_SUCCESS || c.reg_ts(timestamp) != CUPTI_SUCCESS ||
	    c.reg_cb(buffer_request, buffer_complete) != CUPTI_SUCCESS ||
	    c.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
	    c.enable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
	    c.enable(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS) {
		const char *why = "error";
		if (c.result_string)
			c.result_string(rc, &why);
		gs_warn("CUPTI could not be started (%s); host timing only", why);
		return GSPY_GPU_TIMING_failed;
	}
	if (c.flush_period)
		c.flush_period(1000);
	/* GPUSPY_CUPTI_FLUSH: seconds between flushes while the program launches. */
	c.flush_s = (unsigned)gs_optu(GS_OPT_CUPTI_FLUSH);
	/* Only a flusher that runs is waited for (gs_cupti_exit_flush): where
	 * no thread can start, _exit and a fatal signal would wait their
	 * 500 ms for nothing. */
	if (gs_start_thread(flusher, NULL, "gpuspy-flush", 0) == 0)
		c.flusher_pid = (pid_t)syscall(SYS_getpid);
	c.enable_cb(1, c.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
	/* Injected, no host record waits for a correlation id. */
	unsigned enabled = c.injected ? 0 : enable_callbacks();
	if (gs_optu(GS_OPT_DEBUG))
		gs_warn("CUPTI: correlation callbacks on %u driver entry points", enabled);
	gs_g.cupti = 1;
	return GSPY_GPU_TIMING_cupti;
}

/* A call failed with a sticky error: the exit's note says why records
 * came back without times. */
void gs_cupti_faulted(void)
{
	__atomic_store_n(&c.faulted, 1, __ATOMIC_RELAXED);
}

/* The driver call under a recorded launch, copy or memset got this CUPTI
 * correlation id; the GPU record of that work will carry it too. */
void gs_cupti_note(struct gspy_record *r, uint32_t corr)
{
	if (r->kind == GSPY_KIND_launch) {
		r->u.launch.cupti_corr = corr;
		r->flags |= GSPY_FLAG_CORR;
	} else if (r->kind == GSPY_KIND_copy || r->kind == GSPY_KIND_memset) {
		r->u.mem.aux = corr;
		r->flags |= GSPY_FLAG_CORR;
	}
}

/* Preloaded too (LD_PRELOAD and CUDA_INJECTION64_PATH both name gpuspy),
 * the program's cuLaunchKernel is gpuspy's: its wrappers are in the path. */
static int wrappers_in_path(void)
{
	return gs_in_self(gs_real_dlsym(RTLD_DEFAULT, "cuLaunchKernel"));
}

/*
 * GPU timing (CUPTI) starts on a thread of gpuspy's own: loading libcupti
 * takes the loader lock, which a thread running a library's constructor
 * holds, maybe while it waits on the thread whose first call got here. The
 * call waits for it a bounded time (normally it is done in milliseconds,
 * before the first launch); past that it goes on, and GPU timing begins
 * when the start finishes. CUDA_INJECTION64_PATH starts it inline: the
 * driver calls the injection with its own locks held, which a CUPTI
 * starting elsewhere would wait on.
 */
static uint32_t timing_done; /* futex word: 1 once gpu_timing is set */
static struct gspy_header *timing_hdr;

static void *timing_main(void *arg)
{
	(void)arg;
	gs_hold(); /* what CUPTI's start calls is gpuspy's, not the program's */
	timing_hdr->gpu_timing = cupti_start();
	gs_release();
	__atomic_store_n(&timing_done, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &timing_done, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
	return NULL;
}

static int inline_timing; /* set by InitializeInjection */
int gs_cupti_deferred;
static void gpu_timing_go(void);

static void gpu_timing_start(struct gspy_header *h)
{
	timing_hdr = h;
	/* Started paused (GPUSPY_START or gpuspy_pause): nothing of CUPTI's
	 * until the first window, which control.c opens and starts it at. */
	if (!inline_timing && __atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED)) {
		__atomic_store_n(&gs_cupti_deferred, 1, __ATOMIC_RELEASE);
		return;
	}
	gpu_timing_go();
}

void gs_cupti_flush(void)
{
	if (__atomic_load_n(&gs_g.cupti, __ATOMIC_ACQUIRE) && !__atomic_load_n(&c.exiting, __ATOMIC_ACQUIRE))
		c.flush_all(0);
}

void gs_cupti_start_late(void)
{
	if (timing_hdr)
		gpu_timing_go();
}

static void gpu_timing_go(void)
{
	if (inline_timing || gs_start_thread(timing_main, NULL, "gpuspy-timing", 0) != 0) {
		timing_main(NULL);
		return;
	}
	if (gs_wait_while(&timing_done, 0, gs_mono_ns() + 2000000000ull)) /* 2 s */
		gs_warn("GPU timing is slow to start (the loader is busy elsewhere); going on without waiting");
}

/*
 * CUDA_INJECTION64_PATH=libgpuspy.so: the driver calls this once, at the
 * first cuInit, for launchers that strip LD_PRELOAD. The runtime has resolved
 * its driver table by then, so gpuspy's wrappers are not in the call path:
 * this mode records what CUPTI sees (GPU kernels, copies, memsets) and NVTX
 * phases, not host API calls.
 */
GS_API int InitializeInjection(void);
GS_API int InitializeInjection(void)
{
	gs_init();
	if (gs_g.disabled)
		return 1;
	c.injected = !wrappers_in_path();
	inline_timing = 1;
	gs_writer_ready(); /* opens the trace file and starts CUPTI */
	cupti_slow();
	return 1;
}

static void cupti_forked(void)
{
	gs_g.cupti = 0;
	c.flusher_pid = 0;
	c.exit_word = 0;
	c.faulted = 0; /* its own calls say whether it faults */
	c.unfinished = 0;
	c.ndropped = 0;
	c.dropped_said = 0;
	timing_done = 0;
	gs_cupti_deferred = 0;
}

GS_MODULE(cupti, 90, .started = gpu_timing_start, .slow = cupti_slow, .forked = cupti_forked);
