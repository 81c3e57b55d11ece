/* SPDX-License-Identifier: MIT */
/*
 * Test double of libcupti.so.13: the part of CUPTI's callback and activity
 * API that gpuspy uses, fed by the driver double (fakecuda_set_tool), so
 * that lib/cupti.c runs in CI as it does on the GPU.
 *
 * What it does like CUPTI:
 *  - one subscriber at a time: a second cuptiSubscribe gets
 *    CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (FAKECUPTI_HELD=1: some
 *    other tool already holds it);
 *  - driver-API callbacks at entry and exit of the enabled entry points,
 *    with the correlation id that the call's activity records carry;
 *  - CONCURRENT_KERNEL, MEMCPY and MEMSET records (Kernel10, Memcpy6,
 *    Memset4) on the clock of the registered timestamp callback, in
 *    buffers from the client's request callback. A full buffer goes back
 *    on the double's worker thread (CUPTI's flush period, too, returns
 *    only full buffers); cuptiActivityFlushAll returns the partly filled
 *    one as well, on the calling thread (the double's records are always
 *    complete, so the default and the forced flush do the same).
 *  - the resource callback CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING
 *    from cuCtxDestroy, before the context goes;
 *  - FAKECUPTI_UNFINISHED=N: a forced flush hands back the last N records
 *    without times (start and end 0), as CUPTI does for GPU work still
 *    running;
 *  - FAKECUPTI_FAULT=N: the last N kernel records keep their start but get
 *    no end, as CUPTI may give a kernel still running at exit;
 *  - after a kernel's device-side assert (the driver double's sticky
 *    error, FAKECUDA_ASSERT), a forced flush hands back every record of
 *    the buffer being filled without times, those of kernels that ended
 *    and were waited for before the assert too: what the H200's CUPTI did
 *    (tests/gpu/exits.sh); but those FAKECUPTI_FAULT leaves without an end.
 *  - records that find no buffer space are dropped and counted, and
 *    cuptiActivityGetNumDroppedRecords gives the count since its last
 *    call; FAKECUPTI_DROP=K:N drops the Kth record and the N-1 after it
 *    (1-based), as when the client declined a buffer mid-run.
 * The GPU: each stream runs its work in order; work starts 1 us after the
 * call that queued it, or when the stream's previous work ends if later,
 * and takes the time fakecuda.h gives it, in the timestamp callback's
 * units (per_ns: the real CUPTI maps GPU time onto the callback's clock by
 * interpolation). A synchronizing call of the driver double waits until
 * its stream's work ends (pending_ns), as a real one waits for the GPU.
 * FAKECUPTI_BUFFER=N uses only N bytes of each buffer (to make buffers fill
 * up; the worker takes each full one before the program goes on).
 * cuptiActivityFlushAll in a child process (the worker is its parent's)
 * says so on stderr and ends the child with 98.
 * FAKECUPTI_STATS=1 prints at exit the callbacks made, the records written,
 * those handed back inside a context's destruction and the unforced
 * cuptiActivityFlushAll calls.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "../../lib/cuda_api.h"
#include "gpuspy/format.h"
#include "fakecuda.h"

#define EXPORT __attribute__((visibility("default")))

/* The driver entry points CUPTI has callback ids for: id = index + 1. */
static const char *const api_names[] = {
#define GSPY_X(sym, k, ver) #sym,
	GSPY_DRIVER_API_LIST(GSPY_X)
#undef GSPY_X
};
#define NAPI (sizeof(api_names) / sizeof(api_names[0]))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;    /* all state below */
static pthread_mutex_t deliver = PTHREAD_MUTEX_INITIALIZER; /* one buffer handed back at a time */
static pid_t worker_pid; /* the process whose worker thread runs */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;  /* a full buffer for the worker */
static pthread_cond_t taken = PTHREAD_COND_INITIALIZER; /* the worker took it */

static struct {
	int subscribed, held;
	CUpti_CallbackFunc cb;
	void *cb_user;
	unsigned char cb_on[NAPI + 1];
	int destroy_cb_on, in_destroy;
	unsigned char kind_on[64];
	CUpti_TimestampCallbackFunc ts;
	CUpti_BuffersCallbackRequestFunc request;
	CUpti_BuffersCallbackCompleteFunc complete;
	unsigned corr;
	/* the buffer being filled, and full ones waiting for the worker */
	uint8_t *buf;
	size_t size, used;
	struct full { uint8_t *buf; size_t size, used; } full[64];
	int nfull, worker;
	/* the GPU: per stream, when its last work ends */
	struct { unsigned long long handle; int device; uint64_t busy; } streams[256];
	int nstreams;
	unsigned long callbacks, records, at_destroy, flushes;
	unsigned long seen, dropped; /* records made; dropped since cuptiActivityGetNumDroppedRecords */
} s;

static uint64_t mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t now(void)
{
	CUpti_TimestampCallbackFunc ts = __atomic_load_n(&s.ts, __ATOMIC_ACQUIRE);
	return ts ? ts() : mono();
}

/* The timestamp callback's units a nanosecond (1 for a monotonic clock,
 * the TSC's rate for gpuspy's TSC clock), so that work takes its time in
 * real time and a synchronize waits as long as the records say. Measured
 * between the first call and one 2 ms later; a guess before. With lock. */
static double per_ns(void)
{
	static uint64_t t0, m0;
	static double fixed;
	uint64_t t = now(), m = mono();
	if (fixed > 0)
		return fixed;
	if (!t0) {
		t0 = t;
		m0 = m;
	}
	if (t + 1000000000u > m && m + 1000000000u > t)
		return fixed = 1.0; /* within a second of CLOCK_MONOTONIC: that clock */
	if (m - m0 > 2000000)
		return fixed = (double)(t - t0) / (double)(m - m0);
	return m ? (double)t / (double)m : 1.0; /* both count from boot, roughly */
}

static unsigned api_id(const char *name)
{
	for (unsigned i = 0; i < NAPI; i++)
		if (!strcmp(api_names[i], name))
			return i + 1;
	return 0;
}

/* ---- the tool hook in the driver double ---------------------------------------- */

static void callback(const char *api, unsigned corr, CUpti_ApiCallbackSite site)
{
	unsigned id = api_id(api);
	pthread_mutex_lock(&lock);
	CUpti_CallbackFunc cb = s.subscribed && id && s.cb_on[id] ? s.cb : NULL;
	void *user = s.cb_user;
	if (cb)
		s.callbacks++;
	pthread_mutex_unlock(&lock);
	if (!cb)
		return;
	CUpti_CallbackData d;
	memset(&d, 0, sizeof(d));
	d.callbackSite = site;
	d.functionName = api;
	d.correlationId = corr;
	cb(user, CUPTI_CB_DOMAIN_DRIVER_API, id, &d);
}

static unsigned on_enter(const char *api)
{
	unsigned corr = __atomic_add_fetch(&s.corr, 1, __ATOMIC_RELAXED);
	callback(api, corr, CUPTI_API_ENTER);
	return corr;
}

static void on_exit_(const char *api, unsigned corr)
{
	callback(api, corr, CUPTI_API_EXIT);
}

/* Called with the lock held: room for n bytes, or NULL. */
static void *room(size_t n)
{
	if (s.buf && s.used + n > s.size) {
		if (s.nfull == (int)(sizeof(s.full) / sizeof(s.full[0])))
			return NULL; /* the client keeps none: records are lost, as in CUPTI */
		s.full[s.nfull++] = (struct full){ s.buf, s.size, s.used };
		s.buf = NULL;
		pthread_cond_signal(&wake);
		/* The worker takes it (so it goes back on the worker's thread,
		 * whatever the timing) before this thread goes on. */
		while (s.nfull)
			pthread_cond_wait(&taken, &lock);
	}
	if (!s.buf) {
		size_t max_records = 0;
		s.request(&s.buf, &s.size, &max_records);
		const char *cap = getenv("FAKECUPTI_BUFFER");
		if (s.buf && cap && atol(cap) > 0 && (size_t)atol(cap) < s.size)
			s.size = (size_t)atol(cap);
		s.used = 0;
		if (!s.buf || s.size < n)
			return NULL;
	}
	void *p = s.buf + s.used;
	memset(p, 0, n);
	s.used += (n + 7) & ~(size_t)7;
	return p;
}

static uint32_t stream_id(unsigned long long handle, int device, uint64_t **busy)
{
	int i = 0;
	while (i < s.nstreams && !(s.streams[i].handle == handle && s.streams[i].device == device))
		i++;
	if (i == s.nstreams && i < 255) {
		s.streams[i].handle = handle;
		s.streams[i].device = device;
		s.streams[i].busy = 0;
		s.nstreams++;
	}
	*busy = &s.streams[i].busy;
	return (uint32_t)i + 7; /* CUPTI's stream ids are small numbers, not handles */
}

static uint8_t memory_kind(int where)
{
	return where == FAKECUDA_DEVICE ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
	       : where == FAKECUDA_PINNED ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
					  : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

static uint8_t copy_kind(int src, int dst)
{
	int hs = src != FAKECUDA_DEVICE, hd = dst != FAKECUDA_DEVICE;
	return hs && hd ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOH
	       : hs     ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
	       : hd     ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
			: CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
}

static void on_work(unsigned corr, const struct fakecuda_work *w)
{
	uint64_t t = now();
	pthread_mutex_lock(&lock);
	int kind = w->what == FAKECUDA_KERNEL ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
		   : w->what == FAKECUDA_COPY ? CUPTI_ACTIVITY_KIND_MEMCPY
					      : CUPTI_ACTIVITY_KIND_MEMSET;
	if (!s.request || !s.kind_on[kind]) {
		pthread_mutex_unlock(&lock);
		return;
	}
	uint64_t *busy;
	uint32_t sid = stream_id(w->stream, w->device, &busy);
	const char *drop = getenv("FAKECUPTI_DROP");
	unsigned long k = 0, n = 0, at = ++s.seen;
	int dropped = drop && sscanf(drop, "%lu:%lu", &k, &n) == 2 && at >= k && at < k + n;
	double r = per_ns();
	uint64_t start = t + (uint64_t)(1000 * r) > *busy ? t + (uint64_t)(1000 * r) : *busy;
	uint64_t end = start + (uint64_t)((double)w->ns * r);
	*busy = end;
	/* The three record types share these fields under the same names. */
#define COMMON(x)                                                                           \
	((x)->kind = (CUpti_ActivityKind)kind, (x)->start = start, (x)->end = end,        \
	 (x)->deviceId = (uint32_t)w->device, (x)->streamId = sid, (x)->correlationId = corr, \
	 (x)->graphId = w->graph, s.records++)
	if (dropped) {
		s.dropped++; /* its work runs; its record is not made */
	} else if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
		CUpti_ActivityKernel10 *k = room(sizeof(*k));
		s.dropped += !k;
		if (k) {
			COMMON(k);
			k->name = w->name;
		}
	} else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
		CUpti_ActivityMemcpy6 *m = room(sizeof(*m));
		s.dropped += !m;
		if (m) {
			COMMON(m);
			m->copyKind = copy_kind(w->src, w->dst);
			m->srcKind = memory_kind(w->src);
			m->dstKind = memory_kind(w->dst);
			m->bytes = w->bytes;
		}
	} else {
		CUpti_ActivityMemset4 *m = room(sizeof(*m));
		s.dropped += !m;
		if (m) {
			COMMON(m);
			m->bytes = w->bytes;
		}
	}
#undef COMMON
	pthread_mutex_unlock(&lock);
}

static void on_context_destroy(CUcontext ctx)
{
	pthread_mutex_lock(&lock);
	CUpti_CallbackFunc cb = s.subscribed && s.destroy_cb_on ? s.cb : NULL;
	void *user = s.cb_user;
	pthread_mutex_unlock(&lock);
	if (!cb)
		return;
	CUpti_ResourceData d;
	memset(&d, 0, sizeof(d));
	d.context = ctx;
	__atomic_store_n(&s.in_destroy, 1, __ATOMIC_RELAXED);
	cb(user, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &d);
	__atomic_store_n(&s.in_destroy, 0, __ATOMIC_RELAXED);
}

/* How long the work queued on a stream (or every stream of a device)
 * still runs, on the timeline on_work keeps. */
static unsigned long long on_pending(unsigned long long stream, int device)
{
	uint64_t end = 0;
	pthread_mutex_lock(&lock);
	double r = per_ns();
	uint64_t t = now();
	for (int i = 0; i < s.nstreams; i++)
		if (s.streams[i].device == device &&
		    (stream == FAKECUDA_ALL_STREAMS || s.streams[i].handle == stream) && s.streams[i].busy > end)
			end = s.streams[i].busy;
	pthread_mutex_unlock(&lock);
	return end > t ? (unsigned long long)((double)(end - t) / r) : 0;
}

static const struct fakecuda_tool tool = { on_enter, on_exit_, on_work, on_context_destroy, on_pending };

static void attach(void)
{
	void (*set)(const struct fakecuda_tool *) =
		(void (*)(const struct fakecuda_tool *))dlsym(RTLD_DEFAULT, "fakecuda_set_tool");
	if (set)
		set(&tool);
}

/* ---- handing buffers back -------------------------------------------------------- */

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec);

/* Hands back the buffers full when it is called, and (all) the one being
 * filled then, as CUPTI's flush does: not the buffers the program fills
 * meanwhile (taking those too, a flush could go on for as long as the
 * program kept launching: under ThreadSanitizer one took 8 s, handing
 * back a fresh buffer per record). */
static void hand_back(int all)
{
	pthread_mutex_lock(&deliver);
	pthread_mutex_lock(&lock);
	int full = s.nfull;
	uint8_t *current = all ? s.buf : NULL;
	pthread_mutex_unlock(&lock);
	for (;;) {
		pthread_mutex_lock(&lock);
		struct full f = { NULL, 0, 0 };
		if (full && s.nfull) {
			full--;
			f = s.full[0];
			memmove(&s.full[0], &s.full[1], (size_t)--s.nfull * sizeof(s.full[0]));
			pthread_cond_broadcast(&taken);
		} else if (current && s.buf == current) {
			f = (struct full){ s.buf, s.size, s.used };
			s.buf = NULL;
			current = NULL;
		}
		CUpti_BuffersCallbackCompleteFunc complete = s.complete;
		pthread_mutex_unlock(&lock);
		if (!f.buf)
			break;
		if (__atomic_load_n(&s.in_destroy, __ATOMIC_RELAXED)) {
			CUpti_Activity *a = NULL;
			while (cuptiActivityGetNextRecord(f.buf, f.used, &a) == CUPTI_SUCCESS)
				__atomic_add_fetch(&s.at_destroy, 1, __ATOMIC_RELAXED);
		}
		complete(NULL, 0, f.buf, f.size, f.used);
	}
	pthread_mutex_unlock(&deliver);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!s.nfull)
			pthread_cond_wait(&wake, &lock);
		pthread_mutex_unlock(&lock);
		hand_back(0);
	}
	return NULL;
}

static __attribute__((destructor)) void stats(void)
{
	const char *v = getenv("FAKECUPTI_STATS");
	if (v && *v == '1')
		fprintf(stderr, "fakecupti: %lu callbacks, %lu records, %lu handed back at context destroy, "
			"%lu unforced flushes\n", s.callbacks, s.records, s.at_destroy, s.flushes);
}

/* ---- the API ------------------------------------------------------------------------ */

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *user)
{
	const char *held = getenv("FAKECUPTI_HELD");
	pthread_mutex_lock(&lock);
	if (s.subscribed || (held && *held == '1')) {
		pthread_mutex_unlock(&lock);
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
	s.subscribed = 1;
	s.cb = cb;
	s.cb_user = user;
	*sub = (CUpti_SubscriberHandle)&s;
	pthread_mutex_unlock(&lock);
	attach();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
	(void)sub;
	pthread_mutex_lock(&lock);
	s.subscribed = 0;
	memset(s.cb_on, 0, sizeof(s.cb_on));
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t id, const char **name)
{
	if (d != CUPTI_CB_DOMAIN_DRIVER_API || id == 0 || id > NAPI || !name)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = api_names[id - 1];
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain d,
				       CUpti_CallbackId id)
{
	if (sub == (CUpti_SubscriberHandle)&s && d == CUPTI_CB_DOMAIN_RESOURCE &&
	    id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		pthread_mutex_lock(&lock);
		s.destroy_cb_on = enable != 0;
		pthread_mutex_unlock(&lock);
		return CUPTI_SUCCESS;
	}
	if (sub != (CUpti_SubscriberHandle)&s || d != CUPTI_CB_DOMAIN_DRIVER_API || id == 0 || id > NAPI)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&lock);
	s.cb_on[id] = enable != 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain d)
{
	if (sub != (CUpti_SubscriberHandle)&s || d != CUPTI_CB_DOMAIN_DRIVER_API)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&lock);
	memset(s.cb_on, enable != 0, sizeof(s.cb_on));
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
	__atomic_store_n(&s.ts, f, __ATOMIC_RELEASE);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
						  CUpti_BuffersCallbackCompleteFunc complete)
{
	if (!request || !complete)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&lock);
	s.request = request;
	s.complete = complete;
	int start = !s.worker;
	s.worker = 1;
	worker_pid = getpid();
	pthread_mutex_unlock(&lock);
	if (start) { /* like a library's thread: it takes none of the program's signals */
		pthread_t t;
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (pthread_create(&t, NULL, worker, NULL) == 0)
			pthread_detach(t);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	attach();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= 64)
		return CUPTI_ERROR_NOT_COMPATIBLE;
	pthread_mutex_lock(&lock);
	s.kind_on[kind] = 1;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

/* CUPTI's period returns only full buffers, which the worker returns at
 * once anyway: nothing to keep. */
EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t ms)
{
	(void)ms;
	return CUPTI_SUCCESS;
}

/* FAKECUPTI_UNFINISHED: the last n records of the buffer being filled lose
 * their times (SIZE_MAX: all of them), but those FAKECUPTI_FAULT left
 * without an end. */
static void unfinish(size_t n)
{
	size_t total = 0, i = 0;
	CUpti_Activity *a = NULL;
	pthread_mutex_lock(&lock);
	while (s.buf && cuptiActivityGetNextRecord(s.buf, s.used, &a) == CUPTI_SUCCESS)
		total++;
	size_t keep = n < total ? total - n : 0; /* the first ones keep their times */
	a = NULL;
	while (s.buf && cuptiActivityGetNextRecord(s.buf, s.used, &a) == CUPTI_SUCCESS) {
		if (i++ < keep)
			continue;
		if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && ((CUpti_ActivityKernel10 *)a)->start &&
		    !((CUpti_ActivityKernel10 *)a)->end)
			continue;
#define NO_TIMES(T) (((T *)a)->start = ((T *)a)->end = 0)
		if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			NO_TIMES(CUpti_ActivityKernel10);
		else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY)
			NO_TIMES(CUpti_ActivityMemcpy6);
		else
			NO_TIMES(CUpti_ActivityMemset4);
#undef NO_TIMES
	}
	pthread_mutex_unlock(&lock);
}

/* FAKECUPTI_FAULT: the last n kernel records of the buffer being filled
 * started and never ended. */
static void fault(size_t n)
{
	size_t total = 0, i = 0;
	CUpti_Activity *a = NULL;
	pthread_mutex_lock(&lock);
	while (s.buf && cuptiActivityGetNextRecord(s.buf, s.used, &a) == CUPTI_SUCCESS)
		total += a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	a = NULL;
	while (s.buf && cuptiActivityGetNextRecord(s.buf, s.used, &a) == CUPTI_SUCCESS)
		if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && i++ + n >= total)
			((CUpti_ActivityKernel10 *)a)->end = 0;
	pthread_mutex_unlock(&lock);
}

/* The driver double's sticky error (a kernel's device-side assert), found
 * as the tool hook is: 0 without it. */
static int sticky_error(void)
{
	int (*get)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "fakecuda_sticky_error");
	return get ? get() : 0;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	/* CUPTI is not fork-safe: a child that no fork handler reset has the
	 * parent's state but not its threads, and a flush there may wait for
	 * ever. The double says so and ends the child, so that tests see it. */
	if (worker_pid && getpid() != worker_pid) {
		static const char msg[] = "fakecupti: cuptiActivityFlushAll in a forked child, whose CUPTI threads "
					  "are not there\n";
		(void)!write(2, msg, sizeof(msg) - 1);
		_exit(98);
	}
	const char *fv = getenv("FAKECUPTI_FAULT");
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && fv && atol(fv) > 0)
		fault((size_t)atol(fv));
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && sticky_error())
		unfinish(SIZE_MAX);
	const char *v = getenv("FAKECUPTI_UNFINISHED");
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && v && atol(v) > 0)
		unfinish((size_t)atol(v));
	if (!(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED))
		__atomic_fetch_add(&s.flushes, 1, __ATOMIC_RELAXED);
	const char *slow = getenv("FAKECUPTI_FORCED_MS"); /* a forced flush that takes this long */
	if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && slow && atol(slow) > 0) {
		struct timespec t = { atol(slow) / 1000, atol(slow) % 1000 * 1000000L };
		nanosleep(&t, NULL);
	}
	hand_back(1);
	return CUPTI_SUCCESS;
}

static size_t record_size(const CUpti_Activity *a)
{
	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
	default: return 0;
	}
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
	uint8_t *p = buf;
	if (*rec) {
		size_t n = record_size(*rec);
		if (!n)
			return CUPTI_ERROR_INVALID_KIND;
		p = (uint8_t *)*rec + ((n + 7) & ~(size_t)7);
	}
	if (p >= buf + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*rec = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	(void)ctx; (void)stream; /* one queue, as CUPTI's global one */
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&lock);
	*dropped = s.dropped;
	s.dropped = 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **str)
{
	*str = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS"
	       : r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
								     : "CUPTI_ERROR_UNKNOWN";
	return CUPTI_SUCCESS;
}
