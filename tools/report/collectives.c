/* SPDX-License-Identifier: MIT */
/*
 * A process's collectives, for the ranks section (report/ranks.c): when
 * each ran, how long, and how much of that the GPU spent computing beside
 * it.
 *
 * Two kinds are found:
 *   - NCCL's kernels (ncclDevKernel_AllReduce_..., with CUPTI): their GPU
 *     time;
 *   - gloo's all-reduce of CUDA tensors, which runs on the host. Gloo
 *     copies the tensor into pinned memory on a stream of its own, and its
 *     worker thread synchronizes that stream, reduces on the host with the
 *     other ranks, then copies the same bytes back from the same host
 *     buffer on the same stream. The collective is the worker's time
 *     between the end of that sync and the copy back: the reduction, and
 *     the wait for the ranks that came later.
 * A round trip of one host buffer on one stream, with a sync on the
 * copying-back thread in between, is what is matched: a program's own
 * copies of fresh batches come from other buffers.
 *
 * Overlap: the part of the collectives' time during which a kernel of
 * this process (not a collective) ran on the GPU, from the union of those
 * kernels' intervals, over the union of the collectives kept (the first
 * GS_COLL_ENDS). The kernels' intervals are kept only for ranks' traces
 * (RANK set), and only up to SPAN_MAX.
 */
#include <stdlib.h>
#include <string.h>

#include "report/pass.h"
#include "report/report.h"
#include "report/section.h"
#include "report/series.h"
#include "util/units.h"

#define PENDING 64     /* copies to pinned memory not yet come back */
#define THREADS 256    /* threads whose last sync is followed */
#define SPAN_MAX (8u << 20)

struct copy_out {
	uint64_t addr, bytes, stream, end;
};

struct last_sync {
	uint32_t tid;
	uint64_t stream, end;
};

struct gs_span {
	uint64_t start, end;
};

/* The pass's scratch (pass.h). */
struct gs_coll_state {
	uint64_t union_end; /* the latest end so far: time in collectives is their union */
	int active; /* a sync, a round trip's copy or a compute kernel was seen: the overlap is measured */
	struct copy_out pending[PENDING];
	unsigned npending_next;
	struct last_sync sync[THREADS];
	struct gs_span *busy; /* compute kernels' intervals, unsorted */
	size_t nbusy, busy_cap;
};

static struct gs_coll_state *state(struct gs_pass *p)
{
	if (!p->coll)
		p->coll = calloc(1, sizeof(*p->coll));
	return p->coll;
}

static uint64_t name_key(const char *s)
{
	return gs_str_hash(s) | 1ull << 63; /* never a byte count */
}

static void add_collective(struct gs_pass *p, uint64_t start, uint64_t end, uint64_t key, int host)
{
	struct gs_report *r = p->r;
	struct gs_coll_state *s = state(p);
	if (!s)
		return;
	/* Time in collectives is their union: the part of this one past the
	 * latest end so far (they come in the order they end, or nearly). */
	uint64_t from = start > s->union_end ? start : s->union_end;
	uint64_t ns = end > from ? end - from : 0;
	if (end > s->union_end)
		s->union_end = end;
	gs_series_collective(r->series, ns);
	r->coll_ns += ns;
	r->coll_n++;
	r->coll_host |= host;
	if (!r->coll)
		r->coll = calloc(GS_COLL_ENDS, sizeof(*r->coll));
	if (r->coll && r->ncoll < GS_COLL_ENDS)
		r->coll[r->ncoll++] = (struct gs_coll_item){ start, end, key };
}

int gs_coll_nccl_name(const char *name)
{
	return name && !strncmp(name, "nccl", 4);
}

static int is_nccl(const struct gs_ev *ev)
{
	return gs_coll_nccl_name(ev->name);
}

static void coll_gpu(struct gs_pass *p, const struct gs_ev *ev)
{
	if (ev->kind != GSPY_KIND_gpu_kernel)
		return;
	if (is_nccl(ev)) {
		add_collective(p, ev->start_ns, ev->end_ns, name_key(ev->name), 0);
		return;
	}
	struct gs_coll_state *s;
	if (p->r->proc.rank < 0 || ev->end_ns <= ev->start_ns || !(s = state(p)))
		return;
	s->active = 1;
	if (s->nbusy >= SPAN_MAX)
		return;
	if (s->nbusy == s->busy_cap) {
		size_t cap = s->busy_cap ? s->busy_cap * 2 : 4096;
		struct gs_span *v = realloc(s->busy, cap * sizeof(*v));
		if (!v)
			return;
		s->busy = v;
		s->busy_cap = cap;
	}
	s->busy[s->nbusy++] = (struct gs_span){ ev->start_ns, ev->end_ns };
}

static int pinned_round_trip_leg(const struct gs_ev *ev)
{
	return ev->kind == GSPY_KIND_copy && ev->result == 0 && ev->bytes && ev->addr &&
	       (ev->dir == GSPY_DIR_d2h || ev->dir == GSPY_DIR_h2d);
}

/* Thread tid's last sync; a new slot when make; NULL past THREADS. */
static struct last_sync *sync_of(struct gs_coll_state *s, uint32_t tid, int make)
{
	for (uint32_t i = 0, k = tid * 2654435761u % THREADS; i < THREADS; i++, k = (k + 1) % THREADS) {
		if (s->sync[k].tid == tid)
			return &s->sync[k];
		if (!s->sync[k].tid) {
			if (!make)
				return NULL;
			s->sync[k].tid = tid;
			return &s->sync[k];
		}
	}
	return NULL;
}

/* The latest copy out that ev copies back (same buffer, bytes, stream). */
static struct copy_out *copied_out(struct gs_coll_state *s, const struct gs_ev *ev)
{
	for (unsigned n = 0; n < PENDING; n++) {
		struct copy_out *o = &s->pending[(s->npending_next - 1 - n) % PENDING];
		if (o->addr == ev->addr && o->bytes == ev->bytes && o->stream == ev->stream)
			return o;
	}
	return NULL;
}

static void coll_host(struct gs_pass *p, const struct gs_ev *ev)
{
	if (ev->kind != GSPY_KIND_sync && !pinned_round_trip_leg(ev))
		return;
	struct gs_coll_state *s = state(p);
	if (s)
		s->active = 1;
	if (!s || !ev->tid)
		return;
	if (ev->kind == GSPY_KIND_sync) {
		struct last_sync *t = sync_of(s, ev->tid, 1);
		if (t) {
			t->stream = ev->stream;
			t->end = ev->end_ns;
		}
		return;
	}
	if (ev->dir == GSPY_DIR_d2h) {
		s->pending[s->npending_next++ % PENDING] = (struct copy_out){ ev->addr, ev->bytes, ev->stream, ev->end_ns };
		return;
	}
	/* A copy back, with this thread's last sync (of that stream) between
	 * the copy out and it. */
	struct copy_out *o = copied_out(s, ev);
	if (!o)
		return;
	o->addr = 0;
	struct last_sync *t = sync_of(s, ev->tid, 0);
	if (t && t->stream == ev->stream && t->end >= o->end && t->end <= ev->start_ns)
		add_collective(p, t->end, ev->start_ns, ev->bytes, 1);
}

/* NCCL's kernels, and the others' intervals for the overlap (GPU
 * records); gloo's round trips (host calls). */
void gs_coll_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	(void)cur;
	if (feed == GS_FEED_GPU)
		coll_gpu(p, ev);
	else
		coll_host(p, ev);
}

static int cmp_span(const void *a, const void *b)
{
	const struct gs_span *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts v and merges what overlaps; the new count. */
static size_t merge(struct gs_span *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_span);
	size_t m = 0;
	for (size_t i = 1; i < n; i++) {
		if (v[i].start <= v[m].end) {
			if (v[i].end > v[m].end)
				v[m].end = v[i].end;
		} else {
			v[++m] = v[i];
		}
	}
	return m + 1;
}

/* At the end of the pass: the collectives' overlap with compute. */
void gs_coll_finish(struct gs_pass *p)
{
	struct gs_report *r = p->r;
	struct gs_coll_state *s = p->coll;
	if (s && s->active && r->ncoll) {
		size_t nb = merge(s->busy, s->nbusy);
		struct gs_span *c = malloc(r->ncoll * sizeof(*c));
		if (c) {
			for (size_t i = 0; i < r->ncoll; i++)
				c[i] = (struct gs_span){ r->coll[i].start, r->coll[i].end };
			size_t nc = merge(c, r->ncoll), j = 0;
			uint64_t both = 0;
			r->coll_span_ns = 0;
			for (size_t i = 0; i < nc; i++) {
				r->coll_span_ns += c[i].end - c[i].start;
				while (j < nb && s->busy[j].end <= c[i].start)
					j++;
				for (size_t k = j; k < nb && s->busy[k].start < c[i].end; k++) {
					uint64_t a = s->busy[k].start > c[i].start ? s->busy[k].start : c[i].start;
					uint64_t b = s->busy[k].end < c[i].end ? s->busy[k].end : c[i].end;
					both += b > a ? b - a : 0;
				}
			}
			r->coll_overlap_ns = both;
			r->coll_overlap_known = 1;
			free(c);
		}
	}
	if (s)
		free(s->busy);
	free(s);
	p->coll = NULL;
}

void gs_coll_free(struct gs_report *r)
{
	free(r->coll);
	r->coll = NULL;
}
