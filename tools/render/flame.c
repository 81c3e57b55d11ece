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
 * and none at all is an error, not an empty graph. Which calls count, their
 * sums by stack and the frames' names are report/stacks.c's, shared with
 * the flame graph of `report --html`.
 */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "read/input.h"
#include "render/flame.h"
#include "util/escape.h"
#include "util/xalloc.h"

/* One process's stacks summed, into s (ids of in's trace); every call
 * counted in c (those with a stack when it is written). */
static int sum_trace(struct gs_input *in, struct gs_stack_sums *s, struct gs_flame_cover *c)
{
	struct gs_ev ev;
	int got;
	while ((got = gs_input_next(in, &ev)) == 1)
		gs_stack_sums_add(s, &ev, c);
	return got;
}

/* The collapsed line of one stack: outermost frame first. */
static void collapsed(FILE *f, const char *proc, const struct gs_stack *st, uint64_t value)
{
	char name[GS_FLAME_FRAME];
	fputs(proc, f);
	for (uint32_t i = st->n; i-- > 0;) {
		gs_collapsed_frame(name, sizeof(name), st->frames[i]);
		fprintf(f, ";%s", name);
	}
	fprintf(f, " %llu\n", (unsigned long long)value);
}

/* speedscope's frames: each name once (report/stacks.c), in its JSON too. */
struct frames {
	cJSON *json;
	struct gs_names names;
};

/* speedscope's frame index of name, added when new. */
static int frame_index(struct frames *fr, const char *name)
{
	int added;
	uint32_t i = gs_names_add(&fr->names, name, &added);
	if (added) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddItemToArray(fr->json, o);
	}
	return (int)i;
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

/* Long (about 80 lines): each trace read and its stacks written as they are
 * summed, in either format, into one document whose frame table the traces
 * share; then the one error for traces with no stack at all. */
int gs_export_flame(FILE *f, enum gs_flame_format fmt, const struct gs_paths *paths, struct gs_flame_cover *c,
		    char *err, size_t errlen, size_t *bad)
{
	size_t n = paths->n;
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
		if (gs_input_open(paths->v[i], paths->listed[i], &in, err, errlen) != 0) {
			*bad = i;
			rc = -1;
			break;
		}
		struct gs_stack_sums s = { 0 };
		if (sum_trace(&in, &s, c) < 0) {
			snprintf(err, errlen, "%s", in.err);
			*bad = i;
			rc = -1;
		}
		char proc[96];
		snprintf(proc, sizeof(proc), "pid %u", in.proc.pid);
		for (size_t k = 0; k < s.cap && !rc; k++) {
			const struct gs_stack_sum *x = &s.v[k];
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
			char name[GS_FLAME_FRAME];
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
		gs_stack_sums_free(&s);
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
	gs_names_free(&fr.names);
	return rc;
}
