/* SPDX-License-Identifier: MIT */
/*
 * GPU time per phase without CUPTI (GPUSPY_CUPTI=events): CUDA events
 * recorded only at phase boundaries, on the streams each phase used.
 *
 * A phase interval runs from one phase change to the next. The first
 * recorded launch, copy or memset of an interval on a stream records a
 * start event on that stream just before the call; the next phase change
 * records an end event on every stream that has a start. The GPU time
 * between the two is the interval's span on that stream: from when the
 * stream reached the phase's first work to when it finished its last, gaps
 * inside included. Pairs are read back without waiting at a phase change
 * once DRAIN_PAIRS were added or DRAIN_NS passed since the last read-back,
 * and at exit with a bounded wait, and written as gpu_span records named
 * by the phase the interval belonged to.
 *
 * Cost: per stream and interval two cuEventRecord (events are reused) and
 * one cuEventElapsedTime; per call a scan of the streams seen. No CUPTI, so
 * none of its per-launch cost. On the H200 cuEventQuery costs more than a
 * record (1.3-1.9 us against 0.9-1.4 us, bench/gpu/event_costs.sh), so a
 * read-back queries each stream's newest end event first: events on a
 * stream complete in order, so a finished one vouches for every older one
 * (a binary search finds the newest finished one when the GPU is behind).
 *
 * Not covered: the per-thread default stream (its handle names a
 * different stream on each thread) and streams being captured into a
 * graph. Our driver calls run in relaxed stream-capture mode, which only
 * lets them make calls that global mode forbids on other threads; it does
 * not make the legacy stream usable while a blocking stream captures: any
 * work there, an event record included, depends implicitly on the
 * capturing stream and invalidates its capture. So no end event goes on
 * the legacy stream while a capture is open anywhere in the process
 * (gs_g.capturing): that interval is dropped and counted as lost. A start
 * event there is recorded just before the program's own call on the
 * legacy stream, which such a capture forbids as well.
 *
 * A stream destroyed (cuStreamDestroy, which the runtime's
 * cudaStreamDestroy calls through the driver) gets its end event just
 * before, if the interval used it: no work can follow on it, so the span is
 * the one the phase change would have measured. Its slot is then free for
 * another stream; the handle is never touched again, even if the driver
 * hands it out once more for a new stream. Pairs already queued keep their
 * events, which outlive the stream.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "gs.h"
#include "gpu_timing.h"
#include "symbols.h"
#include "writer.h"
#include "module.h"

#define SLOTS 64      /* streams followed */
#define PENDING 4096  /* event pairs waiting for the GPU */
#define POOL 256      /* idle events kept for reuse */
#define DRAIN_PAIRS 64                 /* read back once this many pairs wait */
#define DRAIN_NS 100000000ull          /* or this long after the last read-back */

#define FREE_SLOT UINT64_MAX /* a slot's stream once destroyed: no handle is */

struct slot {
	uint64_t stream;    /* handle; 0 = the legacy stream of ctx; FREE_SLOT (atomic) */
	CUcontext ctx;
	uint32_t started;   /* interval of the start event; 0 none (atomic) */
	uint32_t life;      /* which stream the slot holds: new for each (ev.lives) */
	CUevent start;      /* NULL: nothing to time in that interval */
	uint64_t host_start;
	uint32_t phase;
	int16_t device;
};

struct pair {
	CUevent start, end;
	CUcontext ctx;
	uint64_t stream, host_start, host_end;
	uint32_t phase;
	uint32_t life;       /* its stream's: events of one life complete in order */
	int16_t device;
	uint8_t done;        /* known finished (a newer end event on its stream is) */
};

static struct {
	pthread_mutex_t lock;
	uint32_t interval;   /* the current interval, from 1 (atomic) */
	uint32_t open[64];   /* the open phases, innermost last (as the reader) */
	uint32_t depth;
	uint32_t nslots;     /* published with release after a slot is filled */
	uint32_t lives;      /* streams given a slot so far */
	uint32_t nfree;      /* slots freed by a stream's destruction (atomic) */
	struct slot s[SLOTS];
	struct pair q[PENDING];
	uint32_t head, n;
	uint64_t drained_at; /* gs_mono_ns of the last read-back */
	uint32_t added;      /* pairs queued since */
	struct { CUcontext ctx; CUevent e; } pool[POOL];
	uint32_t npool;
	uint64_t lost;       /* pairs that could not be recorded or read */
	int full_warned;
} ev = { .lock = PTHREAD_MUTEX_INITIALIZER, .interval = 1 };
GS_FORK_LOCK(events, ev.lock);

static struct {
	CUresult (*get_ctx)(CUcontext *);
	CUresult (*push)(CUcontext);
	CUresult (*pop)(CUcontext *);
	CUresult (*create)(CUevent *, unsigned);
	CUresult (*destroy)(CUevent);
	CUresult (*record)(CUevent, CUstream);
	CUresult (*query)(CUevent);
	CUresult (*elapsed)(float *, CUevent, CUevent);
	CUresult (*capturing)(CUstream, CUstreamCaptureStatus *);
	CUresult (*capture_mode)(CUstreamCaptureMode *);
} fn;

#define FN(field, name) (fn.field = (__typeof__(fn.field))gs_driver_fn(name))

unsigned gs_events_start(void)
{
	if (gs_g.forked)
		return GSPY_GPU_TIMING_none;
	if (!FN(get_ctx, "cuCtxGetCurrent") || !FN(push, "cuCtxPushCurrent_v2") ||
	    !FN(pop, "cuCtxPopCurrent_v2") || !FN(create, "cuEventCreate") ||
	    !FN(destroy, "cuEventDestroy_v2") || !FN(record, "cuEventRecord") ||
	    !FN(query, "cuEventQuery") || !FN(capturing, "cuStreamIsCapturing") ||
	    !FN(capture_mode, "cuThreadExchangeStreamCaptureMode") ||
	    (!FN(elapsed, "cuEventElapsedTime_v2") && !FN(elapsed, "cuEventElapsedTime"))) {
		gs_warn("GPUSPY_CUPTI=events: the CUDA driver lacks the event API; host timing only");
		return GSPY_GPU_TIMING_unavailable;
	}
	__atomic_store_n(&gs_g.events, 1, __ATOMIC_RELEASE);
	return GSPY_GPU_TIMING_events;
}

/* An idle event of ctx, or a new one (ctx is current). */
static CUevent pool_get(CUcontext ctx)
{
	for (uint32_t i = ev.npool; i-- > 0;)
		if (ev.pool[i].ctx == ctx) {
			CUevent e = ev.pool[i].e;
			ev.pool[i] = ev.pool[--ev.npool];
			return e;
		}
	CUevent e = NULL;
	return fn.create(&e, CU_EVENT_DEFAULT) == CUDA_SUCCESS ? e : NULL;
}

static void pool_put(CUcontext ctx, CUevent e)
{
	if (!e)
		return;
	if (ev.npool < POOL)
		ev.pool[ev.npool++] = (__typeof__(ev.pool[0])){ ctx, e };
	else
		fn.destroy(e);
}

/* A slot's stream and context are read without the lock (gs_events_work);
 * a freed slot is filled again under it, its context before its stream. */
static struct slot *find(uint64_t st, CUcontext ctx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (__atomic_load_n(&ev.s[i].stream, __ATOMIC_ACQUIRE) == st &&
		    (st || __atomic_load_n(&ev.s[i].ctx, __ATOMIC_RELAXED) == ctx))
			return &ev.s[i];
	return NULL;
}

/* A slot for a stream not followed yet (ev.lock): a free one, else a new
 * one; NULL when all SLOTS hold live streams. */
static struct slot *slot_new(uint64_t st, CUcontext ctx)
{
	struct slot *s = find(FREE_SLOT, NULL, ev.nslots);
	if (!s && ev.nslots == SLOTS)
		return NULL;
	int fresh = !s;
	if (fresh) {
		s = &ev.s[ev.nslots];
		memset(s, 0, sizeof(*s));
	} else {
		__atomic_fetch_sub(&ev.nfree, 1, __ATOMIC_RELAXED);
	}
	/* started is 0 (freed slots are left so): a reader that sees the
	 * new stream before it starts calls start_on, which looks again. */
	s->start = NULL;
	s->life = ++ev.lives;
	__atomic_store_n(&s->ctx, ctx, __ATOMIC_RELAXED);
	__atomic_store_n(&s->stream, st, __ATOMIC_RELEASE);
	if (fresh)
		__atomic_store_n(&ev.nslots, ev.nslots + 1, __ATOMIC_RELEASE);
	return s;
}

/* The interval's first call on this stream: its start event. */
static void start_on(uint64_t st, CUcontext ctx)
{
	pthread_mutex_lock(&ev.lock);
	uint32_t cur = ev.interval;
	struct slot *s = find(st, ctx, ev.nslots);
	if (!s && !(s = slot_new(st, ctx))) {
		if (!__atomic_exchange_n(&ev.full_warned, 1, __ATOMIC_RELAXED))
			gs_warn("GPUSPY_CUPTI=events: more than %d streams; the others are not timed", SLOTS);
		pthread_mutex_unlock(&ev.lock);
		return;
	}
	if (__atomic_load_n(&s->started, __ATOMIC_RELAXED) == cur) {
		pthread_mutex_unlock(&ev.lock);
		return;
	}
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	fn.capture_mode(&mode);
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	s->start = NULL;
	/* The legacy stream is never captured, and the program's own call on
	 * it follows at once: where a capture forbids it, it fails as ours. */
	if (!st || (fn.capturing((CUstream)st, &cs) == CUDA_SUCCESS && cs == CU_STREAM_CAPTURE_STATUS_NONE)) {
		CUevent e = pool_get(ctx);
		if (e && fn.record(e, (CUstream)st) == CUDA_SUCCESS) {
			s->start = e;
			s->host_start = gs_now();
			s->phase = ev.depth ? ev.open[ev.depth - 1] : 0;
			s->device = (int16_t)gs_current_device();
		} else {
			pool_put(ctx, e);
			ev.lost++;
		}
	}
	fn.capture_mode(&mode);
	__atomic_store_n(&s->started, cur, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ev.lock);
}

void gs_events_work(unsigned api, uint64_t st)
{
	if (st == (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD || (st == 0 && gs_api_ptds(api)) || gs_g.forked)
		return;
	if (st == (uint64_t)(uintptr_t)CU_STREAM_LEGACY)
		st = 0;
	int e = errno;
	CUcontext ctx = NULL;
	if (fn.get_ctx(&ctx) != CUDA_SUCCESS || !ctx)
		goto out;
	uint32_t cur = __atomic_load_n(&ev.interval, __ATOMIC_ACQUIRE);
	uint32_t n = __atomic_load_n(&ev.nslots, __ATOMIC_ACQUIRE);
	struct slot *s = find(st, ctx, n);
	/* A stream past the table's end is not timed (said once); a slot
	 * freed since may take it (start_on looks). */
	if (!s ? n < SLOTS || __atomic_load_n(&ev.nfree, __ATOMIC_RELAXED) ||
		 !__atomic_load_n(&ev.full_warned, __ATOMIC_RELAXED)
	       : __atomic_load_n(&s->started, __ATOMIC_ACQUIRE) != cur) {
		int cancel = gs_cancel_off(); /* driver calls under the lock */
		start_on(st, ctx);
		gs_cancel_restore(cancel);
	}
out:
	errno = e;
}

static void write_span(const struct pair *p, float ms)
{
	if (gs_writer_ready() != 0)
		return;
	struct gspy_record r;
	memset(&r, 0, sizeof(r));
	r.kind = GSPY_KIND_gpu_span;
	r.api = GSPY_API_cuda_event_span;
	r.start = p->host_start;
	r.end = p->host_end;
	r.stream = p->stream;
	r.device = p->device;
	r.name_id = p->phase;
	r.u.span.gpu_ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
	gs_commit(&gs_tls, &r);
}

/* Mark the pending pairs that have finished. Events on a stream complete
 * in order, so per stream a binary search over its pending end events
 * (newest first: usually all are done) finds them in a few queries. */
static void vouch(void)
{
	static uint16_t idx[PENDING]; /* one stream's pairs, oldest first (ev.lock) */
	uint32_t keys[SLOTS]; /* the streams' lives: a handle may name two in turn */
	uint32_t nkeys = 0;
	for (uint32_t k = 0; k < ev.n; k++) {
		const struct pair *p = &ev.q[(ev.head + k) % PENDING];
		uint32_t i = 0;
		while (i < nkeys && keys[i] != p->life)
			i++;
		if (i == nkeys && nkeys < SLOTS)
			keys[nkeys++] = p->life;
	}
	for (uint32_t i = 0; i < nkeys; i++) {
		int m = 0;
		for (uint32_t k = 0; k < ev.n; k++) {
			uint32_t j = (ev.head + k) % PENDING;
			if (ev.q[j].life == keys[i])
				idx[m++] = (uint16_t)j;
		}
		/* The newest done pair: idx[lo] is done, idx[hi] is not. "Done"
		 * includes failed: the read-back then counts the pair lost. */
		int lo = -1, hi = m;
		if (fn.query(ev.q[idx[m - 1]].end) != CUDA_ERROR_NOT_READY)
			lo = m - 1;
		else
			hi = m - 1;
		while (hi - lo > 1) {
			int mid = lo + (hi - lo) / 2;
			if (fn.query(ev.q[idx[mid]].end) != CUDA_ERROR_NOT_READY)
				lo = mid;
			else
				hi = mid;
		}
		for (int k = 0; k <= lo; k++)
			ev.q[idx[k]].done = 1;
	}
}

/* Read back finished pairs, oldest first: without waiting, only once
 * DRAIN_PAIRS were added or DRAIN_NS passed since the last time; with a
 * deadline, waiting until it for the GPU to finish them. */
static void drain(uint64_t deadline_ns)
{
	if (!ev.n)
		return;
	uint64_t t = gs_mono_ns();
	if (!deadline_ns && ev.added < DRAIN_PAIRS && t - ev.drained_at < DRAIN_NS)
		return;
	ev.drained_at = t;
	ev.added = 0;
	vouch();
	while (ev.n) {
		struct pair *p = &ev.q[ev.head];
		if (!p->done) {
			if (!deadline_ns)
				return;
			if (fn.query(p->end) == CUDA_ERROR_NOT_READY) {
				if (gs_mono_ns() > deadline_ns)
					return;
				struct timespec ts = { 0, 200000 };
				nanosleep(&ts, NULL);
				continue;
			}
		}
		float ms = 0;
		if (fn.elapsed(&ms, p->start, p->end) == CUDA_SUCCESS)
			write_span(p, ms);
		else
			ev.lost++;
		pool_put(p->ctx, p->start);
		pool_put(p->ctx, p->end);
		ev.head = (ev.head + 1) % PENDING;
		ev.n--;
	}
}

/* The end event of slot s's interval, queued with its start (ev.lock, the
 * thread in relaxed capture mode, here its current context). */
static void end_on(struct slot *s, CUcontext here, uint64_t now)
{
	int pushed = s->ctx != here && fn.push(s->ctx) == CUDA_SUCCESS;
	CUevent e = (s->ctx == here || pushed) ? pool_get(s->ctx) : NULL;
	/* A stream that began a graph capture since: not ours to touch. The
	 * legacy stream, while any capture is open: it may be of a blocking
	 * stream, which our record would invalidate. */
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	if (s->stream ? fn.capturing((CUstream)s->stream, &cs) != CUDA_SUCCESS
		      : __atomic_load_n(&gs_g.capturing, __ATOMIC_RELAXED) > 0)
		cs = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
	if (e && ev.n < PENDING && cs == CU_STREAM_CAPTURE_STATUS_NONE &&
	    fn.record(e, (CUstream)s->stream) == CUDA_SUCCESS) {
		ev.q[(ev.head + ev.n++) % PENDING] = (struct pair){
			s->start, e, s->ctx, s->stream, s->host_start, now, s->phase, s->life, s->device, 0
		};
		ev.added++;
	} else {
		pool_put(s->ctx, s->start);
		pool_put(s->ctx, e);
		ev.lost++;
	}
	if (pushed) {
		CUcontext c = NULL;
		fn.pop(&c);
	}
	s->start = NULL;
}

/* Close the current interval: an end event on each stream it used. */
static void close_interval(uint64_t deadline_ns)
{
	uint32_t old = ev.interval;
	__atomic_store_n(&ev.interval, old + 1, __ATOMIC_RELEASE);
	uint64_t now = gs_now();
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	fn.capture_mode(&mode);
	CUcontext here = NULL;
	fn.get_ctx(&here);
	for (uint32_t i = 0; i < ev.nslots; i++) {
		struct slot *s = &ev.s[i];
		if (__atomic_load_n(&s->started, __ATOMIC_RELAXED) == old && s->start)
			end_on(s, here, now);
	}
	drain(deadline_ns);
	fn.capture_mode(&mode);
}

/* Stream st is about to be destroyed (cuStreamDestroy): the interval's
 * end on it now, while it lives, and its slot freed. */
void gs_events_stream_gone(uint64_t st)
{
	if (!st || st == (uint64_t)(uintptr_t)CU_STREAM_LEGACY || st == (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD ||
	    !__atomic_load_n(&gs_g.events, __ATOMIC_ACQUIRE) || gs_g.forked)
		return;
	int e = errno;
	int cancel = gs_cancel_off(); /* driver calls under the lock */
	pthread_mutex_lock(&ev.lock);
	struct slot *s = find(st, NULL, ev.nslots);
	if (s) {
		if (__atomic_load_n(&s->started, __ATOMIC_RELAXED) == ev.interval && s->start) {
			CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
			fn.capture_mode(&mode);
			CUcontext here = NULL;
			fn.get_ctx(&here);
			end_on(s, here, gs_now());
			fn.capture_mode(&mode);
		}
		s->start = NULL;
		__atomic_store_n(&s->started, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->stream, FREE_SLOT, __ATOMIC_RELEASE);
		__atomic_fetch_add(&ev.nfree, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&ev.lock);
	gs_cancel_restore(cancel);
	errno = e;
}

void gs_events_phase(unsigned kind, uint32_t id)
{
	if (!__atomic_load_n(&gs_g.events, __ATOMIC_ACQUIRE) || gs_g.forked)
		return;
	int e = errno;
	int cancel = gs_cancel_off(); /* driver calls under the lock */
	pthread_mutex_lock(&ev.lock);
	if (kind == GSPY_KIND_phase_begin) {
		if (ev.depth < 64)
			ev.open[ev.depth++] = id;
	} else if (ev.depth) {
		/* The innermost open phase of that name ends (any, if unnamed). */
		uint32_t i = ev.depth - 1;
		while (i > 0 && id && ev.open[i] != id)
			i--;
		if (!id || ev.open[i] == id) {
			memmove(&ev.open[i], &ev.open[i + 1], (ev.depth - i - 1) * sizeof(ev.open[0]));
			ev.depth--;
		}
	}
	close_interval(0);
	pthread_mutex_unlock(&ev.lock);
	gs_cancel_restore(cancel);
	errno = e;
}

/* At exit, before the runtime tears the contexts down: close the open
 * interval and wait up to a second for the GPU to finish it. */
void gs_events_exit(void)
{
	if (!__atomic_load_n(&gs_g.events, __ATOMIC_ACQUIRE) || gs_g.forked)
		return;
	int e = errno;
	int cancel = gs_cancel_off(); /* driver calls and sleeps under the lock */
	pthread_mutex_lock(&ev.lock);
	close_interval(gs_mono_ns() + 1000000000ull);
	uint64_t lost = ev.lost + ev.n;
	pthread_mutex_unlock(&ev.lock);
	gs_cancel_restore(cancel);
	if (lost)
		gs_warn("GPUSPY_CUPTI=events: %llu phase intervals could not be timed on the GPU",
			(unsigned long long)lost);
	errno = e;
}

/* A fork child cannot use its parent's CUDA contexts. */
static void events_forked(void)
{
	pthread_mutex_init(&ev.lock, NULL);
	ev.nslots = ev.n = ev.head = ev.npool = ev.depth = ev.lives = ev.nfree = 0;
	ev.drained_at = 0;
	ev.added = 0;
	ev.interval = 1;
	ev.lost = 0;
}

GS_MODULE(events, 100, .forked = events_forked);
