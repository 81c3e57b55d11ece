/* SPDX-License-Identifier: MIT */
/*
 * Flame graphs of where a program's CUDA calls come from (flame.h): each
 * call stack gpuspy recorded, with the host time of the calls made from
 * it and the device and pinned bytes allocated there, written as
 * collapsed stacks (one line a stack, frames outermost first, joined by
 * ';', then the value: flamegraph.pl's and speedscope's input) or as
 * speedscope's own JSON with two profiles (host time, bytes). Streamed:
 * memory grows with distinct stacks, not with events.
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
	uint64_t host_ns, bytes;
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

/* A frame as one name: no ';' (the collapsed format's separator) and no
 * control byte (a trace's bytes; the JSON sink escapes the rest). */
static void frame_name(const char *f, char *out, size_t cap)
{
	size_t k = 0;
	for (; *f && k + 1 < cap; f++) {
		unsigned char c = (unsigned char)*f;
		out[k++] = c == ';' ? ',' : c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	out[k] = 0;
}

/* One process's stacks summed, into s (ids of in's trace). */
static int sum_trace(struct gs_input *in, struct sums *s)
{
	struct gs_ev ev;
	int got;
	while ((got = gs_input_next(in, &ev)) == 1) {
		if (!ev.stack_id || ev.kind >= GSPY_KIND_phase_begin || ev.result != 0)
			continue;
		struct stack_sum *x = slot(s, ev.stack_id);
		x->host_ns += ev.end_ns > ev.start_ns ? ev.end_ns - ev.start_ns : 0;
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
		frame_name(st->frames[i], name, sizeof(name));
		fprintf(f, ";%s", name);
	}
	fprintf(f, " %llu\n", (unsigned long long)value);
}

/* speedscope's frame index of name, added when new (a linear table:
 * stacks share most frames, and there are a few thousand at most). */
static int frame_index(cJSON *frames, char ***names, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*names)[i], name))
			return (int)i;
	*names = xrealloc(*names, (*n + 1) * sizeof(**names));
	(*names)[*n] = xstrdup(name);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddItemToArray(frames, o);
	return (int)(*n)++;
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

int gs_export_flame(FILE *f, enum gs_flame_format fmt, char *const *paths, size_t n, char *err, size_t errlen,
		    size_t *bad)
{
	cJSON *doc = NULL, *frames = NULL, *time = NULL, *bytes = NULL;
	char **names = NULL;
	size_t nnames = 0;
	int rc = 0;
	if (fmt == GS_FLAME_SPEEDSCOPE) {
		doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "$schema", "https://www.speedscope.app/file-format-schema.json");
		cJSON_AddStringToObject(doc, "exporter", "gpuspy");
		cJSON_AddStringToObject(doc, "name", "where the CUDA calls come from");
		frames = cJSON_AddArrayToObject(cJSON_AddObjectToObject(doc, "shared"), "frames");
		time = profile("host time in CUDA calls", "nanoseconds");
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
		if (sum_trace(&in, &s) < 0) {
			snprintf(err, errlen, "%s", in.err);
			*bad = i;
			rc = -1;
		}
		char proc[96];
		snprintf(proc, sizeof(proc), "pid %u", in.proc.pid);
		for (size_t k = 0; k < s.cap; k++) {
			const struct stack_sum *x = &s.v[k];
			const struct gs_stack *st = x->id ? gs_input_stack(&in, x->id) : NULL;
			if (!st || !st->n)
				continue;
			if (fmt == GS_FLAME_COLLAPSED) {
				collapsed(f, proc, st, x->host_ns);
				continue;
			}
			cJSON *stack = cJSON_CreateArray();
			char name[512];
			cJSON_AddItemToArray(stack, cJSON_CreateNumber(frame_index(frames, &names, &nnames, proc)));
			for (uint32_t j = st->n; j-- > 0;) {
				frame_name(st->frames[j], name, sizeof(name));
				cJSON_AddItemToArray(stack, cJSON_CreateNumber(frame_index(frames, &names, &nnames, name)));
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
	if (doc) {
		cJSON *ps = cJSON_AddArrayToObject(doc, "profiles");
		cJSON_AddItemToArray(ps, time);
		cJSON_AddItemToArray(ps, bytes);
		char *text = gs_json_print(doc, 0);
		if (text)
			fprintf(f, "%s\n", text);
		free(text);
		cJSON_Delete(doc);
	}
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	return rc;
}
