/* SPDX-License-Identifier: MIT */
/*
 * Where the CUDA calls come from (stacks.h): the calls summed by stack
 * while the pass runs, then, at its end, those sums as a tree of frames
 * (a frame named as in collapsed stacks: util/escape.c), one a process
 * and one of the whole, for the flame graph of `report --html`. The same
 * sums feed `export --format collapsed|speedscope` (render/flame.c).
 * Memory grows with the distinct stacks and their frames, never with the
 * events; the page gets the largest GS_FLAME_NODES frames of a tree.
 */
#include <stdlib.h>
#include <string.h>

#include "report/pass.h"
#include "report/section.h"
#include "report/stacks.h"
#include "util/escape.h"
#include "util/xalloc.h"

int gs_flame_on;

static struct gs_stack_sum *sum_slot(struct gs_stack_sums *s, uint32_t id)
{
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct gs_stack_sums t = { xcalloc(cap, sizeof(*t.v)), 0, cap };
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i].id)
				*sum_slot(&t, s->v[i].id) = s->v[i];
		t.n = s->n;
		free(s->v);
		*s = t;
	}
	size_t k = (id * 2654435761u) & (s->cap - 1);
	while (s->v[k].id && s->v[k].id != id)
		k = (k + 1) & (s->cap - 1);
	if (!s->v[k].id) {
		s->v[k].id = id;
		s->n++;
	}
	return &s->v[k];
}

void gs_stack_sums_add(struct gs_stack_sums *s, const struct gs_ev *ev, struct gs_flame_cover *c)
{
	if (ev->kind >= GSPY_KIND_phase_begin || ev->result != 0)
		return;
	uint64_t ns = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
	c->calls++;
	c->host_ns += ns;
	if (!ev->stack_id)
		return;
	struct gs_stack_sum *x = sum_slot(s, ev->stack_id);
	x->calls++;
	x->host_ns += ns;
	if (ev->kind == GSPY_KIND_alloc && ev->mem != GSPY_MEM_host)
		x->bytes += ev->bytes;
}

void gs_stack_sums_free(struct gs_stack_sums *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static uint32_t *name_slot(struct gs_names *t, const char *name)
{
	size_t k = name_hash(name) & (t->cap - 1);
	while (t->tab[k] && strcmp(t->v[t->tab[k] - 1], name))
		k = (k + 1) & (t->cap - 1);
	return &t->tab[k];
}

uint32_t gs_names_add(struct gs_names *t, const char *name, int *added)
{
	if (2 * (t->n + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		free(t->tab);
		t->tab = xcalloc(cap, sizeof(*t->tab));
		t->cap = cap;
		for (size_t i = 0; i < t->n; i++)
			*name_slot(t, t->v[i]) = (uint32_t)i + 1;
	}
	uint32_t *at = name_slot(t, name);
	if (added)
		*added = !*at;
	if (*at)
		return *at - 1;
	if (!(t->n & (t->n - 1))) /* 0, 1, 2, 4, ...: room for twice as many */
		t->v = xrealloc(t->v, (t->n ? 2 * t->n : 1) * sizeof(*t->v));
	t->v[t->n] = xstrdup(name);
	*at = (uint32_t)++t->n;
	return (uint32_t)t->n - 1;
}

void gs_names_free(struct gs_names *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	free(t->tab);
	memset(t, 0, sizeof(*t));
}

static size_t node_hash(uint32_t parent, uint32_t name, size_t cap)
{
	return (size_t)(((uint64_t)parent << 32 | name) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static uint32_t *node_slot(struct gs_flame *f, uint32_t parent, uint32_t name)
{
	size_t k = node_hash(parent, name, f->tcap);
	while (f->tab[k] && (f->v[f->tab[k] - 1].parent != parent || f->v[f->tab[k] - 1].name != name))
		k = (k + 1) & (f->tcap - 1);
	return &f->tab[k];
}

/* The frame named name under parent, made when new. */
static uint32_t child(struct gs_flame *f, uint32_t parent, const char *name)
{
	uint32_t nm = gs_names_add(&f->names, name, NULL);
	if (2 * (f->n + 1) > f->tcap) {
		f->tcap = f->tcap ? 2 * f->tcap : 1024;
		free(f->tab);
		f->tab = xcalloc(f->tcap, sizeof(*f->tab));
		for (size_t i = 1; i < f->n; i++)
			*node_slot(f, f->v[i].parent, f->v[i].name) = (uint32_t)i + 1;
	}
	uint32_t *at = node_slot(f, parent, nm);
	if (*at)
		return *at - 1;
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 256;
		f->v = xrealloc(f->v, f->cap * sizeof(*f->v));
	}
	f->v[f->n] = (struct gs_flame_node){ .name = nm, .parent = parent };
	*at = (uint32_t)++f->n;
	return (uint32_t)f->n - 1;
}

static void root_of(struct gs_flame *f, const char *root)
{
	if (f->n)
		return;
	f->cap = 256;
	f->v = xcalloc(f->cap, sizeof(*f->v));
	f->v[0] = (struct gs_flame_node){ .name = gs_names_add(&f->names, root, NULL), .parent = UINT32_MAX };
	f->n = 1;
}

static void add_to(struct gs_flame_node *x, uint64_t calls, uint64_t ns, uint64_t bytes)
{
	x->calls += calls;
	x->ns += ns;
	x->bytes += bytes;
}

void gs_flame_add_sums(struct gs_flame *f, const char *root, const struct gs_stack_sums *s, struct gs_input *in)
{
	char name[GS_FLAME_FRAME];
	root_of(f, root);
	for (size_t k = 0; k < s->cap; k++) {
		const struct gs_stack_sum *x = &s->v[k];
		const struct gs_stack *st = x->id ? gs_input_stack(in, x->id) : NULL;
		if (!st || !st->n)
			continue;
		f->cover.stacked += x->calls;
		f->cover.stacked_ns += x->host_ns;
		add_to(&f->v[0], x->calls, x->host_ns, x->bytes);
		uint32_t at = 0;
		for (uint32_t j = st->n; j-- > 0;) {
			gs_collapsed_frame(name, sizeof(name), st->frames[j]);
			at = child(f, at, name);
			add_to(&f->v[at], x->calls, x->host_ns, x->bytes);
		}
	}
}

void gs_flame_merge(struct gs_flame *dst, const char *root, const struct gs_flame *src)
{
	root_of(dst, root);
	dst->cover.calls += src->cover.calls;
	dst->cover.host_ns += src->cover.host_ns;
	dst->cover.stacked += src->cover.stacked;
	dst->cover.stacked_ns += src->cover.stacked_ns;
	if (!src->n)
		return;
	uint32_t *map = xcalloc(src->n, sizeof(*map)); /* src's node -> dst's */
	for (size_t i = 0; i < src->n; i++) {
		const struct gs_flame_node *x = &src->v[i];
		map[i] = child(dst, i ? map[x->parent] : 0, src->names.v[x->name]);
		add_to(&dst->v[map[i]], x->calls, x->ns, x->bytes);
	}
	add_to(&dst->v[0], src->v[0].calls, src->v[0].ns, src->v[0].bytes);
	free(map);
}

/* A frame's weight in the tree: its larger share, of the time or of the
 * bytes. A callee's is never more than its caller's. */
static double weight(const struct gs_flame *f, size_t i)
{
	double t = f->v[0].ns ? (double)f->v[i].ns / (double)f->v[0].ns : 0;
	double b = f->v[0].bytes ? (double)f->v[i].bytes / (double)f->v[0].bytes : 0;
	return t > b ? t : b;
}

static int cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

cJSON *gs_flame_json(const struct gs_flame *f, size_t max_nodes)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *c = cJSON_AddObjectToObject(o, "cover");
	cJSON_AddNumberToObject(c, "calls", (double)f->cover.calls);
	cJSON_AddNumberToObject(c, "host_ns", (double)f->cover.host_ns);
	cJSON_AddNumberToObject(c, "stacked", (double)f->cover.stacked);
	cJSON_AddNumberToObject(c, "stacked_ns", (double)f->cover.stacked_ns);
	/* Kept: the frames weighing more than the first one left out; a
	 * callee weighs no more than its caller, so every kept frame's caller
	 * is kept. */
	double least = -1;
	if (f->n > max_nodes && max_nodes) {
		double *w = xcalloc(f->n, sizeof(*w));
		for (size_t i = 0; i < f->n; i++)
			w[i] = weight(f, i);
		qsort(w, f->n, sizeof(*w), cmp_desc);
		least = w[max_nodes];
		free(w);
	}
	uint32_t *at = xcalloc(f->n ? f->n : 1, sizeof(*at)); /* node -> index in the JSON + 1 */
	uint32_t *nm = xcalloc(f->names.n ? f->names.n : 1, sizeof(*nm)); /* name -> index + 1 */
	cJSON *names = cJSON_AddArrayToObject(o, "names"), *name = cJSON_AddArrayToObject(o, "name");
	cJSON *parent = cJSON_AddArrayToObject(o, "parent"), *calls = cJSON_AddArrayToObject(o, "calls");
	cJSON *ns = cJSON_AddArrayToObject(o, "ns"), *bytes = cJSON_AddArrayToObject(o, "bytes");
	size_t kept = 0, nnames = 0;
	for (size_t i = 0; i < f->n; i++) {
		const struct gs_flame_node *x = &f->v[i];
		if (i && ((least >= 0 && weight(f, i) <= least) || !at[x->parent]))
			continue;
		at[i] = (uint32_t)++kept;
		if (!nm[x->name]) {
			nm[x->name] = (uint32_t)++nnames;
			cJSON_AddItemToArray(names, cJSON_CreateString(f->names.v[x->name]));
		}
		cJSON_AddItemToArray(name, cJSON_CreateNumber(nm[x->name] - 1));
		cJSON_AddItemToArray(parent, cJSON_CreateNumber(i ? (double)at[x->parent] - 1 : -1));
		cJSON_AddItemToArray(calls, cJSON_CreateNumber((double)x->calls));
		cJSON_AddItemToArray(ns, cJSON_CreateNumber((double)x->ns));
		cJSON_AddItemToArray(bytes, cJSON_CreateNumber((double)x->bytes));
	}
	cJSON_AddNumberToObject(o, "pruned", (double)(f->n - kept));
	free(at);
	free(nm);
	return o;
}

void gs_flame_free(struct gs_flame *f)
{
	free(f->v);
	free(f->tab);
	gs_names_free(&f->names);
	memset(f, 0, sizeof(*f));
}

/* ---- the section ---------------------------------------------------------- */

void gs_stacks_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase)
{
	(void)feed;
	(void)phase;
	if (!gs_flame_on)
		return;
	if (!p->stack_sums)
		p->stack_sums = xcalloc(1, sizeof(*p->stack_sums));
	if (!p->r->flame)
		p->r->flame = xcalloc(1, sizeof(*p->r->flame));
	gs_stack_sums_add(p->stack_sums, ev, &p->r->flame->cover);
}

void gs_stacks_finish(struct gs_pass *p)
{
	if (!p->r->flame)
		return;
	gs_flame_add_sums(p->r->flame, p->r->label, p->stack_sums, p->in);
	gs_stack_sums_free(p->stack_sums);
	free(p->stack_sums);
	p->stack_sums = NULL;
}

void gs_stacks_merge(struct gs_report *dst, const struct gs_report *src)
{
	if (!src->flame)
		return;
	if (!dst->flame)
		dst->flame = xcalloc(1, sizeof(*dst->flame));
	gs_flame_merge(dst->flame, "all processes", src->flame);
}

void gs_stacks_free(struct gs_report *r)
{
	if (!r->flame)
		return;
	gs_flame_free(r->flame);
	free(r->flame);
	r->flame = NULL;
}
