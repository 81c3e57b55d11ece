/* SPDX-License-Identifier: MIT */
/*
 * The kernels section: each kernel's launches (host) and runs (GPU), the
 * top ten by time with the Nsight Compute commands that profile them, and
 * --json's "kernels", every one of them.
 */
#include <stdlib.h>
#include <string.h>

#include "read/demangle.h"
#include "report/pass.h"
#include "report/report.h"
#include "util/escape.h"
#include "report/section.h"
#include "util/units.h"
#include "util/xalloc.h"

/* The kernel of this name, added when new (r->kernels may move). */
static struct gs_kernel_stat *kernel(struct gs_report *r, const char *name)
{
	if (2 * (r->nkernels + 1) > r->kernels_cap) {
		size_t cap = r->kernels_cap ? 2 * r->kernels_cap : 64;
		struct gs_kernel_stat *t = xrealloc(NULL, cap * sizeof(*t));
		memset(t, 0, cap * sizeof(*t));
		for (size_t i = 0; i < r->kernels_cap; i++) {
			if (!r->kernels[i].name)
				continue;
			size_t j = gs_str_hash(r->kernels[i].name) & (cap - 1);
			while (t[j].name)
				j = (j + 1) & (cap - 1);
			t[j] = r->kernels[i];
		}
		free(r->kernels);
		r->kernels = t;
		r->kernels_cap = cap;
	}
	size_t j = gs_str_hash(name) & (r->kernels_cap - 1);
	while (r->kernels[j].name && strcmp(r->kernels[j].name, name))
		j = (j + 1) & (r->kernels_cap - 1);
	if (!r->kernels[j].name) {
		r->kernels[j].name = xstrdup(name);
		r->kernels[j].min_ns = UINT64_MAX;
		r->kernels[j].gpu_min_ns = UINT64_MAX;
		r->nkernels++;
	}
	return &r->kernels[j];
}

static const char *launch_name(const struct gs_ev *ev)
{
	if (gspy_api_host_func(ev->api))
		return "(host function)";
	if (gspy_api_graph_launch(ev->api))
		return "(graph)";
	return ev->name && *ev->name ? ev->name : "(unknown)";
}

void gs_kernels_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	(void)cur;
	if (feed == GS_FEED_GPU && ev->kind == GSPY_KIND_gpu_kernel) {
		uint64_t ns = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0;
		struct gs_kernel_stat *k = kernel(p->r, ev->name && *ev->name ? ev->name : "(unknown)");
		k->gpu_count++;
		k->gpu_total_ns += ns;
		if (ns < k->gpu_min_ns)
			k->gpu_min_ns = ns;
		if (ns > k->gpu_max_ns)
			k->gpu_max_ns = ns;
	} else if (feed == GS_FEED_HOST && ev->kind == GSPY_KIND_launch) {
		struct gs_kernel_stat *k = kernel(p->r, launch_name(ev));
		uint64_t ns = ev->end_ns - ev->start_ns;
		k->count++;
		k->total_ns += ns;
		if (ns < k->min_ns)
			k->min_ns = ns;
		if (ns > k->max_ns)
			k->max_ns = ns;
	}
}

void gs_kernels_merge(struct gs_report *d, const struct gs_report *s)
{
	for (size_t i = 0; i < s->kernels_cap; i++) {
		const struct gs_kernel_stat *k = &s->kernels[i];
		if (!k->name)
			continue;
		struct gs_kernel_stat *t = kernel(d, k->name);
		t->count += k->count;
		t->total_ns += k->total_ns;
		if (k->min_ns < t->min_ns)
			t->min_ns = k->min_ns;
		if (k->max_ns > t->max_ns)
			t->max_ns = k->max_ns;
		t->gpu_count += k->gpu_count;
		t->gpu_total_ns += k->gpu_total_ns;
		if (k->gpu_min_ns < t->gpu_min_ns)
			t->gpu_min_ns = k->gpu_min_ns;
		if (k->gpu_max_ns > t->gpu_max_ns)
			t->gpu_max_ns = k->gpu_max_ns;
	}
}

void gs_kernels_free(struct gs_report *r)
{
	for (size_t i = 0; i < r->kernels_cap; i++)
		free(r->kernels[i].name);
	free(r->kernels);
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct gs_kernel_stat *x = *(const struct gs_kernel_stat *const *)a;
	const struct gs_kernel_stat *y = *(const struct gs_kernel_stat *const *)b;
	if (x->gpu_total_ns != y->gpu_total_ns)
		return x->gpu_total_ns < y->gpu_total_ns ? 1 : -1;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Kernels sorted by total time; the caller frees the array. */
static const struct gs_kernel_stat **sorted_kernels(const struct gs_report *r)
{
	const struct gs_kernel_stat **v = calloc(r->nkernels + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && i < r->kernels_cap; i++)
		if (r->kernels[i].name)
			v[n++] = &r->kernels[i];
	if (v)
		qsort(v, n, sizeof(*v), cmp_kernel);
	return v;
}

/* A kernel's name in the 48 columns of the kernels table: the demangled
 * name without its return type, parameter list and the function's own
 * namespaces, and without the at::native::, std:: and anonymous namespaces
 * inside its template arguments; cut at the end ("...") if still longer.
 * What tells two kernels apart is usually near the front (the function,
 * then its first template arguments); --json keeps the whole name. */
void gs_kernel_label(const char *n, char out[64])
{
	static const char *const drop[] = { "(anonymous namespace)::", "at::native::", "std::" };
	char buf[512];
	size_t k = 0;
	if (!strncmp(n, "void ", 5))
		n += 5;
	while (*n && k < sizeof(buf) - 1) {
		size_t i = 0;
		while (i < 3 && strncmp(n, drop[i], strlen(drop[i])))
			i++;
		if (i < 3)
			n += strlen(drop[i]);
		else
			buf[k++] = *n++;
	}
	buf[k] = 0;
	/* The parameter list: the first '(' outside template arguments, unless
	 * the name begins with it ("(host function)"). */
	int depth = 0;
	for (size_t i = 1; i < k; i++) {
		depth += buf[i] == '<' ? 1 : buf[i] == '>' ? -1 : 0;
		if (buf[i] == '(' && depth == 0) {
			buf[k = i] = 0;
			break;
		}
	}
	/* The function's own namespaces: up to its last "::" before any '<'. */
	const char *s = buf, *lt = strchr(buf, '<');
	for (const char *c = buf; (c = strstr(c, "::")) && (!lt || c < lt); c += 2)
		s = c + 2;
	if (strlen(s) > 48)
		snprintf(out, 64, "%.45s...", s);
	else
		snprintf(out, 64, "%s", s);
}

/* The next tool: for the top three kernels, the Nsight Compute command
 * that profiles the middle run of each (-s skips that many launches of
 * the kernels -k matches, -c 1 profiles one). -k is a regex on the mangled
 * name (exact for a plain name), from its start, as much of it as fits.
 * The name is the trace's: the regex is one shell word (util/escape.c),
 * and a byte that is not printable ASCII is '.' in it (ncu's regex
 * matches bytes; a newline would cut the line, other bytes the terminal
 * escapes). */
static void ncu_commands(FILE *f, const struct gs_report *r, const struct gs_kernel_stat **v,
			 const struct gs_style *st)
{
	int header = 0;
	for (size_t i = 0, n = 0; i < r->nkernels && n < 3; i++) {
		uint64_t runs = st->gpu_mode ? v[i]->gpu_count : v[i]->count;
		if (!runs || (st->gpu_mode && !v[i]->gpu_count))
			continue;
		n++;
		if (!header++) {
			/* CMD is the traced command (the trace's bytes:
			 * escaped, newlines too, on one line), cut to fit it. */
			fprintf(f, "  Profile the middle run of each with Nsight Compute (CMD: the command traced%s)\n",
				*r->proc.command ? "" : ", as you ran it");
			char cmd[4 * 85 + 1];
			if (*r->proc.command)
				fprintf(f, "    CMD = %s%s\n", gs_term_line(cmd, sizeof(cmd), r->proc.command, 85),
					strlen(r->proc.command) > 85 ? "..." : "");
		}
		char re[47] = "regex:^"; /* 38 bytes of the name at most, as before */
		size_t k = strlen(re);
		const char *p = v[i]->name;
		for (; *p && k + 2 < sizeof(re); p++) {
			unsigned char c = (unsigned char)*p;
			if (strchr(".$^*+?()[]{}|\\", c)) {
				if (k + 3 >= sizeof(re))
					break;
				re[k++] = '\\';
			}
			re[k++] = c < 0x20 || c >= 0x7f ? '.' : (char)c;
		}
		if (!*p)
			re[k++] = '$';
		re[k] = 0;
		fputs("    ncu --kernel-name-base mangled -k ", f);
		gs_shell_word(f, re);
		fprintf(f, " -s %llu -c 1 CMD\n", (unsigned long long)(runs / 2));
	}
}

void gs_kernels_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	if (!r->nkernels)
		return;
	const struct gs_kernel_stat **v = sorted_kernels(r);
	if (!v)
		return;
	fprintf(f, "\n  %sTop kernels%s (%s) %*s %8s %9s %9s %9s %9s\n", st->bold, st->reset,
		st->gpu_mode ? "GPU time" : "launch time", st->gpu_mode ? 24 : 21, "", st->gpu_mode ? "runs" : "count",
		"total", "mean", "min", "max");
	size_t shown_n = 0;
	for (size_t i = 0; i < r->nkernels && shown_n < 10; i++) {
		char a[32], b[32], c[32], d[32], e[32];
		if (st->gpu_mode && !v[i]->gpu_count)
			continue; /* host functions and graph launches are not kernels */
		shown_n++;
		char label[64], shown[4 * sizeof(label)];
		gs_kernel_label(gs_demangle(v[i]->name), label);
		gs_term_line(shown, sizeof(shown), label, SIZE_MAX); /* one line: a newline would pass for a row */
		if (st->gpu_mode && v[i]->gpu_count)
			fprintf(f, "  %-48s %8s %9s %9s %9s %9s\n", shown, gs_fmt_count(a, v[i]->gpu_count),
				gs_fmt_ns(b, v[i]->gpu_total_ns), gs_fmt_ns(c, v[i]->gpu_total_ns / v[i]->gpu_count),
				gs_fmt_ns(d, v[i]->gpu_min_ns), gs_fmt_ns(e, v[i]->gpu_max_ns));
		else
			fprintf(f, "  %-48s %8s %9s %9s %9s %9s\n", shown, gs_fmt_count(a, v[i]->count),
				gs_fmt_ns(b, v[i]->total_ns),
				gs_fmt_ns(c, v[i]->count ? v[i]->total_ns / v[i]->count : 0),
				gs_fmt_ns(d, v[i]->count ? v[i]->min_ns : 0), gs_fmt_ns(e, v[i]->max_ns));
	}
	if (r->nkernels > shown_n && shown_n == 10)
		fprintf(f, "  ... and more (gpuspy report --json lists all)\n");
	ncu_commands(f, r, v, st);
	free(v);
}

static cJSON *kernels_json(const struct gs_report *r, const struct gs_style *st)
{
	cJSON *a = cJSON_CreateArray();
	const struct gs_kernel_stat **v = sorted_kernels(r);
	for (size_t i = 0; v && i < r->nkernels; i++) {
		cJSON *k = cJSON_CreateObject();
		cJSON_AddStringToObject(k, "name", gs_demangle(v[i]->name));
		if (gs_demangle(v[i]->name) != v[i]->name)
			cJSON_AddStringToObject(k, "mangled", v[i]->name);
		cJSON_AddNumberToObject(k, "count", (double)v[i]->count);
		cJSON_AddNumberToObject(k, "host_ns", (double)v[i]->total_ns);
		if (v[i]->count) {
			cJSON_AddNumberToObject(k, "host_min_ns", (double)v[i]->min_ns);
			cJSON_AddNumberToObject(k, "host_max_ns", (double)v[i]->max_ns);
		} else { /* seen on the GPU only (a graph's kernels): no launch call */
			cJSON_AddNullToObject(k, "host_min_ns");
			cJSON_AddNullToObject(k, "host_max_ns");
		}
		if (st->gpu_mode) {
			cJSON_AddNumberToObject(k, "gpu_count", (double)v[i]->gpu_count);
			cJSON_AddNumberToObject(k, "gpu_ns", (double)v[i]->gpu_total_ns);
			cJSON_AddNumberToObject(k, "gpu_min_ns", (double)(v[i]->gpu_count ? v[i]->gpu_min_ns : 0));
			cJSON_AddNumberToObject(k, "gpu_max_ns", (double)v[i]->gpu_max_ns);
		} else {
			cJSON_AddNullToObject(k, "gpu_ns");
		}
		cJSON_AddItemToArray(a, k);
	}
	free(v);
	return a;
}

void gs_kernels_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	cJSON_AddItemToObject(o, "kernels", kernels_json(r, st));
}
