/* SPDX-License-Identifier: MIT */
/*
 * The phases section: per phase and in all, what the calls made in it
 * did and what the GPU work they launched took (struct gs_cats), its wall
 * time (the pass's timeline, timeline.c) and the GPU's idle time during
 * it; the phase table (the libraries' own ranges below it: frameworks.c)
 * and --json's "totals" and "phases".
 */
#include <stdlib.h>
#include <string.h>

#include "report/diag.h"
#include "report/pass.h"
#include "report/report.h"
#include "report/section.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "util/escape.h"

enum { PHASE_ROWS = 20 }; /* rows of the phase table, without --all */

static void agg_add(struct gs_agg *a, uint64_t bytes, uint64_t ns)
{
	a->count++;
	a->bytes += bytes;
	a->host_ns += ns;
}

static void gpu_add(struct gs_agg *a, uint64_t bytes, uint64_t ns)
{
	a->gpu_count++;
	a->gpu_bytes += bytes;
	a->gpu_ns += ns;
}

static int alloc_kind(unsigned mem)
{
	switch (mem) {
	case GSPY_MEM_pinned: return GS_ALLOC_PINNED;
	case GSPY_MEM_managed: return GS_ALLOC_MANAGED;
	case GSPY_MEM_host: return GS_ALLOC_HOST;
	}
	return GS_ALLOC_DEVICE;
}

static void add_event(struct gs_cats *c, const struct gs_ev *ev)
{
	uint64_t ns = ev->end_ns - ev->start_ns;
	switch (ev->kind) {
	case GSPY_KIND_launch: {
		agg_add(&c->launch, 0, ns);
		if (gspy_api_host_func(ev->api))
			agg_add(&c->host_fn, 0, ns);
		break;
	}
	case GSPY_KIND_copy: {
		int pinned = ev->mem == GSPY_MEM_pinned;
		unsigned d = ev->dir < GSPY_DIR_COUNT ? ev->dir : 0;
		agg_add(&c->copy[d][pinned], ev->bytes, ns);
		if (!ev->async)
			agg_add(&c->copy_sync[d][pinned], ev->bytes, ns);
		break;
	}
	case GSPY_KIND_memset:
		agg_add(&c->memset, ev->bytes, ns);
		break;
	case GSPY_KIND_alloc:
		agg_add(&c->alloc[alloc_kind(ev->mem)], ev->bytes, ns);
		break;
	case GSPY_KIND_free:
		agg_add(&c->free, ev->bytes, ns);
		break;
	case GSPY_KIND_sync:
		agg_add(&c->sync, 0, ns);
		break;
	default:
		break;
	}
}

/* A copy between the host's pageable memory and the device. */
static int pageable_copy(const struct gs_ev *ev)
{
	return ev->kind == GSPY_KIND_copy && ev->mem != GSPY_MEM_pinned &&
	       (ev->dir == GSPY_DIR_h2d || ev->dir == GSPY_DIR_d2h);
}

/* Each thread's last host call: was it a pageable copy? (A wait right
 * after one belongs to the copy: PyTorch waits for each copy from pageable
 * memory.) A small open-addressing table; threads past it are not followed. */
enum { LAST_CAP = 256 };
struct gs_last_call {
	uint32_t tid;
	uint8_t pageable_copy;
};

static struct gs_last_call *last_call(struct gs_last_call *t, uint32_t tid)
{
	for (uint32_t i = 0, k = tid * 2654435761u % LAST_CAP; i < LAST_CAP; i++, k = (k + 1) % LAST_CAP) {
		if (t[k].tid == tid)
			return &t[k];
		if (!t[k].tid) {
			t[k].tid = tid;
			return &t[k];
		}
	}
	return NULL;
}

/* A GPU record: its time to the phase that launched it, in its category;
 * and what the GPU did during each phase's wall time, to the phase open
 * when this work started (records arrive late, so the time is looked up). */
static void gpu_record(struct gs_pass *p, const struct gs_ev *ev, size_t ph)
{
	struct gs_report *r = p->r;
	uint64_t ns = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
	struct gs_cats *cs[2] = { &r->total, &r->phases[ph].c };
	for (int i = 0; i < 2; i++) {
		if (ev->kind == GSPY_KIND_gpu_kernel)
			gpu_add(&cs[i]->launch, 0, ns);
		else if (ev->kind == GSPY_KIND_gpu_memset)
			gpu_add(&cs[i]->memset, ev->bytes, ns);
		else
			gpu_add(&cs[i]->copy[ev->dir < GSPY_DIR_COUNT ? ev->dir : 0][ev->mem == GSPY_MEM_pinned],
				ev->bytes, ns);
	}
	r->phases[gs_timeline_at(p, ev->start_ns, gs_timeline_current(p))].gpu_busy_ns += ns;
}

void gs_phases_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	struct gs_report *r = p->r;
	if (feed == GS_FEED_SPAN) {
		r->phases[cur].span_ns += ev->gpu_ns;
		r->phases[cur].span_n++;
		return;
	}
	if (feed == GS_FEED_GPU) {
		gpu_record(p, ev, cur);
		return;
	}
	add_event(&r->total, ev);
	add_event(&r->phases[cur].c, ev);
	int pc = pageable_copy(ev);
	if (!p->last)
		p->last = calloc(LAST_CAP, sizeof(*p->last));
	struct gs_last_call *lc = ev->tid && p->last ? last_call(p->last, ev->tid) : NULL;
	if (lc) {
		if (ev->kind == GSPY_KIND_sync && lc->pageable_copy) {
			agg_add(&r->total.sync_after_pageable, 0, ev->end_ns - ev->start_ns);
			agg_add(&r->phases[cur].c.sync_after_pageable, 0, ev->end_ns - ev->start_ns);
		}
		lc->pageable_copy = (uint8_t)pc;
	}
	/* A framework's compilation uploads what it autotunes with: not a step's copy. */
	r->pageable_h2d_warm += r->phases_repeat && pc && ev->dir == GSPY_DIR_h2d && !r->phases[cur].compile;
	r->pageable_d2h_big += pc && ev->dir == GSPY_DIR_d2h && ev->bytes >= GS_PIN_BYTES;
}

void gs_phases_finish(struct gs_pass *p)
{
	free(p->last);
	p->last = NULL;
}

static void agg_merge(struct gs_agg *d, const struct gs_agg *s)
{
	d->count += s->count;
	d->bytes += s->bytes;
	d->host_ns += s->host_ns;
	d->gpu_count += s->gpu_count;
	d->gpu_bytes += s->gpu_bytes;
	d->gpu_ns += s->gpu_ns;
}

static void cats_merge(struct gs_cats *d, const struct gs_cats *s)
{
	const struct gs_agg *a = (const struct gs_agg *)s;
	struct gs_agg *b = (struct gs_agg *)d;
	for (size_t i = 0; i < sizeof(*s) / sizeof(struct gs_agg); i++)
		agg_merge(&b[i], &a[i]);
}

void gs_phases_merge(struct gs_report *d, const struct gs_report *s)
{
	cats_merge(&d->total, &s->total);
	d->pageable_h2d_warm += s->pageable_h2d_warm;
	d->pageable_d2h_big += s->pageable_d2h_big;
	for (size_t i = 0; i < s->nphases; i++) {
		size_t at = gs_report_phase(d, s->phases[i].name); /* may move d->phases */
		struct gs_phase_stat *p = &d->phases[at];
		p->count += s->phases[i].count;
		p->wall_ns += s->phases[i].wall_ns;
		p->gpu_busy_ns += s->phases[i].gpu_busy_ns;
		p->idle_host_ns += s->phases[i].idle_host_ns;
		if (s->phases[i].first_ns && (!p->first_ns || s->phases[i].first_ns < p->first_ns))
			p->first_ns = s->phases[i].first_ns;
		if (s->phases[i].last_ns > p->last_ns)
			p->last_ns = s->phases[i].last_ns;
		p->span_ns += s->phases[i].span_ns;
		p->span_n += s->phases[i].span_n;
		p->library |= s->phases[i].library;
		p->compile |= s->phases[i].compile;
		p->nvml_n += s->phases[i].nvml_n;
		p->util_sum += s->phases[i].util_sum;
		p->power_sum += s->phases[i].power_sum;
		p->sm_sum += s->phases[i].sm_sum;
		cats_merge(&p->c, &s->phases[i].c);
	}
}

void gs_phases_free(struct gs_report *r)
{
	for (size_t i = 0; i < r->nphases; i++)
		free(r->phases[i].name);
	free(r->phases);
	free(r->phase_ix);
}

static uint64_t alloc_count(const struct gs_cats *c)
{
	uint64_t n = c->free.count;
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		n += c->alloc[i].count;
	return n;
}

static uint64_t alloc_ns(const struct gs_cats *c)
{
	uint64_t n = c->free.host_ns;
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		n += c->alloc[i].host_ns;
	return n;
}

static uint64_t alloc_bytes(const struct gs_cats *c)
{
	uint64_t n = 0;
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		n += c->alloc[i].bytes;
	return n;
}

/* Kernels run: with CUPTI, the GPU's kernel records; else the launch calls
 * less host functions, a graph's launch counting as the kernels of its
 * nodes where they were seen. */
static uint64_t kernels_run(const struct gs_cats *c, const struct gs_style *st)
{
	if (st->gpu_mode && c->launch.gpu_count)
		return c->launch.gpu_count;
	return c->launch.count - c->host_fn.count - c->graph_launch.count + c->graph_kernel.count;
}

static void phase_row(FILE *f, const struct gs_style *st, const char *name, uint64_t count, uint64_t wall,
		      uint64_t busy, uint64_t span, const struct gs_cats *c)
{
	char a[32], b[32], d[32], e[32], g[32], h[32], k[32], m[32], n[32], q[32], nm[4 * 16 + 1];
	name = gs_term_line(nm, sizeof(nm), name, 16); /* one line: a newline would pass for a row */
	if (st->gpu_mode)
		fprintf(f, "  %-16s %5s %9s %7s %9s %9s %6s %9s %9s %8s\n", name,
			count ? gs_fmt_count(a, count) : "-", gs_fmt_ns(b, wall),
			gs_fmt_count(d, kernels_run(c, st)), gs_fmt_ns(e, c->launch.gpu_ns),
			gs_fmt_ns(g, c->launch.host_ns), gs_fmt_count(h, alloc_count(c)),
			gs_fmt_ns(m, alloc_ns(c)), gs_fmt_ns(n, c->sync.host_ns),
			gs_fmt_ns(k, wall > busy ? wall - busy : 0));
	else
		fprintf(f, "  %-16s %5s %9s %7s %9s %6s %9s %9s %9s %8s\n", name,
			count ? gs_fmt_count(a, count) : "-", gs_fmt_ns(b, wall),
			gs_fmt_count(d, kernels_run(c, st)), gs_fmt_ns(e, c->launch.host_ns),
			gs_fmt_count(h, alloc_count(c)), gs_fmt_bytes(k, alloc_bytes(c)),
			gs_fmt_ns(m, alloc_ns(c)), gs_fmt_ns(n, c->sync.host_ns),
			st->events_mode ? gs_fmt_ns(q, span) : "n/a");
}

static uint64_t total_busy(const struct gs_report *r)
{
	uint64_t b = 0;
	for (int d = 0; d < GSPY_DEVICES; d++)
		b += r->dev[d].busy_ns;
	return b;
}

static uint64_t total_span(const struct gs_report *r)
{
	uint64_t n = 0;
	for (size_t i = 0; i < r->nphases; i++)
		n += r->phases[i].span_ns;
	return n;
}

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

void gs_phases_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	if (st->gpu_mode)
		fprintf(f, "\n  %sPhases%s           %5s %9s %7s %9s %9s %6s %9s %9s %8s\n", st->bold, st->reset,
			"count", "wall", "kernels", "GPU time", "launch", "alloc", "alloc t", "sync",
			"GPU idle");
	else
		fprintf(f, "\n  %sPhases%s           %5s %9s %7s %9s %6s %9s %9s %9s %8s\n", st->bold, st->reset,
			"count", "wall", "kernels", "launch", "alloc", "allocated", "alloc t", "sync",
			st->events_mode ? "GPU span" : "GPU idle");
	/* At most PHASE_ROWS rows of the user's phases, in their order: the
	 * longest by wall time; the rest in one line (all with --all). */
	size_t users = 0, shown = 0;
	uint64_t cut = 0; /* the wall time a phase needs to be shown */
	for (size_t i = 1; i < r->nphases; i++) /* "(no phase)" aside */
		users += !r->phases[i].library;
	if (users > PHASE_ROWS && !st->all) {
		uint64_t *w = xcalloc(users, sizeof(*w));
		size_t k = 0;
		for (size_t i = 1; i < r->nphases; i++)
			if (!r->phases[i].library)
				w[k++] = r->phases[i].wall_ns;
		qsort(w, k, sizeof(*w), cmp_u64_desc);
		cut = w[PHASE_ROWS - 2];
		free(w);
	}
	uint64_t rest_n = 0, rest_wall = 0;
	for (size_t i = 0; i < r->nphases; i++) {
		const struct gs_phase_stat *p = &r->phases[i];
		if (p->library)
			continue; /* a library's range: below */
		if (i == 0 && !p->wall_ns && !p->c.launch.count && !alloc_count(&p->c) &&
		    !p->c.sync.count && r->nphases > 1)
			continue; /* an empty "(no phase)" row says nothing */
		if (cut && i && (p->wall_ns < cut || shown >= PHASE_ROWS - 1)) {
			rest_n++;
			rest_wall += p->wall_ns;
			continue;
		}
		shown += i > 0; /* "(no phase)" is always shown */
		phase_row(f, st, p->name, p->count, p->wall_ns, p->gpu_busy_ns, p->span_ns, &p->c);
	}
	phase_row(f, st, "total", 0, r->t_last - r->t_first, total_busy(r), total_span(r), &r->total);
	char w[32];
	if (rest_n)
		fprintf(f, "  ... and %llu more phases, %s of wall time in all (gpuspy report --all lists them)\n",
			(unsigned long long)rest_n, gs_fmt_ns(w, rest_wall));
	gs_library_ranges_print(f, r, st->all);
}

static cJSON *agg_json(const struct gs_agg *a, int with_bytes, const struct gs_style *st)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", (double)a->count);
	if (with_bytes)
		cJSON_AddNumberToObject(o, "bytes", (double)a->bytes);
	cJSON_AddNumberToObject(o, "host_ns", (double)a->host_ns);
	if (st->gpu_mode) {
		cJSON_AddNumberToObject(o, "gpu_ns", (double)a->gpu_ns);
		cJSON_AddNumberToObject(o, "gpu_count", (double)a->gpu_count);
		if (with_bytes)
			cJSON_AddNumberToObject(o, "gpu_bytes", (double)a->gpu_bytes);
	} else {
		cJSON_AddNullToObject(o, "gpu_ns");
	}
	return o;
}

static void cats_json(cJSON *o, const struct gs_cats *c, const struct gs_style *st)
{
	cJSON_AddItemToObject(o, "launch", agg_json(&c->launch, 0, st));
	cJSON *copy = cJSON_AddObjectToObject(o, "copy");
	for (int d = 1; d < GSPY_DIR_COUNT; d++) {
		cJSON *dir = cJSON_AddObjectToObject(copy, gs_dir_name((unsigned)d));
		if (d == GSPY_DIR_d2d || d == GSPY_DIR_p2p) { /* no host memory: one row */
			cJSON_AddItemToObject(dir, "device", agg_json(&c->copy[d][GS_PAGEABLE], 1, st));
			continue;
		}
		cJSON_AddItemToObject(dir, "pageable", agg_json(&c->copy[d][GS_PAGEABLE], 1, st));
		cJSON_AddItemToObject(dir, "pinned", agg_json(&c->copy[d][GS_PINNED], 1, st));
	}
	cJSON_AddItemToObject(o, "memset", agg_json(&c->memset, 1, st));
	cJSON *alloc = cJSON_AddObjectToObject(o, "alloc");
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		cJSON_AddItemToObject(alloc, gs_alloc_names[i], agg_json(&c->alloc[i], 1, st));
	cJSON_AddItemToObject(o, "free", agg_json(&c->free, 1, st));
	cJSON_AddItemToObject(o, "sync", agg_json(&c->sync, 0, st));
	cJSON_AddItemToObject(o, "sync_after_pageable", agg_json(&c->sync_after_pageable, 0, st));
	gs_graphs_json(o, c);
}

static cJSON *phases_json(const struct gs_report *r, const struct gs_style *st)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->nphases; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "name", r->phases[i].name);
		if (r->phases[i].library)
			cJSON_AddTrueToObject(p, "library");
		cJSON_AddNumberToObject(p, "count", (double)r->phases[i].count);
		cJSON_AddNumberToObject(p, "wall_ns", (double)r->phases[i].wall_ns);
		if (st->gpu_mode) {
			uint64_t w = r->phases[i].wall_ns, b = r->phases[i].gpu_busy_ns;
			cJSON_AddNumberToObject(p, "gpu_busy_ns", (double)b);
			cJSON_AddNumberToObject(p, "gpu_idle_ns", (double)(w > b ? w - b : 0));
		} else {
			cJSON_AddNullToObject(p, "gpu_idle_ns");
		}
		if (st->events_mode) {
			cJSON_AddNumberToObject(p, "gpu_span_ns", (double)r->phases[i].span_ns);
			cJSON_AddNumberToObject(p, "gpu_span_intervals", (double)r->phases[i].span_n);
		}
		if (r->phases[i].nvml_n) {
			const struct gs_phase_stat *ph = &r->phases[i];
			double n = (double)ph->nvml_n;
			cJSON *t = cJSON_AddObjectToObject(p, "nvml");
			cJSON_AddNumberToObject(t, "samples", n);
			cJSON_AddNumberToObject(t, "util_gpu_mean", ph->util_sum / n);
			cJSON_AddNumberToObject(t, "power_w_mean", ph->power_sum / n);
			cJSON_AddNumberToObject(t, "sm_mhz_mean", ph->sm_sum / n);
		}
		cats_json(p, &r->phases[i].c, st);
		cJSON_AddItemToArray(a, p);
	}
	return a;
}


void gs_phases_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	cJSON *t = cJSON_AddObjectToObject(o, "totals");
	cats_json(t, &r->total, st);
	cJSON_AddItemToObject(o, "phases", phases_json(r, st));
}
