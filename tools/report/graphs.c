/* SPDX-License-Identifier: MIT */
/*
 * CUDA graphs in the report: what each launch of an executable graph ran,
 * from the nodes gpuspy read back when the graph was instantiated (the
 * graph record and the node_* records after it), added to the phase that
 * launched it; and the calls captured into graphs, which did not run.
 */
#include <stdlib.h>
#include <string.h>

#include "report/pass.h"
#include "report/report.h"
#include "report/section.h"
#include "util/units.h"
#include "util/xalloc.h"

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	return x ^ (x >> 33);
}

/* An executable graph's nodes, as last instantiated or updated. */
struct gs_graph_exec {
	uint64_t exec;      /* handle, 0 = free slot */
	uint64_t kernels, memsets, memset_bytes, allocs, alloc_bytes, frees, free_bytes;
	uint64_t copies[GSPY_DIR_COUNT][2], copy_bytes[GSPY_DIR_COUNT][2];
};

/* The pass's executable graphs, by handle (open addressing). */
struct gs_graph_pass {
	struct gs_graph_exec *v;
	size_t n, cap;
};

/* The contents of executable graph `exec`, a new entry if `make`. */
static struct gs_graph_exec *graph_exec(struct gs_graph_pass *s, uint64_t exec, int make)
{
	if (!exec)
		return NULL;
	if (make && (s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct gs_graph_exec *t = xcalloc(cap, sizeof(*t));
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->v[i].exec)
				continue;
			size_t k = (size_t)(hash64(s->v[i].exec) & (cap - 1));
			while (t[k].exec)
				k = (k + 1) & (cap - 1);
			t[k] = s->v[i];
		}
		free(s->v);
		s->v = t;
		s->cap = cap;
	}
	if (!s->cap)
		return NULL;
	for (size_t k = (size_t)(hash64(exec) & (s->cap - 1));; k = (k + 1) & (s->cap - 1)) {
		if (s->v[k].exec == exec)
			return &s->v[k];
		if (!s->v[k].exec) {
			if (!make)
				return NULL;
			s->n++;
			s->v[k].exec = exec;
			return &s->v[k];
		}
	}
}

/* A graph instantiated or updated (its nodes follow it), one of its
 * nodes, or a launch of it. */
static void graph_event(struct gs_report *r, struct gs_graph_pass *s, const struct gs_ev *ev, size_t cur)
{
	struct gs_graph_exec *g = graph_exec(s, ev->stream, ev->kind != GSPY_KIND_launch);
	if (ev->kind == GSPY_KIND_graph) {
		if (g)
			*g = (struct gs_graph_exec){ .exec = ev->stream };
		return;
	}
	if (ev->kind != GSPY_KIND_launch && !g)
		return;
	if (ev->kind == GSPY_KIND_node_kernel) {
		g->kernels++;
	} else if (ev->kind == GSPY_KIND_node_memset) {
		g->memsets++;
		g->memset_bytes += ev->bytes;
	} else if (ev->kind == GSPY_KIND_node_alloc) {
		g->allocs++;
		g->alloc_bytes += ev->bytes;
	} else if (ev->kind == GSPY_KIND_node_free) {
		g->frees++;
		g->free_bytes += ev->bytes;
	} else if (ev->kind == GSPY_KIND_node_copy) {
		unsigned d = ev->dir < GSPY_DIR_COUNT ? ev->dir : 0, p = ev->mem == GSPY_MEM_pinned;
		g->copies[d][p]++;
		g->copy_bytes[d][p] += ev->bytes;
	}
	if (ev->kind != GSPY_KIND_launch)
		return;
	g = graph_exec(s, ev->addr, 0);
	struct gs_cats *cs[2] = { &r->total, &r->phases[cur].c };
	for (int i = 0; i < 2; i++) {
		if (!g) {
			cs[i]->graph_unseen.count++;
			continue;
		}
		cs[i]->graph_launch.count++;
		cs[i]->graph_kernel.count += g->kernels;
		cs[i]->graph_memset.count += g->memsets;
		cs[i]->graph_memset.bytes += g->memset_bytes;
		cs[i]->graph_alloc.count += g->allocs;
		cs[i]->graph_alloc.bytes += g->alloc_bytes;
		cs[i]->graph_free.count += g->frees;
		cs[i]->graph_free.bytes += g->free_bytes;
		/* A graph's copies and memsets are the run's copies and memsets,
		 * in its tables and totals as its kernels are (no host call of
		 * their own: no host time); the graph section says which. */
		cs[i]->memset.count += g->memsets;
		cs[i]->memset.bytes += g->memset_bytes;
		for (int d = 0; d < GSPY_DIR_COUNT; d++)
			for (int p = 0; p < 2; p++) {
				cs[i]->graph_copy[d][p].count += g->copies[d][p];
				cs[i]->graph_copy[d][p].bytes += g->copy_bytes[d][p];
				cs[i]->copy[d][p].count += g->copies[d][p];
				cs[i]->copy[d][p].bytes += g->copy_bytes[d][p];
			}
	}
}


/* The pass's graph records and launches, the GPU records of what graphs
 * ran, and the calls captured into graphs. */
void gs_graphs_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	struct gs_report *r = p->r;
	if (feed == GS_FEED_CAPTURED) {
		r->captured[ev->kind < GSPY_KIND_COUNT ? ev->kind : 0]++;
	} else if (feed == GS_FEED_GPU) {
		if (ev->kind == GSPY_KIND_gpu_kernel || !ev->graph_id)
			return;
		if (ev->kind == GSPY_KIND_gpu_copy) {
			r->graph_gpu_copies++;
			r->graph_gpu_copy_bytes += ev->bytes;
		} else {
			r->graph_gpu_memsets++;
		}
	} else {
		if (!p->graphs)
			p->graphs = xcalloc(1, sizeof(*p->graphs));
		graph_event(r, p->graphs, ev, cur);
	}
}

void gs_graphs_finish(struct gs_pass *p)
{
	if (p->graphs)
		free(p->graphs->v);
	free(p->graphs);
	p->graphs = NULL;
}

void gs_graphs_merge(struct gs_report *d, const struct gs_report *s)
{
	for (int k = 0; k < GSPY_KIND_COUNT; k++)
		d->captured[k] += s->captured[k];
	d->graph_gpu_copies += s->graph_gpu_copies;
	d->graph_gpu_copy_bytes += s->graph_gpu_copy_bytes;
	d->graph_gpu_memsets += s->graph_gpu_memsets;
}

static uint64_t copies(const struct gs_cats *c, uint64_t *bytes)
{
	uint64_t n = 0;
	*bytes = 0;
	for (int d = 0; d < GSPY_DIR_COUNT; d++)
		for (int p = 0; p < 2; p++) {
			n += c->graph_copy[d][p].count;
			*bytes += c->graph_copy[d][p].bytes;
		}
	return n;
}

static int any(const struct gs_cats *c)
{
	uint64_t b;
	return c->graph_kernel.count || c->graph_memset.count || c->graph_unseen.count || c->graph_alloc.count ||
	       copies(c, &b);
}

void gs_graphs_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	(void)st;
	char a[32], b[32], c[32], d[32], e[32], g[32];
	const struct gs_cats *t = &r->total;
	uint64_t cb, n = copies(t, &cb);
	if (t->graph_kernel.count || t->graph_memset.count || n)
		fprintf(f, "  CUDA graphs ran %s kernel%s, %s cop%s (%s) and %s memset%s (%s), as instantiated\n",
			gs_fmt_count(a, t->graph_kernel.count), gs_pl(t->graph_kernel.count, "", "s"),
			gs_fmt_count(b, n), gs_pl(n, "y", "ies"), gs_fmt_bytes(c, cb),
			gs_fmt_count(d, t->graph_memset.count), gs_pl(t->graph_memset.count, "", "s"),
			gs_fmt_bytes(e, t->graph_memset.bytes));
	if (t->graph_alloc.count || t->graph_free.count)
		fprintf(f, "    and their memory nodes made %s allocation%s (%s) and %s free%s\n",
			gs_fmt_count(a, t->graph_alloc.count), gs_pl(t->graph_alloc.count, "", "s"),
			gs_fmt_bytes(b, t->graph_alloc.bytes), gs_fmt_count(c, t->graph_free.count),
			gs_pl(t->graph_free.count, "", "s"));
	if (r->graph_gpu_copies || r->graph_gpu_memsets)
		fprintf(f, "    on the GPU (CUPTI), graphs ran %s cop%s (%s) and %s memset%s\n",
			gs_fmt_count(a, r->graph_gpu_copies), gs_pl(r->graph_gpu_copies, "y", "ies"),
			gs_fmt_bytes(b, r->graph_gpu_copy_bytes), gs_fmt_count(c, r->graph_gpu_memsets),
			gs_pl(r->graph_gpu_memsets, "", "s"));
	if (t->graph_unseen.count)
		fprintf(f, "  %s CUDA graph launch%s of graphs whose nodes were not seen (instantiated before "
			"gpuspy was loaded)\n", gs_fmt_count(g, t->graph_unseen.count),
			gs_pl(t->graph_unseen.count, "", "es"));
	/* Captured calls, by kind, the kinds that have any. */
	char line[256];
	size_t at = 0;
	for (int i = 0; i < GSPY_KIND_COUNT; i++) {
		if (!r->captured[i] || at >= sizeof(line))
			continue;
		at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%s %s", at ? ", " : "",
				       gs_fmt_count(a, r->captured[i]), gs_kind_name((unsigned)i));
	}
	if (at)
		fprintf(f, "  Captured into CUDA graphs, so run only as their nodes: %s\n", line);
}

static cJSON *count_bytes(uint64_t count, uint64_t bytes)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", (double)count);
	cJSON_AddNumberToObject(o, "bytes", (double)bytes);
	return o;
}

void gs_graphs_json(cJSON *o, const struct gs_cats *c)
{
	if (!any(c))
		return;
	cJSON *g = cJSON_AddObjectToObject(o, "graphs");
	cJSON_AddNumberToObject(g, "kernels", (double)c->graph_kernel.count);
	cJSON *cp = cJSON_AddObjectToObject(g, "copy");
	for (int d = 1; d < GSPY_DIR_COUNT; d++) {
		const struct gs_agg *x = c->graph_copy[d];
		if (!x[0].count && !x[1].count)
			continue;
		cJSON *dir = cJSON_AddObjectToObject(cp, gs_dir_name((unsigned)d));
		if (d == GSPY_DIR_d2d || d == GSPY_DIR_p2p) {
			cJSON_AddItemToObject(dir, "device", count_bytes(x[0].count, x[0].bytes));
			continue;
		}
		cJSON_AddItemToObject(dir, "pageable", count_bytes(x[0].count, x[0].bytes));
		cJSON_AddItemToObject(dir, "pinned", count_bytes(x[1].count, x[1].bytes));
	}
	cJSON_AddItemToObject(g, "memset", count_bytes(c->graph_memset.count, c->graph_memset.bytes));
	cJSON_AddItemToObject(g, "alloc", count_bytes(c->graph_alloc.count, c->graph_alloc.bytes));
	cJSON_AddItemToObject(g, "free", count_bytes(c->graph_free.count, c->graph_free.bytes));
	cJSON_AddNumberToObject(g, "launches_unseen", (double)c->graph_unseen.count);
}

void gs_captured_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	(void)st;
	cJSON *c = NULL;
	for (int i = 0; i < GSPY_KIND_COUNT; i++) {
		if (!r->captured[i])
			continue;
		if (!c)
			c = cJSON_AddObjectToObject(o, "captured");
		cJSON_AddNumberToObject(c, gs_kind_name((unsigned)i), (double)r->captured[i]);
	}
}
