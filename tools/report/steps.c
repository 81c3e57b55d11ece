/* SPDX-License-Identifier: MIT */
/*
 * The step section (steps.h): the repeated unit of work of any program. The
 * pass keeps the latest events in a ring (bounded memory); at its end the step
 * is found (bounds.c): PyTorch's optimizer steps where the helper counted
 * them, else the cycle of top-level phases (an NVTX range or the user's
 * phase; XLA's runs of a jitted function) when it repeats, else the
 * program's own period, the repeating kernels, copies and waits of the
 * thread that launches most (period.c). What
 * comes before the steady state is warm-up (compilation, autotuning, uploads),
 * left out of every figure a step. The last steps are then replayed
 * (replay.c), once as they ran and once per change.
 */
#include <stdlib.h>
#include <string.h>

#include "read/reader.h"
#include "report/bounds.h"
#include "report/diag.h"
#include "report/pass.h"
#include "report/section.h"
#include "report/sites.h"
#include "report/steps.h"
#include "util/units.h"
#include "util/xalloc.h"

/* The steps replayed, the last: WINDOW_MIN, then more up to WINDOW_NS while
 * they stay the later half of the steps (an earlier, slower stretch is not
 * the steady state), WINDOW_MAX at most. A host-bound process's speed moves
 * by half between stretches of a few hundred ms: 2 s hold several
 * (tests/gpu/results/round3/jax-spread-h100.md, jax_modes.sh's part). */
#define WINDOW_MIN 40
#define WINDOW_NS 2000000000ull
#define WINDOW_MAX 32768

struct gs_step_ring {
	struct gs_item *v;
	size_t head, n;
	uint64_t seen; /* items ever offered */
};

static uint32_t fnv(const void *p, size_t n, uint32_t h)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* The kind of work a call is, for the period: its kind and entry point,
 * the kernel's name, a copy's direction and memory (not sizes: a step's
 * shapes may vary). Never 0. */
static uint32_t token(const struct gs_ev *ev)
{
	uint32_t h = fnv(&ev->kind, 1, 2166136261u);
	if (ev->kind == GSPY_KIND_launch && ev->name && *ev->name)
		h = fnv(ev->name, strlen(ev->name), h);
	else
		h = fnv(&ev->api, sizeof(ev->api), h);
	if (ev->kind == GSPY_KIND_copy)
		h = fnv(&ev->mem, 1, fnv(&ev->dir, 1, h));
	return h ? h : 1;
}

/* The pass's ring, made at its first use; NULL without memory. */
static struct gs_step_ring *ring(struct gs_pass *p)
{
	if (!p->steps) {
		struct gs_step_ring *g = calloc(1, sizeof(*g));
		if (g && !(g->v = malloc(GS_STEPS_RING * sizeof(*g->v)))) {
			free(g);
			g = NULL;
		}
		p->steps = g;
	}
	return p->steps;
}

static struct gs_item *push(struct gs_pass *p)
{
	struct gs_step_ring *g = ring(p);
	if (!g)
		return NULL;
	g->seen++;
	struct gs_item *it = &g->v[(g->head + g->n) % GS_STEPS_RING];
	if (g->n < GS_STEPS_RING)
		g->n++;
	else
		g->head = (g->head + 1) % GS_STEPS_RING;
	memset(it, 0, sizeof(*it));
	return it;
}

void gs_steps_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase)
{
	if (feed == GS_FEED_PHASE && p->phase_depth != 0 && !ev->has_step)
		return; /* the cycle is of top-level phases; a step count is kept at any depth */
	struct gs_item *it = push(p);
	if (!it)
		return;
	it->start = ev->start_ns;
	it->end = ev->end_ns > ev->start_ns ? ev->end_ns : ev->start_ns; /* a forged end before its start: none */
	/* A call's top-level phase (the data phase holds the user's ranges in it). */
	it->phase = feed == GS_FEED_HOST && p->tl.depth ? (uint32_t)p->tl.stack[0].idx : (uint32_t)phase;
	it->inner = (uint32_t)phase;
	if (feed == GS_FEED_PHASE) {
		it->what = p->phase_depth ? GS_IT_MARK : GS_IT_PHASE;
		it->tok = (uint32_t)phase + 1;
		it->corr = ev->has_step && ev->step < UINT64_MAX ? ev->step + 1 : 0;
		return;
	}
	it->what = feed == GS_FEED_GPU ? GS_IT_GPU : GS_IT_CALL;
	it->kind = ev->kind;
	it->api = ev->api;
	it->dir = ev->dir;
	it->mem = ev->mem;
	it->async = (uint8_t)(ev->async != 0);
	it->bytes = ev->bytes;
	it->stream = ev->stream;
	it->corr = ev->corr;
	it->device = ev->device;
	it->tid = ev->tid;
	it->stack_id = ev->stack_id;
	it->own_ns = ev->own_ns;
	if (it->what == GS_IT_CALL)
		it->tok = token(ev);
}

/* The bandwidth a pageable copy would get from pinned memory: the run's own
 * pinned copies of 1 MiB or more, their bytes over their time (no one record
 * sets it), else the PCIe link NVML saw at 87% of its raw rate (the H200's
 * 64 MiB pinned copies: 54.8 GB/s on gen5 x16, the what-if suite's fixed
 * pageable program, docs/measurements.md), else PCIe gen4 x16's. */
static double pinned_bandwidth(const struct gs_report *r, const struct gs_item *v, size_t n, const char **from)
{
	double bytes = 0, ns = 0;
	for (size_t i = 0; i < n; i++) /* GPU copy records of pinned memory */
		if (v[i].what == GS_IT_GPU && v[i].kind == GSPY_KIND_gpu_copy && v[i].mem == GSPY_MEM_pinned &&
		    v[i].bytes >= GS_PIN_BYTES && v[i].end > v[i].start &&
		    (v[i].dir == GSPY_DIR_h2d || v[i].dir == GSPY_DIR_d2h)) {
			bytes += (double)v[i].bytes;
			ns += (double)(v[i].end - v[i].start);
		}
	if (bytes > 0) {
		*from = "the run's own pinned copies";
		return bytes * 1e9 / ns;
	}
	for (int d = 0; d < GSPY_DEVICES; d++)
		if (r->tele[d].gen_max && r->tele[d].width_max) {
			static const double lane[] = { 0, 0.25e9, 0.5e9, 0.985e9, 1.97e9, 3.94e9, 7.88e9 };
			unsigned g = r->tele[d].gen_max < 7 ? r->tele[d].gen_max : 6;
			*from = "the PCIe link NVML saw, at 87% of its rate";
			return lane[g] * r->tele[d].width_max * 0.87;
		}
	*from = "PCIe gen4 x16's usual 25 GB/s (no pinned copy or link seen)";
	return 25e9;
}

/* The waits a step could drop: how many, the line of the one that waits
 * longest in all, and the host's own work right after each (what could
 * have run while the GPU worked). */
static void waits(struct gs_pass *p, const struct gs_item *v, size_t n, const struct gs_replay *rp,
		  struct gs_step_change *c, uint64_t steps)
{
	const struct gs_item *worst = NULL;
	uint64_t worst_ns = 0, after = 0, longest = 0;
	/* Each call's thread's next call, found in one backward pass (a scan
	 * forward from each wait would be quadratic in threads that wait once
	 * and never call again). */
	size_t cap = 16, *next = malloc((n ? n : 1) * sizeof(*next));
	while (cap < 2 * n)
		cap <<= 1;
	struct { uint32_t tid; size_t at; } *seen = calloc(cap, sizeof(*seen));
	for (size_t i = n; next && seen && i-- > 0;) {
		next[i] = SIZE_MAX;
		if (v[i].what != GS_IT_CALL)
			continue;
		size_t k = (v[i].tid * 2654435761u) & (cap - 1);
		while (seen[k].at && seen[k].tid != v[i].tid)
			k = (k + 1) & (cap - 1);
		next[i] = seen[k].at ? seen[k].at - 1 : SIZE_MAX;
		seen[k].tid = v[i].tid;
		seen[k].at = i + 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!gs_replay_counts(rp, v[i].start) || !gs_replay_droppable_wait(&v[i]))
			continue;
		c->count++;
		uint64_t d = v[i].end - v[i].start;
		if (d >= worst_ns && v[i].stack_id) {
			worst_ns = d;
			worst = &v[i];
		}
		if (d >= longest) {
			longest = d;
			c->phase = v[i].phase;
			c->inner = v[i].inner;
		}
		size_t j = next && seen ? next[i] : SIZE_MAX;
		if (j != SIZE_MAX && v[j].start > v[i].end)
			after += v[j].start - v[i].end;
	}
	c->after_ns = steps ? after / steps : 0;
	free(next);
	free(seen);
	if (worst)
		gs_sites_own_line(&p->r->sites, p->in, worst->stack_id, c->where, sizeof(c->where));
}

static int cmp_span(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The steady step: the window's span over its steps (w: its odd steps'
 * aside, and the work launched in them), on the host or, where the host
 * runs ahead of the GPU (a loop that waits for nothing; none is odd), on
 * the GPU: from the first start to the last end of the work launched in it. Adds the GPU's
 * busy time with that work to *gpu_ns: the union of its spans, so that streams
 * that overlap count once (a sum said "GPU work 195%" of such a step). */
static uint64_t window_step(const struct gs_item *v, size_t n, const struct gs_replay *w, size_t steps,
			    uint64_t *gpu_ns)
{
	uint64_t ta = w->ta, tb = w->tb;
	uint64_t lo = UINT64_MAX, hi = 0, *corr = malloc((n ? n : 1) * sizeof(*corr));
	uint64_t *span = malloc((n ? n : 1) * 2 * sizeof(*span));
	size_t nc = 0, ns = 0;
	for (size_t i = 0; corr && i < n; i++)
		if (v[i].what == GS_IT_CALL && v[i].corr && gs_replay_counts(w, v[i].start))
			corr[nc++] = v[i].corr;
	if (corr)
		qsort(corr, nc, sizeof(*corr), gs_cmp_u64);
	for (size_t i = 0; nc && i < n; i++)
		if (v[i].what == GS_IT_GPU && v[i].corr && bsearch(&v[i].corr, corr, nc, sizeof(*corr), gs_cmp_u64)) {
			if (span) {
				span[2 * ns] = v[i].start;
				span[2 * ns + 1] = v[i].end;
				ns++;
			} else {
				*gpu_ns += v[i].end - v[i].start;
			}
			if (v[i].start < lo)
				lo = v[i].start;
			if (v[i].end > hi)
				hi = v[i].end;
		}
	if (ns)
		qsort(span, ns, 2 * sizeof(*span), cmp_span);
	for (size_t i = 0, j; i < ns; i = j) { /* merged: each busy stretch once */
		uint64_t a = span[2 * i], b = span[2 * i + 1];
		for (j = i + 1; j < ns && span[2 * j] <= b; j++)
			if (span[2 * j + 1] > b)
				b = span[2 * j + 1];
		*gpu_ns += b - a;
	}
	free(span);
	free(corr);
	uint64_t width = tb - ta - gs_replay_odd_run(w); /* the odd steps' time is none of the step's */
	if (hi > lo && hi - lo > width && !w->odd)
		width = hi - lo;
	return steps ? width / steps : 0;
}

static void reverse(struct gs_item *v, size_t i, size_t j) /* v[i..j) */
{
	for (struct gs_item t; i + 1 < j; i++, j--)
		t = v[i], v[i] = v[j - 1], v[j - 1] = t;
}

/* The ring made one array in place, oldest first (the pass's time order). */
static struct gs_item *linear(struct gs_step_ring *g)
{
	if (g->head) { /* only a full ring wraps: rotated left by its head */
		reverse(g->v, 0, g->head);
		reverse(g->v, g->head, GS_STEPS_RING);
		reverse(g->v, 0, GS_STEPS_RING);
		g->head = 0;
	}
	return g->v;
}

static void once_costs(struct gs_pass *p, struct gs_steps *s, const struct gs_item *v, size_t n)
{
	const struct gs_item *big = NULL;
	if (!s->warmup_ns) /* (a long run's kept events may begin in a steady step) */
		return;
	for (size_t i = 0; i < n && v[i].start < s->steady_from; i++)
		if (v[i].what == GS_IT_CALL && v[i].kind == GSPY_KIND_copy && v[i].dir == GSPY_DIR_h2d) {
			s->once_copies++;
			s->once_copy_bytes += v[i].bytes;
			s->once_copy_ns += v[i].end - v[i].start;
			if (v[i].stack_id && (!big || v[i].bytes > big->bytes))
				big = &v[i];
		}
	if (big)
		gs_sites_own_line(&p->r->sites, p->in, big->stack_id, s->once_where, sizeof(s->once_where));
}

/* The window of steps replayed: the last, the very last left out when no
 * step followed it (the run's end, a final synchronize or evaluation), and
 * those after the last GPU record (CUPTI hands its records over late: a
 * window recorded on demand, or a run killed, ends without them). Counted
 * steps with other phases than most (odd: an evaluation's) are left out:
 * the window is in the last stretch without one, or where that holds
 * under six steps (a run stopped after an evaluation) the one before, if
 * it holds six or more (*apart: how many are odd; an earlier stretch may
 * be the warm-up's, as the first epoch's slow first steps). Where neither
 * holds six (an evaluation every few steps), the window keeps them
 * (*within: how many): the replay runs them, in order, but leaves their
 * time out of every figure a step (replay.h's odd).
 * Returns the first step, *k1_out the step after the last. */
static size_t window_of(const struct gs_item *v, size_t n, const uint64_t *b, size_t nb, const uint8_t *odd,
			size_t *k1_out, uint64_t *apart, uint64_t *within)
{
	size_t k1 = nb - 1, floor = 0;
	uint64_t gpu_last = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].what == GS_IT_GPU && v[i].start > gpu_last)
			gpu_last = v[i].start;
	while (gpu_last && k1 > 3 && b[k1] > gpu_last)
		k1--;
	size_t bi = 0, bj = 0, tries = 0; /* the stretch [bi, bj): the last, or the one before it */
	for (size_t j = k1, i; odd && j > 0 && bj - bi < 6 && tries++ < 2; j = i) {
		while (j > 0 && odd[j - 1])
			j--;
		for (i = j; i > 0 && !odd[i - 1]; i--)
			;
		bi = i, bj = j;
	}
	if (bj - bi >= 6 && (bj < k1 || bi > 0)) {
		k1 = bj;
		floor = bi;
		for (size_t k = 0; k + 1 < nb; k++)
			*apart += odd[k];
	}
	size_t k0 = k1, counted = 0; /* the steps in [k0, k1) that are not odd: WINDOW_MIN of them */
	while (k0 > floor && k1 - k0 < WINDOW_MAX &&
	       (counted < WINDOW_MIN || (b[k1] - b[k0] < WINDOW_NS && k1 - k0 < k1 / 2)))
	{
		k0--;
		counted += !(odd && odd[k0]);
	}
	if (k0 == 0 && k1 >= 6)
		k0 = 1; /* the first steady step still warms caches and allocators */
	uint64_t in = 0;
	for (size_t k = k0; odd && k < k1; k++)
		in += odd[k];
	/* Every step odd (the loop's steps changed after the commonest's):
	 * none is told apart, each figure a step averages them all. */
	*within = in < k1 - k0 ? in : 0;
	*k1_out = k1;
	return k0;
}

/* The steps' begins (bounds.h), the first finder that holds: PyTorch's
 * counted steps, the cycle of phases, the calls of the thread that
 * launches most. A finder's steps are the loop only if they run to the
 * end: phases that stop early (a warm-up's eager steps before a graph is
 * captured and replayed) are not the steps that follow. Past the cycle's
 * last begin, no more launches than two of its steps make; past the last
 * counted step's, no longer than four times the counted steps (an
 * evaluation after the training, even longer than it; not a CUDA graph's
 * replays after the count stopped, 17 times as long). */
static size_t begins(struct gs_pass *p, struct gs_steps *s, const struct gs_item *v, size_t n, uint64_t **b,
		     uint8_t **odd, size_t *group)
{
	uint64_t t_end = 0;
	for (size_t i = 0; i < n; i++)
		t_end = v[i].start > t_end ? v[i].start : t_end;
	size_t nb = gs_bounds_marked(p->r, v, n, p->steps->seen <= GS_STEPS_RING, b, odd, group);
	if (nb && (t_end - (*b)[nb - 1]) / 4 > (*b)[nb - 1] - (*b)[0]) {
		free(*b);
		free(*odd);
		*b = NULL;
		*odd = NULL;
		nb = 0;
	}
	if (nb)
		return nb;
	nb = gs_bounds_phases(p->r, v, n, b, s->what, sizeof(s->what));
	size_t in = 0, after = 0;
	for (size_t i = 0; nb && i < n; i++)
		if (v[i].what == GS_IT_CALL && v[i].kind == GSPY_KIND_launch)
			in += v[i].start >= (*b)[0] && v[i].start < (*b)[nb - 1], after += v[i].start >= (*b)[nb - 1];
	if (nb && after > 2 * in / (nb - 1) + 16) {
		free(*b);
		*b = NULL;
		nb = 0;
	}
	return nb ? nb : gs_bounds_calls(v, n, b, s->what, sizeof(s->what));
}

/* Finds the step (fills r->steps' first part) and its window of steady
 * steps: their begins into wb (WINDOW_MAX + 1 at most), and which are odd
 * into wodd (an evaluation's, replayed but in no figure a step). Returns
 * the window's steps, odd ones too; 0 with no step. */
static size_t find_step(struct gs_pass *p, struct gs_steps *s, struct gs_item *v, size_t n, uint64_t *wb,
			uint8_t *wodd)
{
	struct gs_report *r = p->r;
	uint64_t *b = NULL;
	uint8_t *odd = NULL;
	size_t group = 1, nb = begins(p, s, v, n, &b, &odd, &group);
	if (!nb) {
		free(b);
		return 0;
	}
	s->found = 1;
	s->steps = nb - 1;
	s->steady_from = b[0];
	s->steady_to = b[nb - 1];
	s->kept_last = p->steps->seen > GS_STEPS_RING;
	/* No warm-up is seen in a long run's events that were not kept, nor
	 * in the part of a step the kept ones begin in (a counted step may
	 * hold an evaluation: longer than the next). */
	s->searched_from = s->kept_last && n && v[0].start > r->t_first ? v[0].start : r->t_first;
	int mid_step = s->kept_last && (odd || (nb > 1 && b[0] - s->searched_from <= b[1] - b[0]));
	s->warmup_ns = b[0] > s->searched_from && !mid_step ? b[0] - s->searched_from : 0;
	size_t k1, k0 = window_of(v, n, b, nb, odd, &k1, &s->odd_steps, &s->odd_replayed);
	if (odd) { /* the phases of the window's first step of the commonest */
		size_t k = k0;
		while (k + 1 < k1 && odd[k])
			k++;
		char head[128];
		if (group > 1)
			snprintf(head, sizeof(head), "PyTorch's optimizer steps, %zu counted a step: ", group);
		else
			snprintf(head, sizeof(head), "PyTorch's optimizer steps: ");
		gs_bounds_describe(r, v, n, b[k], b[k + 1], head, s->what, sizeof(s->what));
	}
	s->window = k1 - k0 - s->odd_replayed;
	memcpy(wb, b + k0, (k1 - k0 + 1) * sizeof(*wb));
	for (size_t k = k0; odd && s->odd_replayed && k < k1; k++)
		wodd[k - k0] = odd[k];
	struct gs_replay w = { .ta = wb[0], .tb = wb[k1 - k0], .bounds = wb, .steps = k1 - k0,
			       .odd = s->odd_replayed ? wodd : NULL };
	s->step_ns = window_step(v, n, &w, s->window, &s->gpu_ns);
	/* A step is no shorter than its GPU work (with odd steps told apart,
	 * the span is the host's: an evaluation's wait may hold the training
	 * steps' queued work). */
	if (s->odd_replayed && s->step_ns < s->gpu_ns / s->window)
		s->step_ns = s->gpu_ns / s->window;
	free(b);
	free(odd);
	return k1 - k0;
}

/* The window replayed as it ran, then with each change: the model's own
 * step, and what each change saves a step, with the calls it changes. */
static void replay_changes(const struct gs_report *r, struct gs_steps *s, const struct gs_replay *rp_)
{
	struct gs_replay rp = *rp_;
	rp.ahead = gs_replay_overlaps(&rp); /* once: every replay the same model */
	const struct gs_item *v = rp.it;
	size_t n = rp.n;
	uint64_t base = gs_replay_run(&rp, GS_CH_NONE);
	s->model_ns = base / s->window;
	/* Taking tracing's cost off, a replay is the run or faster (every trace
	 * of the GPU machine's: 0.52-1.00 of it); slower, it is not the run
	 * (threads that call at once share its one host clock): no replays. */
	s->replay_off = s->model_ns > s->step_ns + s->step_ns / 10;
	for (int ch = GS_CH_PIN; ch < GS_CH_COUNT; ch++) {
		struct gs_step_change *c = &s->change[ch];
		uint64_t t = gs_replay_run(&rp, (enum gs_change)ch);
		if (ch == GS_CH_WORKERS) {
			/* Workers that keep up, where the main process loads:
			 * each loads a batch in the data phase's work (and, a
			 * DataLoader's, its own part of the handoff), the step
			 * taking what the replay leaves. */
			uint64_t step = t / s->window, own = c->after_ns + (rp.handoff_ns ? GS_LOADER_WORKER_NS : 0);
			if (rp.data_phase && c->after_ns && !r->loader_workers && step)
				c->workers = (own + step - 1) / step;
			/* N workers load a batch every data-work / N at best (their
			 * own part of the handoff aside: a bound): with
			 * the CPUs the process could use known (the trace's header),
			 * less the one the step keeps (one CPU: no worker), the
			 * step is no shorter than that. */
			uint64_t floor = r->proc.cpus > 1 ? c->after_ns * s->window / (r->proc.cpus - 1)
					 : r->proc.cpus == 1 ? base : 0;
			if (t < floor) {
				t = floor;
				c->bound = 1;
			}
		}
		c->save_ns = gs_diff_per(base, t, s->window); /* never more than the step: */
		c->save_ns = c->save_ns < (int64_t)s->step_ns ? c->save_ns : (int64_t)s->step_ns;
		for (size_t i = 0; i < n; i++) {
			const struct gs_item *x = &v[i];
			if (!gs_replay_counts(&rp, x->start) || x->what != GS_IT_CALL)
				continue;
			if (ch == GS_CH_PIN && gs_replay_pinnable(x))
				s->pinnable[x->dir == GSPY_DIR_d2h]++;
			c->count += (ch == GS_CH_PIN && gs_replay_pinnable(x)) ||
				    (ch == GS_CH_POOL && gs_replay_poolable(x)) ||
				    (ch == GS_CH_GRAPH && x->kind == GSPY_KIND_launch && !gspy_api_graph_launch(x->api)) ||
				    (ch == GS_CH_WORKERS && rp.data_phase && x->phase == rp.data_phase);
		}
	}
	free(rp.ahead);
}

/* The steady steps' own host time a step, by kind: what a bound from the
 * run's totals may claim a step without GPU records (steps.h). */
static void steady_own(const struct gs_report *r, struct gs_steps *s, const struct gs_item *v, size_t n,
		       const struct gs_replay *rp)
{
	/* The launch path: launch calls, and the short gaps before them (a
	 * framework's dispatch; replay.c's rule for what a graph leaves out). */
	for (size_t i = 0, prev = SIZE_MAX; i < n; i++) {
		if (v[i].what != GS_IT_CALL || !gs_replay_counts(rp, v[i].start))
			continue;
		uint64_t d = v[i].end - v[i].start;
		if (v[i].kind == GSPY_KIND_launch && !gspy_api_graph_launch(v[i].api)) {
			s->launch_path_ns += d;
			if (prev != SIZE_MAX && v[i].start > v[prev].end && v[i].start - v[prev].end <= 8 * rp->launch_ns)
				s->launch_path_ns += v[i].start - v[prev].end;
		}
		if (gs_replay_waits(&v[i]))
			s->wait_host_ns += d;
		if (v[i].kind == GSPY_KIND_copy && v[i].mem != GSPY_MEM_pinned &&
		    (v[i].dir == GSPY_DIR_h2d || v[i].dir == GSPY_DIR_d2h))
			s->pageable_host_ns[v[i].dir == GSPY_DIR_d2h] += d;
		if (gs_replay_poolable(&v[i]))
			s->alloc_host_ns += d;
		prev = i;
	}
	/* The data phases' time (named so, as diagnose.c's starvation takes
	 * them): a phase's items are its begins, so each runs to the next
	 * top-level phase's begin or the window's end (time outside phases
	 * between the two counts too: a bound's cut, never below the data). */
	for (size_t i = 0, from = SIZE_MAX; i <= n; i++) {
		int phase = i < n && v[i].what == GS_IT_PHASE && v[i].start < rp->tb;
		if (!phase && i < n)
			continue;
		uint64_t to = i < n ? v[i].start : rp->tb;
		if (from != SIZE_MAX && to > v[from].start)
			s->data_host_ns += to - v[from].start;
		from = SIZE_MAX;
		if (phase && gs_replay_counts(rp, v[i].start) && v[i].phase < r->nphases &&
		    gs_data_phase(r->phases[v[i].phase].name))
			from = i;
	}
	uint64_t *per[] = { &s->launch_path_ns, &s->wait_host_ns, s->pageable_host_ns, s->pageable_host_ns + 1,
			    &s->alloc_host_ns, &s->data_host_ns };
	for (size_t k = 0; k < sizeof(per) / sizeof(*per); k++)
		*per[k] /= s->window;
}

/* Replays the window [ta, tb) as it ran and with each change: fills
 * r->steps' second part. */
static void replay_window(struct gs_pass *p, struct gs_steps *s, struct gs_item *v, size_t n, const uint64_t *wb,
			  const uint8_t *wodd, size_t span)
{
	uint64_t ta = wb[0], tb = wb[span];
	struct gs_report *r = p->r;
	struct gs_replay rp = { .it = v, .n = n, .ta = ta, .tb = tb, .bounds = wb, .steps = span,
				.odd = s->odd_replayed ? wodd : NULL, .fuse = 10,
				.wait_every = GS_WAIT_EVERY, .node_gap_ns = 300 }; /* docs/design.md#replay */
	/* The window's launches' stacks, graph launches' too (a JAX step is
	 * one: host_bound says where it is dispatched; launch_bound's steps
	 * launch kernels one by one). */
	uint32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
	size_t nids = 0;
	for (size_t i = 0; i < n; i++)
		if (gs_replay_counts(&rp, v[i].start)) {
			int launch = v[i].what == GS_IT_CALL && v[i].kind == GSPY_KIND_launch;
			int graph = launch && gspy_api_graph_launch(v[i].api);
			s->launches += launch && !graph;
			s->graph_launches += graph;
			if (launch && v[i].stack_id && ids)
				ids[nids++] = v[i].stack_id;
			if (v[i].what == GS_IT_PHASE && !rp.data_phase && v[i].phase < r->nphases &&
			    gs_data_phase(r->phases[v[i].phase].name))
				rp.data_phase = v[i].phase;
		}
	gs_sites_step_line(&r->sites, p->in, ids, nids, s->launch_where, sizeof(s->launch_where));
	free(ids);
	s->gpu_ns /= s->window;
	s->launches /= s->window;
	s->graph_launches = (s->graph_launches + s->window / 2) / s->window; /* rounded: a graph in half the steps counts */
	gs_framework_detect(r);
	rp.framework = r->framework == GS_FW_PYTORCH || r->framework == GS_FW_JAX;
	rp.copy_syncs = r->framework == GS_FW_PYTORCH;
	rp.handoff_ns = s->handoff_ns; /* find(): the loop's DataLoader, where the helper marked it */
	if (!(rp.launch_ns = gs_replay_median_launch(v, n, rp.ta, rp.tb)))
		rp.launch_ns = 5000;
	rp.pinned_bps = s->pinned_bps = pinned_bandwidth(r, v, n, &s->pinned_from);
	/* What tracing added to each call (docs/measurements.md's overhead tables:
	 * a record ~300 ns; with CUPTI, a launch-bound loop of ~41 kernels a
	 * 1.1 ms step ran at 0.83-0.88 of untraced: ~4 us a GPU record). */
	rp.record_ns = GS_RECORD_COST_NS;
	rp.cupti_ns = r->gpu_timing == GSPY_GPU_TIMING_cupti ? 4000 : 0;
	/* A graph launch without CUPTI; what XLA's traced under it keep (docs/design.md#replay). */
	rp.graph_node_ns = 200, rp.graph_base_ns = 2200;
	rp.graph_keep_pm = r->framework == GS_FW_JAX ? 120 : 0, rp.graph_beyond_pm = rp.graph_keep_pm ? 300 : 0;
	rp.stack_ns = gs_replay_mean_walk(v, n, r->proc.stacks_taken, r->proc.stacks_ns);
	steady_own(r, s, v, n, &rp);
	/* The data phase's own host work, a step: the gaps before its calls,
	 * from when it began. */
	uint64_t data_from = 0, prev_end = 0;
	for (size_t i = 0; rp.data_phase && i < n; i++) {
		if (v[i].what == GS_IT_PHASE && v[i].phase == rp.data_phase)
			data_from = v[i].start;
		if (v[i].what != GS_IT_CALL)
			continue;
		uint64_t from = data_from > prev_end ? data_from : prev_end;
		if (v[i].phase == rp.data_phase && gs_replay_counts(&rp, v[i].start) && v[i].start > from)
			s->change[GS_CH_WORKERS].after_ns += v[i].start - from;
		if (v[i].end > prev_end)
			prev_end = v[i].end;
	}
	s->change[GS_CH_WORKERS].after_ns /= s->window;
	replay_changes(r, s, &rp);
	s->change[GS_CH_NOWAIT].count = 0;
	waits(p, v, n, &rp, &s->change[GS_CH_NOWAIT], s->window);
	if (rp.data_phase)
		s->change[GS_CH_WORKERS].count = s->change[GS_CH_WORKERS].count ? s->change[GS_CH_WORKERS].count : 1;
	s->change[GS_CH_FUSE].count = 1;
}

/* Finds the step and replays its window: fills r->steps. */
static void find(struct gs_pass *p, struct gs_steps *s, struct gs_item *v, size_t n)
{
	uint64_t *wb = xcalloc(WINDOW_MAX + 1, sizeof(*wb));
	uint8_t *wodd = xcalloc(WINDOW_MAX, 1);
	size_t span = find_step(p, s, v, n, wb, wodd);
	if (span) {
		/* The loop's DataLoader, where the helper marked where each was
		 * made: its workers, not the most any loader had. */
		const struct gs_loader *l = gs_loader_at(p->r, s->steady_from);
		if (l)
			p->r->loader_workers = l->workers;
		/* A batch its workers load still reaches the step through the
		 * main process (none is measured for other loaders). */
		s->handoff_ns = l ? GS_LOADER_HANDOFF_NS : 0;
		replay_window(p, s, v, n, wb, wodd, span);
		once_costs(p, s, v, n);
	}
	free(wb);
	free(wodd);
}

void gs_steps_finish(struct gs_pass *p)
{
	struct gs_step_ring *g = p->steps;
	struct gs_steps *s = p->r->steps = xcalloc(1, sizeof(*s));
	if (g) {
		find(p, s, linear(g), g->n);
		free(g->v);
		free(g);
		p->steps = NULL;
	}
}

void gs_steps_free(struct gs_report *r)
{
	free(r->steps);
	r->steps = NULL;
}
