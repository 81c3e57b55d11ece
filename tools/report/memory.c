/* SPDX-License-Identifier: MIT */
/*
 * The memory section: device memory reserved and its peak, allocation
 * churn after warm-up, and the memory facts of memory.h (an
 * out-of-memory failure, growth step after step); the text's "Memory"
 * lines and --json's "memory". Its diagnoses are diagnose.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "report/memory.h"
#include "report/pass.h"
#include "report/report.h"
#include "report/section.h"
#include "report/series.h"
#include "util/units.h"
#include "util/xalloc.h"

/* CUDA_ERROR_OUT_OF_MEMORY and cudaErrorMemoryAllocation are both 2. */
#define OUT_OF_MEMORY 2

/* Device memory reserved by the process: device and managed allocations and
 * VMM physical allocations, less their frees. */
static int counts_as_reserved(const struct gs_ev *ev)
{
	return ev->mem == GSPY_MEM_device || ev->mem == GSPY_MEM_managed;
}

static void track_memory(struct gs_pass *p, const struct gs_ev *ev)
{
	struct gs_report *r = p->r;
	if (ev->result != 0 || !counts_as_reserved(ev))
		return;
	int is_alloc = ev->kind == GSPY_KIND_alloc;
	if (!is_alloc && ev->kind != GSPY_KIND_free)
		return;
	if (ev->device >= 0 && ev->device < GSPY_DEVICES && r->proc.device_mem[ev->device])
		r->device_total = r->proc.device_mem[ev->device];
	r->reserved = gs_add_bytes(r->reserved, ev->bytes, is_alloc);
	gs_series_reserved(r->series, ev->end_ns, r->reserved);
	if (r->reserved > r->peak_reserved) {
		r->peak_reserved = r->reserved;
		r->peak_t = ev->end_ns;
		p->peak_snapshot = 1; /* taken by the sites once they have this call (sites.c) */
	}
	/* Allocation churn: device allocations and frees after warm-up (both
	 * rules, warm_up). */
	/* A free of nothing (cublasCreate's cudaFree(0): it starts the
	 * context) is no allocation's end. */
	int nothing = !is_alloc && !ev->addr && !ev->bytes;
	for (int i = 0; i < 2 && !nothing; i++) {
		struct gs_churn *c = &r->churn[i];
		if (!c->warm)
			continue;
		c->turns += is_alloc && c->last_free;
		c->last_free = !is_alloc;
		c->allocs += is_alloc;
		c->frees += !is_alloc;
		c->alloc_bytes += is_alloc ? ev->bytes : 0;
		c->host_ns += ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
	}
}

/* Warm-up ends at t for one of the churn's two rules: [0] a phase's second
 * occurrence begins, [1] the first fifth of the events is past. */
static void warm_up(struct gs_churn *c, uint64_t t)
{
	c->warm = 1;
	c->from_ns = t;
}

static void mem_failed(struct gs_report *r, struct gs_input *in, const struct gs_ev *ev, size_t cur)
{
	struct gs_oom *o = &r->oom;
	if (ev->kind != GSPY_KIND_alloc || ev->result != OUT_OF_MEMORY ||
	    (ev->mem != GSPY_MEM_device && ev->mem != GSPY_MEM_managed))
		return;
	if (o->n++) {
		if (o->retry == 0 && ev->bytes == o->bytes)
			o->retry = -1; /* the retry failed too */
		return;
	}
	o->t_ns = ev->start_ns;
	o->bytes = ev->bytes;
	o->api = gs_api_name(ev->api);
	o->reserved = r->reserved;
	if (cur) {
		o->phase = xstrdup(r->phases[cur].name);
		o->phase_n = r->phases[cur].count;
	}
	char buf[16384];
	if (gs_sites_frames(&r->sites, in, ev, buf, sizeof(buf)))
		o->frames = xstrdup(buf);
	gs_sites_snapshot(&r->sites, GS_SNAP_OOM);
}

/* After track_memory: the retry of a failed allocation. */
static void mem_event(struct gs_report *r, const struct gs_ev *ev)
{
	struct gs_oom *o = &r->oom;
	if (!o->n || o->retry || ev->result != 0)
		return;
	if (ev->kind == GSPY_KIND_free && (ev->mem == GSPY_MEM_device || ev->mem == GSPY_MEM_managed)) {
		o->freed_n++;
		o->freed_bytes += ev->bytes;
	} else if (ev->kind == GSPY_KIND_alloc && ev->bytes == o->bytes &&
		   (ev->mem == GSPY_MEM_device || ev->mem == GSPY_MEM_managed)) {
		o->retry = 1;
	}
}

static void sample(struct gs_report *r, uint64_t t)
{
	struct gs_growth *g = &r->growth;
	gs_series_step(r->series, r, t, g->n == 0 ? (g->by_step ? 1 : r->phases[g->phase].count) : 0);
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 64;
		g->at = xrealloc(g->at, g->cap * sizeof(*g->at));
	}
	g->at[g->n++] = r->reserved;
	/* The sites: what each held at the second sample (the first is
	 * warm-up) and at the latest. */
	gs_sites_snapshot(&r->sites, g->n == 2 ? GS_SNAP_BASE | GS_SNAP_LAST : GS_SNAP_LAST);
}

/* A phase begins (p, at depth before it): maybe a step's sample. */
static void phase_begin(struct gs_report *r, const struct gs_ev *ev, size_t p, int depth)
{
	struct gs_growth *g = &r->growth;
	gs_series_phase_begin(r->series, r, p, depth);
	if (ev->has_step) { /* PyTorch's phases: a sample at each new step */
		if (!g->by_step || ev->step != g->last_step) {
			g->by_step = 1;
			g->last_step = ev->step;
			sample(r, ev->start_ns);
		}
		return;
	}
	if (g->by_step)
		return;
	/* Otherwise the step is the first top-level phase to begin a third
	 * time, sampled at each of its begins from then on, until another
	 * top-level phase has begun more often: then that one is the step,
	 * sampled anew (JAX runs a few one-off jitted functions three times or
	 * more before the step's). A compilation is never the step. */
	if (depth != 0 || r->phases[p].compile || r->phases[p].count < 3)
		return;
	if (!g->phase || (p != g->phase && r->phases[p].count > r->phases[g->phase].count)) {
		g->phase = p;
		g->n = 0;
	}
	if (p == g->phase)
		sample(r, ev->start_ns);
}

void gs_memory_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	struct gs_report *r = p->r;
	switch (feed) {
	case GS_FEED_EVENT: /* warm-up by the second rule: the first fifth of the events is past */
		if (!r->churn[1].warm && r->proc.events && r->nevents * 5 >= r->proc.events)
			warm_up(&r->churn[1], ev->start_ns);
		break;
	case GS_FEED_PHASE: /* by the first: a phase's second occurrence begins (timeline.c) */
		if (r->phases_repeat && !r->churn[0].warm)
			warm_up(&r->churn[0], ev->start_ns);
		phase_begin(r, ev, cur, p->phase_depth);
		break;
	case GS_FEED_HOST:
		track_memory(p, ev);
		mem_event(r, ev);
		break;
	case GS_FEED_FAILED:
		mem_failed(r, p->in, ev, cur);
		break;
	}
}

int gs_mem_leak(const struct gs_report *r, double *per_step, size_t *steps)
{
	const struct gs_growth *g = &r->growth;
	if (g->n < 6)
		return 0;
	/* From the second sample (the first step warms the caches up). */
	size_t ups = 0, moves = g->n - 2;
	for (size_t i = 2; i < g->n; i++) {
		if (g->at[i] < g->at[i - 1])
			return 0; /* memory came back: not a leak */
		ups += g->at[i] > g->at[i - 1];
	}
	int64_t grew = g->at[g->n - 1] - g->at[1];
	if (ups * 4 < moves * 3 || grew <= 0)
		return 0;
	*per_step = (double)grew / (double)moves;
	*steps = moves;
	return 1;
}

uint64_t gs_mem_steps(const struct gs_report *r)
{
	const struct gs_growth *g = &r->growth;
	if (g->by_step)
		return g->n;
	return g->phase ? r->phases[g->phase].count : 0;
}

void gs_memory_merge(struct gs_report *d, const struct gs_report *s)
{
	/* The first process's out-of-memory failure stands for the merge's. */
	if (s->oom.n && !d->oom.n) {
		d->oom = s->oom;
		d->oom.phase = s->oom.phase ? xstrdup(s->oom.phase) : NULL;
		d->oom.frames = s->oom.frames ? xstrdup(s->oom.frames) : NULL;
	}
	d->peak_reserved += s->peak_reserved; /* an upper bound across processes */
}

void gs_memory_free(struct gs_report *r)
{
	free(r->oom.phase);
	free(r->oom.frames);
	free(r->growth.at);
}

void gs_memory_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	char a[32], b[32];
	fprintf(f, "\n  %sMemory%s\n  allocations:", st->bold, st->reset);
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		if (r->total.alloc[i].count || i < 3)
			fprintf(f, " %s %llu (%s)%s", gs_alloc_names[i],
				(unsigned long long)r->total.alloc[i].count,
				gs_fmt_bytes(a, r->total.alloc[i].bytes),
				i + 1 < GS_ALLOC_KINDS && (r->total.alloc[i + 1].count || i + 1 < 3) ? "," : "");
	fprintf(f, r->total.alloc[GS_ALLOC_HOST].count ? "\n  frees %llu (%s)\n" : "; frees %llu (%s)\n",
		(unsigned long long)r->total.free.count,
		gs_fmt_bytes(b, r->total.free.bytes));
	fprintf(f, "  peak reserved device memory: %s", gs_fmt_bytes(a, (uint64_t)(r->peak_reserved > 0 ? r->peak_reserved : 0)));
	if (r->device_total)
		fprintf(f, " of %s (%.1f%%)", gs_fmt_bytes(b, r->device_total),
			100.0 * (double)r->peak_reserved / (double)r->device_total);
	if (r->nprocs > 1)
		fprintf(f, " (sum of the processes' peaks)");
	fprintf(f, "\n");
}

void gs_memory_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	(void)st;
	cJSON *m = cJSON_AddObjectToObject(o, "memory");
	cJSON_AddNumberToObject(m, "peak_reserved_bytes", (double)(r->peak_reserved > 0 ? r->peak_reserved : 0));
	if (r->device_total)
		cJSON_AddNumberToObject(m, "device_total_bytes", (double)r->device_total);
	else
		cJSON_AddNullToObject(m, "device_total_bytes");
}

