/* SPDX-License-Identifier: MIT */
/*
 * The replay (replay.h): the steady-state steps rebuilt from their calls
 * and GPU records and run again with one change made, by CUDA's ordering
 * rules. The host goes through its calls in order, each gap between two
 * calls kept as the program's own work; a launch's GPU work starts once
 * the launch is made and its stream is free (or as much before that as it
 * started before its stream's last work ended in the run), and lasts as
 * long as it did;
 * a call that waits (a synchronize, a blocking copy, a free) waits for
 * its stream (or all of them) and then costs what it cost beyond its wait.
 * A change rewrites the calls it touches and nothing else: GPU work that
 * stays keeps its duration, so a saving never counts work the change
 * cannot give back, and the replayed step is never negative.
 */
#include <stdlib.h>
#include <string.h>

#include "report/diag.h"
#include "report/replay.h"
#include "gpuspy/format.h"

#define MIB (1ull << 20)
#define WAIT_COST_NS 5000 /* a wait that finds nothing to wait for (a synchronize's own cost) */

/* Streams are keyed with their device: two devices' default streams have
 * one handle (0, or cudaStreamLegacy's 1, cudaStreamPerThread's 2), and
 * CUPTI numbers each context's streams apart. Another stream's handle is
 * the process's own, whichever device is current when it is named. The
 * tables grow as streams are seen (PyTorch's pool alone holds 32 a
 * priority a device); should memory run out, the rest share the first
 * stream, and their waits err long. */
struct streams {
	uint64_t *handle, *cupti; /* a call's stream handle, its GPU records' id */
	int16_t *hdev, *cdev;     /* the call's device, the records' */
	int nmap;
	uint64_t *id;
	int16_t *dev;
	uint64_t *free;     /* replay: when its queued work ends */
	uint64_t *began;    /* replay: when the last work queued on it began */
	uint64_t *recorded; /* the run: when the work launched so far ended */
	uint8_t *blind;     /* work was launched on it whose GPU record is missing */
	int n, cap; /* each table's room */
};

/* Array f of s grown to cap elements; ok cleared when memory ran out
 * (the array then as it was). */
#define GROW(s, f, cap, ok)                                                  \
	do {                                                                 \
		__typeof__((s)->f) q_ = realloc((s)->f, sizeof(*(s)->f) * (size_t)(cap)); \
		if (q_)                                                      \
			(s)->f = q_;                                         \
		else                                                         \
			(ok) = 0;                                            \
	} while (0)

/* Both tables grown to twice their room: 0 when memory ran out. */
static int more_room(struct streams *s)
{
	int cap = s->cap ? 2 * s->cap : 16, ok = 1;
	GROW(s, handle, cap, ok);
	GROW(s, cupti, cap, ok);
	GROW(s, hdev, cap, ok);
	GROW(s, cdev, cap, ok);
	GROW(s, id, cap, ok);
	GROW(s, dev, cap, ok);
	GROW(s, free, cap, ok);
	GROW(s, began, cap, ok);
	GROW(s, recorded, cap, ok);
	GROW(s, blind, cap, ok);
	if (ok)
		s->cap = cap;
	return ok;
}

static void drop_streams(struct streams *s)
{
	free(s->handle), free(s->cupti), free(s->hdev), free(s->cdev);
	free(s->id), free(s->dev), free(s->free), free(s->began), free(s->recorded), free(s->blind);
}

static int stream_at(struct streams *s, int16_t dev, uint64_t id)
{
	for (int i = 0; i < s->n; i++)
		if (s->id[i] == id && s->dev[i] == dev)
			return i;
	if (s->n == s->cap && !more_room(s))
		return 0;
	s->id[s->n] = id;
	s->dev[s->n] = dev;
	s->free[s->n] = s->recorded[s->n] = s->began[s->n] = 0;
	s->blind[s->n] = 0;
	return s->n++;
}

/* The latest of v over the streams of device dev (-1: every device's; a
 * stream of no known device is every device's). */
static uint64_t latest(const struct streams *s, const uint64_t *v, int dev)
{
	uint64_t m = 0;
	for (int i = 0; i < s->n; i++)
		if (v[i] > m && (dev < 0 || s->dev[i] == dev || s->dev[i] < 0))
			m = v[i];
	return m;
}

/* The GPU records' stream of a call's stream handle (the two differ:
 * CUPTI numbers streams, a call names them by handle): learned from the
 * calls that launched work; -1 when not known (then: all streams). */
static int same_handle(const struct streams *s, int i, uint64_t handle, int16_t dev)
{
	return s->handle[i] == handle && (handle > 2 || s->hdev[i] == dev);
}

static int call_stream(struct streams *s, const struct gs_item *c)
{
	for (int i = 0; i < s->nmap; i++)
		if (same_handle(s, i, c->stream, c->device))
			return stream_at(s, s->cdev[i], s->cupti[i]);
	/* A default stream's, its device not known: the one stream of that
	 * handle, if only one device's was seen (else all of them). */
	int found = -1;
	for (int i = 0; c->device < 0 && i < s->nmap; i++)
		if (s->handle[i] == c->stream) {
			if (found >= 0 && (s->cdev[i] != s->cdev[found] || s->cupti[i] != s->cupti[found]))
				return -1;
			found = i;
		}
	return found < 0 ? -1 : stream_at(s, s->cdev[found], s->cupti[found]);
}

static void learn_stream(struct streams *s, int16_t dev, uint64_t handle, int16_t gdev, uint64_t cupti)
{
	for (int i = 0; i < s->nmap; i++)
		if (same_handle(s, i, handle, dev))
			return;
	if (s->nmap < s->cap || more_room(s)) {
		s->handle[s->nmap] = handle;
		s->hdev[s->nmap] = dev;
		s->cdev[s->nmap] = gdev;
		s->cupti[s->nmap++] = cupti;
	}
}

/* The device a device-wide wait covers: an event's is not recorded
 * (the caller's current device need not be its), so all (-1). */
static int wide_device(const struct gs_item *c)
{
	return c->api == GSPY_API_cuEventSynchronize || c->api == GSPY_API_cudaEventSynchronize ? -1 : c->device;
}

static int device_wide(const struct gs_item *c)
{
	switch (c->api) {
	case GSPY_API_cuCtxSynchronize:
	case GSPY_API_cuCtxSynchronize_v2:
	case GSPY_API_cudaDeviceSynchronize:
	case GSPY_API_cuEventSynchronize: /* the event's stream is not recorded: all of them */
	case GSPY_API_cudaEventSynchronize:
	case GSPY_API_cuMemFree_v2:       /* a free synchronizes the device */
	case GSPY_API_cudaFree:
	case GSPY_API_cuMemFreeHost:
	case GSPY_API_cudaFreeHost:
		return 1;
	}
	return 0;
}

/* A copy between the device and host memory that is not pinned (the
 * host side's kind is unknown for memory gpuspy saw no allocation of:
 * malloc's, a static buffer's): the driver stages it. */
static int pageable(const struct gs_item *c)
{
	return (c->dir == GSPY_DIR_h2d || c->dir == GSPY_DIR_d2h) && c->mem != GSPY_MEM_pinned;
}

int gs_replay_waits(const struct gs_item *c)
{
	if (c->what != GS_IT_CALL)
		return 0;
	if (c->kind == GSPY_KIND_sync)
		return c->api != GSPY_API_cuStreamWaitEvent && c->api != GSPY_API_cuStreamWaitEvent_ptsz &&
		       c->api != GSPY_API_cudaStreamWaitEvent && c->api != GSPY_API_cudaStreamWaitEvent_ptsz;
	if (c->kind == GSPY_KIND_copy)
		return !c->async || pageable(c); /* a pageable copy is staged by the host */
	if (c->kind == GSPY_KIND_free)
		return device_wide(c);
	return 0;
}

int gs_replay_pinnable(const struct gs_item *c)
{
	return c->what == GS_IT_CALL && c->kind == GSPY_KIND_copy && pageable(c) &&
	       (c->dir == GSPY_DIR_h2d || c->dir == GSPY_DIR_d2h) && c->bytes >= GS_PIN_BYTES;
}

int gs_replay_poolable(const struct gs_item *c)
{
	return c->what == GS_IT_CALL && (c->kind == GSPY_KIND_alloc || c->kind == GSPY_KIND_free) &&
	       (c->mem == GSPY_MEM_device || c->mem == GSPY_MEM_managed); /* (allocation_churn's memory) */
}

int gs_replay_droppable_wait(const struct gs_item *c)
{
	if (!gs_replay_waits(c))
		return 0;
	if (c->kind == GSPY_KIND_sync)
		return 1;
	/* A copy back of a few values (.item(), .cpu() of a scalar): its cost
	 * is the wait for the work before it, not the bytes. */
	return c->kind == GSPY_KIND_copy && c->dir == GSPY_DIR_d2h && c->bytes < GS_PIN_BYTES;
}

static int capturable(const struct gs_item *c)
{
	return c->kind == GSPY_KIND_launch || c->kind == GSPY_KIND_memset ||
	       (c->kind == GSPY_KIND_copy && !gs_replay_waits(c));
}

struct sim {
	const struct gs_replay *rp;
	enum gs_change ch;
	struct streams s;
	const struct gs_item **gpu; /* the window's GPU records, by correlation id */
	size_t ngpu;
	uint64_t h;        /* the replay's host clock */
	uint64_t prev_end; /* the run's: the latest end of a call so far */
	uint64_t walk_end; /* the latest end of a call's stack walk (after the call's end: in
			    * the gaps after it, whatever other threads' calls end meanwhile) */
	int prev_capturable, graph_open; /* GS_CH_GRAPH: the last call; a graph launched this step */
	int blind_unknown; /* work without a record was launched before any stream was known */
	uint32_t prev_phase;  /* the last call's phase */
	uint64_t data_from;   /* when the data phase last began (the run's clock) */
	uint64_t handoff_at;  /* the data phase whose batch's handoff is being kept (its data_from), */
	uint64_t handoff_left; /* and what is left of it to keep */
	size_t step;       /* the step the host is in (rp->bounds) */
	size_t counted, before; /* the window's steps that are not odd (rp->odd), and those before step */
	uint64_t step_h;   /* the replay's clock when it began (an odd step: when its own work could) */
	uint64_t odd_ns;   /* the odd steps' replayed time */
	int pinned_stream; /* GS_CH_PIN: the last call of thread pinned_tid pinned a copy on it (-1: none) */
	uint32_t pinned_tid;
};

static int by_corr(const void *a, const void *b)
{
	const struct gs_item *x = *(const struct gs_item *const *)a, *y = *(const struct gs_item *const *)b;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* The GPU records a call launched: [*first, return). */
static size_t linked(const struct sim *m, uint64_t corr, size_t *first)
{
	size_t lo = 0, hi = m->ngpu;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->gpu[mid]->corr < corr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	while (corr && hi < m->ngpu && m->gpu[hi]->corr == corr)
		hi++;
	return corr ? hi : lo;
}

/* The call's GPU work queued at the replay's time t: each record on its
 * stream after what is there (or as much before that ends as it ran
 * beside it in the run, but not before the last work queued there
 * began), for as long as it ran (or, when the copy is now from pinned
 * memory, for its bytes at the pinned bandwidth). */
static uint64_t queue_gpu(struct sim *m, const struct gs_item *c, uint64_t t, int pinned)
{
	size_t k, end = linked(m, c->corr, &k);
	uint64_t done = 0; /* when the last of it ends */
	for (; k < end; k++) {
		const struct gs_item *g = m->gpu[k];
		int s = stream_at(&m->s, g->device, g->stream);
		uint64_t d = g->end - g->start; /* (steps.c keeps end >= start) */
		if (pinned && m->rp->pinned_bps > 0) { /* a forged rate of near nothing: capped, not undefined */
			double x = (double)g->bytes / m->rp->pinned_bps * 1e9;
			d = x < 1e18 ? (uint64_t)x : (uint64_t)1e18;
		}
		uint64_t ahead = m->rp->ahead ? m->rp->ahead[g - m->rp->it] : 0;
		uint64_t ready = m->s.free[s] > ahead ? m->s.free[s] - ahead : 0;
		if (ready < m->s.began[s])
			ready = m->s.began[s];
		if (m->ch == GS_CH_GRAPH && m->graph_open)
			ready += m->rp->node_gap_ns;
		uint64_t st = t > ready ? t : ready;
		m->s.began[s] = st;
		if (st + d > m->s.free[s])
			m->s.free[s] = st + d;
		if (st + d > done)
			done = st + d;
	}
	return done;
}

/* The stream a wait waits for; -1: all of its device's (or every one's). */
static int wait_stream(struct sim *m, const struct gs_item *c)
{
	return device_wide(c) ? -1 : call_stream(&m->s, c);
}

/* What the run shows the call waited for: the part of it before the GPU
 * work launched before it was done, on its stream, and for a copy, on
 * another stream whose work ended after that and before the copy's GPU
 * record began (the legacy default stream waits for the others; an event
 * orders two). The rest is the call's own, also before its GPU record
 * begins: a pageable copy's staging of its first chunk, the driver's
 * latency. Counted as waiting, that cost the what-if suite's C program
 * 0.12-0.32 ms a step: its replayed slow step fell 1.2-1.8% under its
 * untraced one in the three sets whose processes ran alike, and comes
 * 0.1-0.8% over it as the call's own. *deps: when the other streams it
 * waited for are free in the replay (0: none), which the copy's GPU work
 * waits for too, however the change makes it. */
static uint64_t waited(struct sim *m, const struct gs_item *c, uint64_t *deps)
{
	int s = wait_stream(m, c);
	uint64_t done = s < 0 ? latest(&m->s, m->s.recorded, wide_device(c)) : m->s.recorded[s];
	*deps = 0;
	if (c->kind == GSPY_KIND_copy) {
		size_t k, end = linked(m, c->corr, &k);
		uint64_t first = UINT64_MAX, on_stream = done;
		for (; k < end; k++)
			if (m->gpu[k]->start < first)
				first = m->gpu[k]->start;
		for (int t = 0; first != UINT64_MAX && t < m->s.n; t++)
			if (m->s.recorded[t] > on_stream && m->s.recorded[t] <= first) { /* any device's: an event orders two */
				if (m->s.recorded[t] > done)
					done = m->s.recorded[t];
				if (m->s.free[t] > *deps)
					*deps = m->s.free[t];
			}
	}
	uint64_t dur = c->end - c->start;
	uint64_t w = done > c->start ? done - c->start : 0;
	return w < dur ? w : dur;
}

static void note_recorded(struct sim *m, const struct gs_item *c)
{
	size_t k, end = linked(m, c->corr, &k);
	for (; k < end; k++) {
		int s = stream_at(&m->s, m->gpu[k]->device, m->gpu[k]->stream);
		if (m->gpu[k]->end > m->s.recorded[s])
			m->s.recorded[s] = m->gpu[k]->end;
	}
}

int gs_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t gs_replay_median_launch(const struct gs_item *v, size_t n, uint64_t ta, uint64_t tb)
{
	uint64_t *d = malloc((n ? n : 1) * sizeof(*d)), x = 0;
	size_t m = 0;
	for (size_t i = 0; d && i < n; i++)
		if (v[i].what == GS_IT_CALL && v[i].kind == GSPY_KIND_launch && v[i].start >= ta && v[i].start < tb &&
		    !gspy_api_graph_launch(v[i].api))
			d[m++] = v[i].end - v[i].start;
	if (m) {
		qsort(d, m, sizeof(*d), gs_cmp_u64);
		x = d[m / 2];
	}
	free(d);
	return x;
}

uint64_t gs_replay_mean_walk(const struct gs_item *v, size_t n, uint64_t taken, uint64_t ns)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].own_ns)
			return 0;
	return taken ? ns / taken : 0;
}

/* gpuspy's stack walk after call c: as the trace timed it (walks differ a
 * hundredfold: 2.0 ms cold, 1.5 us repeated), else gs_replay_mean_walk's. */
static uint64_t walk(const struct gs_replay *rp, const struct gs_item *c)
{
	return c->own_ns ? c->own_ns : c->stack_id ? rp->stack_ns : 0;
}

/* The part of a gap of the host's, from the latest end of a call so far,
 * that a stack walk took. */
static uint64_t walked(const struct sim *m, uint64_t gap)
{
	uint64_t w = m->walk_end > m->prev_end ? m->walk_end - m->prev_end : 0;
	return w < gap ? w : gap;
}

/* The host's own work before call c (the gap since the calls before it),
 * as the change leaves it, less tracing's part in it (beyond: CUPTI's). */
static uint64_t own_gap(struct sim *m, const struct gs_item *c, uint64_t beyond)
{
	uint64_t gap = c->start > m->prev_end ? c->start - m->prev_end : 0;
	const struct gs_replay *rp = m->rp;
	/* gpuspy walked a call's stack after it ended: tracing's, not the
	 * program's (on a critical path, after a wait, it would count as a
	 * saving of the change that hides it). */
	gap -= walked(m, gap);
	gap -= beyond < gap ? beyond : gap;
	if (m->ch == GS_CH_WORKERS && rp->data_phase && c->phase == rp->data_phase) {
		/* The workers load the batch meanwhile: the gap's part in the
		 * data phase goes (before it began, the host did other work).
		 * That part holds the stack walk already taken off: the gap is
		 * then all of it, never less (a wrap past 0 took the walk off
		 * twice, a saving of time that was never in the step). */
		uint64_t from = m->data_from > m->prev_end ? m->data_from : m->prev_end;
		uint64_t data = c->start > from ? c->start - from : 0;
		data -= beyond < data ? beyond : data; /* CUPTI's part, at the gap's end: taken off above */
		uint64_t left = gap > data ? gap - data : 0;
		/* The batch still reaches the step through the main process,
		 * once a data phase: that much of the phase's work stays. */
		if (m->handoff_at != m->data_from) {
			m->handoff_at = m->data_from;
			m->handoff_left = rp->handoff_ns;
		}
		uint64_t keep = m->handoff_left < gap - left ? m->handoff_left : gap - left;
		m->handoff_left -= keep;
		return left + keep;
	}
	/* The code between two launches does not run in a replayed graph: a
	 * framework's dispatch of the next operation, a few times a launch's
	 * own cost. A longer gap is the host's own work, and loading data is
	 * too: they stay. */
	if (m->ch == GS_CH_GRAPH && m->prev_capturable && capturable(c) && (rp->framework || gap <= 8 * rp->launch_ns) &&
	    !(rp->data_phase && (c->phase == rp->data_phase || m->prev_phase == rp->data_phase)))
		return 0;
	if (m->ch == GS_CH_FUSE && rp->fuse > 1)
		return gap / rp->fuse;
	return gap;
}

/* x's pm per mille, without overflow. */
static uint64_t per_mille(uint64_t x, unsigned pm)
{
	return x / 1000 * pm + x % 1000 * pm / 1000;
}

/* A graph launch recorded while CUPTI was on. */
static int cupti_graph_launch(const struct gs_replay *rp, const struct gs_item *c)
{
	return c->kind == GSPY_KIND_launch && gspy_api_graph_launch(c->api) && rp->cupti_ns;
}

/* A call's time without tracing: less gpuspy's record and CUPTI's work
 * for its GPU records, never more than half the call. An XLA graph
 * launch under CUPTI keeps graph_keep_pm of its time: CUPTI's work there
 * is per kernel node, and it and the launch both run at the process's
 * own speed (JAX's 28-node step on an H100: 28.0 us with CUPTI, 3.4 us
 * without, in processes of one speed; 32 to 49 us with it, 6.0 without,
 * in slower ones: tests/gpu/results/round3/traced-cost-h100.md). Any
 * other graph launch under CUPTI takes what one takes without it, a base
 * and a part a node (that file's cupti_costs.cu launches of 4 and 28
 * kernels, 2.8-3.1 and 7.2-7.9 us), if no more than it took traced. */
static uint64_t untraced(const struct gs_replay *rp, const struct gs_item *c, uint64_t dur, size_t records)
{
	if (cupti_graph_launch(rp, c) && !rp->graph_keep_pm) {
		uint64_t was = dur > rp->record_ns ? dur - rp->record_ns : dur;
		uint64_t own = rp->graph_base_ns + rp->graph_node_ns * records;
		return own < was ? own : was;
	}
	if (cupti_graph_launch(rp, c)) {
		/* never under a launch's base (a graph of a few nodes costs CUPTI little) */
		uint64_t kept = per_mille(dur, rp->graph_keep_pm), base = rp->graph_base_ns < dur ? rp->graph_base_ns : dur;
		return kept > base ? kept : base;
	}
	uint64_t traced = rp->record_ns + rp->cupti_ns * records;
	return dur > 2 * traced ? dur - traced : dur / 2;
}

/* CUPTI's work for an XLA graph launch outside the call, in the host's
 * gap before it: XLA sets each kernel node's parameters before a launch,
 * in driver calls gpuspy does not intercept, and CUPTI adds to each (the
 * JAX step above: 7.4 us in the gaps against the launch's 24.6). traced
 * and kept: the launch's time as it ran and as untraced() keeps it. */
static uint64_t cupti_beyond(const struct gs_replay *rp, const struct gs_item *c, uint64_t traced, uint64_t kept)
{
	return cupti_graph_launch(rp, c) && kept < traced ? per_mille(traced - kept, rp->graph_beyond_pm) : 0;
}

/* GS_CH_NOWAIT: whether the step the host is in keeps its waits, the
 * advice reading values every wait_every steps: round(steps / wait_every)
 * of the window's steps, each the last of its share (the 20th and the
 * 40th of 40); none in a window under half of wait_every (one in 6 kept
 * said 12% too little; none, at most 5% too much). */
static int still_waits(const struct sim *m)
{
	const struct gs_replay *rp = m->rp;
	if (!rp->wait_every || !rp->bounds || !rp->steps)
		return 0;
	if (rp->odd && rp->odd[m->step])
		return 1; /* an evaluation's waits: not the advice's */
	size_t w = m->counted, i = rp->odd ? m->before : m->step, k = (w + rp->wait_every / 2) / rp->wait_every;
	return k && (i + 1) * k / w != i * k / w;
}

/* The steps from step to the one c is in: each ends at its bound, the
 * host's gap before c (gapped, as own_gap made it, from h) cut there in
 * proportion. An odd step's own time (rp->odd) begins when the host
 * reaches it and the GPU has done the steps' work before it (a wait of
 * an evaluation's for the training's queued work is the training's). */
static void step_edges(struct sim *m, const struct gs_item *c, size_t step, uint64_t h, uint64_t gapped)
{
	const struct gs_replay *rp = m->rp;
	uint64_t raw = c->start > m->prev_end ? c->start - m->prev_end : 0;
	for (; step < m->step; step++) {
		uint64_t bound = rp->bounds[step + 1], into = bound > m->prev_end ? bound - m->prev_end : 0;
		uint64_t at = h + (raw ? (uint64_t)((double)gapped * (double)(into < raw ? into : raw) / (double)raw) : 0);
		if (rp->odd[step] && at > m->step_h)
			m->odd_ns += at - m->step_h;
		m->before += !rp->odd[step];
		m->step_h = at;
		if (rp->odd[step + 1]) {
			uint64_t gpu = latest(&m->s, m->s.free, -1);
			m->step_h = gpu > at ? gpu : at;
		}
	}
}

/* GS_CH_PIN: whether c is the synchronize of the host-to-device copy its
 * thread just pinned. PyTorch's blocking copy (non_blocking=False) is a
 * cudaMemcpyAsync, then a synchronize of its stream; with
 * non_blocking=True, as the advice says, the synchronize goes with the
 * block. A copy back keeps it: the host reads what it copied, so a
 * program that copies it without blocking synchronizes before it reads.
 * Any call of that thread ends the copy's turn. One copy is open at a
 * time: another thread's pinned copy meanwhile closes it, and its
 * synchronize is kept (a saving missed, never one made up). */
static int pinned_sync(struct sim *m, const struct gs_item *c, int wait)
{
	int s = m->pinned_stream;
	if (s < 0 || c->tid != m->pinned_tid)
		return 0;
	m->pinned_stream = -1;
	return c->kind == GSPY_KIND_sync && wait && !device_wide(c) && call_stream(&m->s, c) == s;
}

/* A call whose GPU work has no record (CUPTI dropped it, or the run
 * ended first): its stream's work is not known until a wait that stays
 * finds it done, so a wait on it is not dropped (a saving missed, never
 * one made up of work the replay cannot see). A stream not known: all. */
static void note_blind(struct sim *m, const struct gs_item *c, size_t records)
{
	int work = (c->kind == GSPY_KIND_launch && !gspy_api_host_func(c->api)) ||
		   ((c->kind == GSPY_KIND_memset || c->kind == GSPY_KIND_copy) && c->bytes);
	if (records || !c->corr || !work) /* a host function, an empty copy: no record */
		return;
	int s = call_stream(&m->s, c);
	for (int i = 0; i < m->s.n; i++)
		m->s.blind[i] |= s < 0 || i == s;
	m->blind_unknown |= s < 0 && !m->s.n;
}

/* Whether wait c covers a stream left blind; with clear, the wait stays
 * and its streams are known again. */
static int blind_wait(struct sim *m, const struct gs_item *c, int clear)
{
	int s = wait_stream(m, c), hit = m->blind_unknown;
	for (int i = 0; i < m->s.n; i++)
		if (s < 0 ? (wide_device(c) < 0 || m->s.dev[i] == c->device || m->s.dev[i] < 0) : i == s) {
			hit |= m->s.blind[i];
			if (clear)
				m->s.blind[i] = 0;
		}
	if (clear && s < 0)
		m->blind_unknown = 0;
	return hit;
}

/* Wait c, kept: it waits for its stream (or all of them), then costs what
 * it cost beyond its wait (dur, untraced), divided by div: a blocking
 * copy's own part is the copy. Its streams are known again after it. */
static void wait_for(struct sim *m, const struct gs_item *c, uint64_t dur, uint64_t div)
{
	/* What a wait on work without its record waited for is not known:
	 * its own part is not divided (it may be the wait). */
	if (blind_wait(m, c, 1))
		div = 1;
	uint64_t deps, w = waited(m, c, &deps), own = (dur > w ? dur - w : 0) / div;
	int s = wait_stream(m, c);
	uint64_t until = s < 0 ? latest(&m->s, m->s.free, wide_device(c)) : m->s.free[s];
	if (deps > until)
		until = deps;
	m->h = (m->h > until ? m->h : until) + own;
	size_t k, k_end = linked(m, c->corr, &k); /* a blocking copy's own GPU record ends with it */
	for (; k < k_end; k++) {
		int gs = stream_at(&m->s, m->gpu[k]->device, m->gpu[k]->stream);
		if (m->s.free[gs] < m->h)
			m->s.free[gs] = m->h;
	}
}

static void call(struct sim *m, const struct gs_item *c)
{
	const struct gs_replay *rp = m->rp;
	/* A new step is a new graph: each step pays its own graph launch. */
	size_t was = m->step;
	while (rp->bounds && m->step < rp->steps && c->start >= rp->bounds[m->step + 1]) {
		m->step++;
		m->graph_open = 0;
		m->prev_capturable = 0;
	}
	/* No call outlasts the window: what a call took past its end is the
	 * next step's (and a forged end of 2^62 ns stays out of the model). */
	uint64_t end = c->end < rp->tb ? c->end : rp->tb;
	uint64_t dur = end > c->start ? end - c->start : 0;
	if (c->start < m->prev_end) /* another thread's call, alongside: only what goes past */
		dur = end > m->prev_end ? end - m->prev_end : 0;
	size_t k0, k1 = linked(m, c->corr, &k0); /* CUPTI's work is per GPU record (a graph's: each node's) */
	note_blind(m, c, k1 - k0);
	uint64_t traced = dur;
	dur = untraced(rp, c, dur, k1 - k0);
	uint64_t h = m->h;
	m->h += own_gap(m, c, cupti_beyond(rp, c, traced, dur));
	if (rp->odd && m->step > was)
		step_edges(m, c, was, h, m->h - h);
	/* Several steps a dispatch: a call's host cost is paid once a
	 * dispatch, but a copy of 1 MiB or more moves its bytes every step
	 * (a dispatch of ten steps copies ten steps' data): it keeps its time. */
	int bulk = c->kind == GSPY_KIND_copy && c->bytes >= MIB;
	uint64_t div = m->ch == GS_CH_FUSE && rp->fuse > 1 && !bulk ? rp->fuse : 1;
	int wait = gs_replay_waits(c);
	uint64_t deps;
	int copy_sync = pinned_sync(m, c, wait);
	if (m->ch == GS_CH_PIN && gs_replay_pinnable(c) && k1 > k0) { /* (its GPU copy not seen: it stays) */
		waited(m, c, &deps);
		m->h += rp->launch_ns;
		uint64_t done = queue_gpu(m, c, m->h > deps ? m->h : deps, 1);
		/* A copy back that blocked still waits for its bytes: the host
		 * reads what it copied (only the copy is faster; its wait for the
		 * work before it stays, a wait's to drop, not pinning's). */
		if (c->dir == GSPY_DIR_d2h && !c->async && done > m->h)
			m->h = done;
		if (rp->copy_syncs && c->async && c->dir == GSPY_DIR_h2d) {
			m->pinned_tid = c->tid;
			m->pinned_stream = call_stream(&m->s, c);
		}
	} else if ((m->ch == GS_CH_NOWAIT && gs_replay_droppable_wait(c) && !still_waits(m) && !blind_wait(m, c, 0)) ||
		   copy_sync) {
		/* It waits for nothing: its own part, at most an async call's. */
		uint64_t w = waited(m, c, &deps), own = dur > w ? dur - w : 0, cap = rp->launch_ns < WAIT_COST_NS ?
										    rp->launch_ns : WAIT_COST_NS;
		m->h += own < cap ? own : cap;
		queue_gpu(m, c, m->h > deps ? m->h : deps, 0);
	} else if (m->ch == GS_CH_POOL && gs_replay_poolable(c)) {
		/* from the pool: no call, no synchronization */
	} else if (wait) {
		wait_for(m, c, dur, div);
	} else if (m->ch == GS_CH_GRAPH && capturable(c)) {
		if (!m->graph_open) { /* the step's one graph launch: its base, then a part a node */
			m->h += rp->graph_base_ns;
			m->graph_open = 1;
		}
		m->h += rp->graph_node_ns;
		queue_gpu(m, c, m->h, 0);
	} else {
		m->h += dur / div;
		if (capturable(c))
			queue_gpu(m, c, m->h, 0);
	}
	if (!capturable(c))
		m->graph_open = 0; /* what follows a wait or the host's own call is another graph */
	m->prev_capturable = capturable(c);
	m->prev_phase = c->phase;
	note_recorded(m, c);
	if (end > m->prev_end)
		m->prev_end = end;
	uint64_t w = end + walk(rp, c);
	if (w > m->walk_end && w >= end)
		m->walk_end = w;
}

struct on_stream {
	uint64_t stream, start;
	int16_t device;
	size_t i; /* in rp->it */
};

static int by_stream_start(const void *a, const void *b)
{
	const struct on_stream *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

uint64_t *gs_replay_overlaps(const struct gs_replay *rp)
{
	struct on_stream *o = malloc((rp->n ? rp->n : 1) * sizeof(*o));
	uint64_t *ahead = calloc(rp->n ? rp->n : 1, sizeof(*ahead));
	size_t k = 0;
	if (!o || !ahead) {
		free(o);
		free(ahead);
		return NULL;
	}
	for (size_t i = 0; i < rp->n; i++)
		if (rp->it[i].what == GS_IT_GPU)
			o[k++] = (struct on_stream){ rp->it[i].stream, rp->it[i].start, rp->it[i].device, i };
	qsort(o, k, sizeof(*o), by_stream_start);
	uint64_t end = 0; /* the latest end so far on this stream */
	for (size_t j = 0; j < k; j++) {
		const struct gs_item *g = &rp->it[o[j].i];
		if (j && (o[j].stream != o[j - 1].stream || o[j].device != o[j - 1].device))
			end = 0;
		if (g->start < end)
			ahead[o[j].i] = (g->end < end ? g->end : end) - g->start;
		if (g->end > end)
			end = g->end;
	}
	free(o);
	return ahead;
}

uint64_t gs_replay_run(const struct gs_replay *rp, enum gs_change change)
{
	struct sim m = { .rp = rp, .ch = change, .h = rp->ta, .prev_end = rp->ta, .step_h = rp->ta, .pinned_stream = -1 };
	for (size_t k = 0; rp->bounds && k < rp->steps; k++)
		m.counted += !(rp->odd && rp->odd[k]);
	m.gpu = malloc((rp->n ? rp->n : 1) * sizeof(*m.gpu));
	if (!m.gpu || !more_room(&m.s)) { /* (stream_at's stream 0 is then always there) */
		free(m.gpu);
		drop_streams(&m.s);
		return rp->tb - rp->ta - gs_replay_odd_run(rp);
	}
	for (size_t i = 0; i < rp->n; i++)
		if (rp->it[i].what == GS_IT_GPU && rp->it[i].corr)
			m.gpu[m.ngpu++] = &rp->it[i];
	qsort(m.gpu, m.ngpu, sizeof(*m.gpu), by_corr);
	for (size_t i = 0; i < rp->n; i++) { /* each stream handle's GPU id, from what was launched on it */
		const struct gs_item *c = &rp->it[i];
		size_t k;
		if (c->what == GS_IT_CALL && c->corr && linked(&m, c->corr, &k) > k)
			learn_stream(&m.s, c->device, c->stream, m.gpu[k]->device, m.gpu[k]->stream);
	}
	for (size_t i = 0; i < rp->n; i++) {
		const struct gs_item *c = &rp->it[i];
		if (c->what == GS_IT_PHASE && rp->data_phase && c->phase == rp->data_phase)
			m.data_from = c->start;
		if (c->what == GS_IT_CALL && c->start >= rp->ta && c->start < rp->tb)
			call(&m, c);
	}
	/* The host's own work after the last call, to the window's end (less
	 * that call's stack walk, and divided as own_gap divides a gap). */
	uint64_t tail = rp->tb > m.prev_end ? rp->tb - m.prev_end : 0;
	tail -= walked(&m, tail);
	m.h += change == GS_CH_FUSE && rp->fuse > 1 ? tail / rp->fuse : tail;
	uint64_t end = m.h, gpu = latest(&m.s, m.s.free, -1);
	free(m.gpu);
	drop_streams(&m.s);
	if (gpu > end)
		end = gpu;
	if (rp->odd && rp->bounds && m.step < rp->steps && rp->odd[m.step] && end > m.step_h)
		m.odd_ns += end - m.step_h;
	end = end > rp->ta ? end - rp->ta : 0;
	return end > m.odd_ns ? end - m.odd_ns : 0;
}

uint64_t gs_replay_odd_run(const struct gs_replay *rp)
{
	uint64_t ns = 0;
	for (size_t k = 0; rp->odd && rp->bounds && k < rp->steps; k++)
		ns += rp->odd[k] ? rp->bounds[k + 1] - rp->bounds[k] : 0;
	return ns;
}

int gs_replay_counts(const struct gs_replay *rp, uint64_t t)
{
	if (t < rp->ta || t >= rp->tb)
		return 0;
	if (!rp->odd || !rp->bounds)
		return 1;
	size_t lo = 0, hi = rp->steps; /* the last step whose begin is at or before t */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (rp->bounds[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return !rp->odd[lo];
}
