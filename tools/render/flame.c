/* SPDX-License-Identifier: MIT */
/*
 * Flame graphs of where a program's CUDA calls come from (flame.h): each
 * call stack gpuspy recorded, with the host time of the calls made from
 * it and the device and pinned bytes allocated there, written as
 * collapsed stacks (one line a stack, frames outermost first, joined by
 * ';', then the value: flamegraph.pl's and speedscope's input) or as
 * speedscope's own JSON with two profiles (host time, bytes). Streamed:
 * memory grows with distinct stacks, not with events. Only the calls that
 * carry a stack are in it: how many that is comes back (gs_flame_cover),
 * and none at all is an error, not an empty graph.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "read/input.h"
#include "render/flame.h"
#include "util/escape.h"
#include "util/xalloc.h"

struct stack_sum {
	uint32_t id;  /* the stack's string id in its trace; 0: empty slot */
	uint64_t calls, host_ns, bytes;
};

struct sums {
	struct stack_sum *v;
	size_t n, cap; /* open addressing, cap a power of two */
};

static struct stack_sum *slot(struct sums *s, uint32_t id)
{
	if (2 * (s->n + 1) > s->cap) {
		struct sums t = { xcalloc(s->cap ? 2 * s->cap : 1024, sizeof(*t.v)), 0, s->cap ? 2 * s->cap : 1024 };
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i].id)
				*slot(&t, s->v[i].id) = s->v[i];
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

/* One process's stacks summed, into s (ids of in's trace); every call
 * counted in c (those with a stack when it is written). */
static int sum_trace(struct gs_input *in, struct sums *s, struct gs_flame_cover *c)
{
	struct gs_ev ev;
	int got;
	while ((got = gs_input_next(in, &ev)) == 1) {
		if (ev.kind >= GSPY_KIND_phase_begin || ev.result != 0)
			continue;
		uint64_t ns = ev.end_ns > ev.start_ns ? ev.end_ns - ev.start_ns : 0;
		c->calls++;
		c->host_ns += ns;
		if (!ev.stack_id)
			continue;
		struct stack_sum *x = slot(s, ev.stack_id);
		x->calls++;
		x->host_ns += ns;
		if (ev.kind == GSPY_KIND_alloc && ev.mem != GSPY_MEM_host)
			x->bytes += ev.bytes;
	}
	return got;
}

/* The collapsed line of one stack: outermost frame first. */
static void collapsed(FILE *f, const char *proc, const struct gs_stack *st, uint64_t value)
{
	char name[512];
	fputs(proc, f);
	for (uint32_t i = st->n; i-- > 0;) {
		gs_collapsed_frame(name, sizeof(name), st->frames[i]);
		fprintf(f, ";%s", name);
	}
	fprintf(f, " %llu\n", (unsigned long long)value);
}

/* speedscope's frames: names in index order, and a hash table over them
 * (open addressing, cap a power of two) whose slots hold index + 1. */
struct frames {
	cJSON *json;
	char **names;
	uint32_t *tab;
	size_t n, cap;
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static uint32_t *frame_slot(struct frames *fr, const char *name)
{
	size_t k = name_hash(name) & (fr->cap - 1);
	while (fr->tab[k] && strcmp(fr->names[fr->tab[k] - 1], name))
		k = (k + 1) & (fr->cap - 1);
	return &fr->tab[k];
}

/* speedscope's frame index of name, added when new. */
static int frame_index(struct frames *fr, const char *name)
{
	if (2 * (fr->n + 1) > fr->cap) {
		size_t cap = fr->cap ? 2 * fr->cap : 1024;
		free(fr->tab);
		fr->tab = xcalloc(cap, sizeof(*fr->tab));
		fr->cap = cap;
		for (size_t i = 0; i < fr->n; i++)
			*frame_slot(fr, fr->names[i]) = (uint32_t)i + 1;
	}
	uint32_t *at = frame_slot(fr, name);
	if (*at)
		return (int)*at - 1;
	if (!(fr->n & (fr->n - 1))) /* 0, 1, 2, 4, ...: room for twice as many */
		fr->names = xrealloc(fr->names, (fr->n ? 2 * fr->n : 1) * sizeof(*fr->names));
	fr->names[fr->n] = xstrdup(name);
	*at = (uint32_t)++fr->n;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddItemToArray(fr->json, o);
	return (int)fr->n - 1;
}

static cJSON *profile(const char *name, const char *unit)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "type", "sampled");
	cJSON_AddStringToObject(p, "name", name);
	cJSON_AddStringToObject(p, "unit", unit);
	cJSON_AddNumberToObject(p, "startValue", 0);
	cJSON_AddNumberToObject(p, "endValue", 0);
	cJSON_AddArrayToObject(p, "samples");
	cJSON_AddArrayToObject(p, "weights");
	return p;
}

static void add_sample(cJSON *p, cJSON *stack, uint64_t w)
{
	cJSON_AddItemToArray(cJSON_GetObjectItem(p, "samples"), cJSON_Duplicate(stack, 1));
	cJSON_AddItemToArray(cJSON_GetObjectItem(p, "weights"), cJSON_CreateNumber((double)w));
	cJSON *end = cJSON_GetObjectItem(p, "endValue");
	cJSON_SetNumberValue(end, end->valuedouble + (double)w);
}

int gs_export_flame(FILE *f, enum gs_flame_format fmt, char *const *paths, size_t n, struct gs_flame_cover *c,
		    char *err, size_t errlen, size_t *bad)
{
	cJSON *doc = NULL, *time = NULL, *bytes = NULL;
	struct frames fr = { 0 };
	int rc = 0;
	memset(c, 0, sizeof(*c));
	if (fmt == GS_FLAME_SPEEDSCOPE) {
		doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "$schema", "https://www.speedscope.app/file-format-schema.json");
		cJSON_AddStringToObject(doc, "exporter", "gpuspy");
		cJSON_AddStringToObject(doc, "name", "where the CUDA calls come from");
		fr.json = cJSON_AddArrayToObject(cJSON_AddObjectToObject(doc, "shared"), "frames");
		time = profile("host time in CUDA calls with a stack", "nanoseconds");
		bytes = profile("device and pinned bytes allocated", "bytes");
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct gs_input in;
		if (gs_input_open(paths[i], &in, err, errlen) != 0) {
			*bad = i;
			rc = -1;
			break;
		}
		struct sums s = { 0 };
		if (sum_trace(&in, &s, c) < 0) {
			snprintf(err, errlen, "%s", in.err);
			*bad = i;
			rc = -1;
		}
		char proc[96];
		snprintf(proc, sizeof(proc), "pid %u", in.proc.pid);
		for (size_t k = 0; k < s.cap && !rc; k++) {
			const struct stack_sum *x = &s.v[k];
			const struct gs_stack *st = x->id ? gs_input_stack(&in, x->id) : NULL;
			if (!st || !st->n)
				continue;
			c->stacked += x->calls;
			c->stacked_ns += x->host_ns;
			if (fmt == GS_FLAME_COLLAPSED) {
				collapsed(f, proc, st, x->host_ns);
				continue;
			}
			cJSON *stack = cJSON_CreateArray();
			char name[512];
			cJSON_AddItemToArray(stack, cJSON_CreateNumber(frame_index(&fr, proc)));
			for (uint32_t j = st->n; j-- > 0;) {
				gs_collapsed_frame(name, sizeof(name), st->frames[j]);
				cJSON_AddItemToArray(stack, cJSON_CreateNumber(frame_index(&fr, name)));
			}
			if (x->host_ns)
				add_sample(time, stack, x->host_ns);
			if (x->bytes)
				add_sample(bytes, stack, x->bytes);
			cJSON_Delete(stack);
		}
		free(s.v);
		gs_input_close(&in);
	}
	if (!rc && !c->stacked) { /* an empty graph would read as "no time in CUDA calls" */
		char what[64] = "it";
		if (n != 1)
			snprintf(what, sizeof(what), "the %zu traces", n);
		snprintf(err, errlen, "no CUDA call in %s carries a call stack (by default only allocations, frees, "
			 "pageable copies and waits of 10 us or more do); record %s with GPUSPY_STACKS=all "
			 "GPUSPY_STACK_LAUNCHES=1 GPUSPY_STACK_MIN=0 for a stack on every call", what,
			 n == 1 ? "it" : "them");
		*bad = n == 1 ? 0 : n;
		rc = -1;
	}
	if (doc) {
		cJSON *ps = cJSON_AddArrayToObject(doc, "profiles");
		cJSON_AddItemToArray(ps, time);
		cJSON_AddItemToArray(ps, bytes);
		char *text = rc ? NULL : gs_json_print(doc, 0);
		if (text)
			fprintf(f, "%s\n", text);
		free(text);
		cJSON_Delete(doc);
	}
	for (size_t i = 0; i < fr.n; i++)
		free(fr.names[i]);
	free(fr.names);
	free(fr.tab);
	return rc;
}
