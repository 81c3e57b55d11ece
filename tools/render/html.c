/* SPDX-License-Identifier: MIT */
/*
 * `gpuspy report --html OUT.html`: one self-contained page (no network):
 * the report's data as JSON, the vendored uPlot (tools/render/html/uplot/)
 * and the page's own scripts (tools/render/html/: charts.js, flame.js,
 * page.js), which draw it.
 *
 * Every number the page prints as text is formatted here, by the text
 * report's own functions: the text report itself (whole and per process),
 * the headline cards, the diagnoses, the ranks table and the kernels'
 * short names. The charts draw the --json report and each process's
 * series (series.c); their totals are that report's. The flame graph
 * draws each process's calls by stack (report/stacks.c).
 * Nothing from the trace reaches the page but through JSON that the
 * script inserts as text (never as markup); the JSON's '<' are escaped so
 * it cannot close its <script>.
 */
#include <stdlib.h>
#include <string.h>

#include "util/cli.h"
#include "read/demangle.h"
#include "report/diag.h"
#include "render/render.h"
#include "report/report.h"
#include "report/section.h"
#include "report/series.h"
#include "report/stacks.h"
#include "util/escape.h"
#include "util/units.h"

extern const char gs_asset_uplot_js[], gs_asset_uplot_css[], gs_asset_page_css[];
extern const char gs_asset_charts_js[], gs_asset_flame_js[], gs_asset_page_js[];

#define TOP_KERNELS 10 /* the kernel chart's bars (page.js) */

/* The text report of procs, as `gpuspy report` prints it without colour. */
static char *text_report(struct gs_report *const *procs, size_t n, const struct gs_report *whole)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return NULL;
	FILE *t = gs_term_open(m, 0);
	gs_report_print(t ? t : m, procs, n, whole, 0);
	if (t)
		fclose(t);
	fclose(m);
	return buf;
}

static void card(cJSON *a, const char *label, const char *value)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "label", label);
	cJSON_AddStringToObject(c, "value", value);
	cJSON_AddItemToArray(a, c);
}

/* The headline numbers, each as the text report writes it. */
static cJSON *cards(const struct gs_report *r)
{
	cJSON *a = cJSON_CreateArray();
	char v[160], x[32], y[32], z[32];
	uint64_t span = r->t_last - r->t_first;
	card(a, "traced", gs_fmt_ns(x, span));
	card(a, "events", gs_fmt_count(x, r->nevents));
	card(a, "dropped", gs_fmt_count(x, r->proc.dropped));
	uint64_t steps = gs_mem_steps(r);
	if (steps) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)steps);
		card(a, "steps", v);
	}
	if (r->gpu_timing == GSPY_GPU_TIMING_cupti)
		for (int d = 0; d < GSPY_DEVICES; d++) {
			const struct gs_device_gpu *g = &r->dev[d];
			if (!g->ops)
				continue;
			char label[32];
			snprintf(label, sizeof(label), "device %d busy", d);
			snprintf(v, sizeof(v), "%s of %s (%.1f%%)", gs_fmt_ns(x, g->busy_ns), gs_fmt_ns(y, span),
				 span ? 100.0 * (double)g->busy_ns / (double)span : 0.0);
			card(a, label, v);
		}
	uint64_t pn = 0, pb = 0;
	for (int d = 0; d < GSPY_DIR_COUNT; d++) {
		if (d == GSPY_DIR_d2d || d == GSPY_DIR_p2p)
			continue;
		pn += r->total.copy[d][GS_PAGEABLE].count;
		pb += r->total.copy[d][GS_PAGEABLE].bytes;
	}
	snprintf(v, sizeof(v), "%llu (%s)", (unsigned long long)pn, gs_fmt_bytes(x, pb));
	card(a, "pageable copies", v);
	uint64_t peak = (uint64_t)(r->peak_reserved > 0 ? r->peak_reserved : 0);
	if (r->device_total)
		snprintf(v, sizeof(v), "%s of %s (%.1f%%)", gs_fmt_bytes(x, peak), gs_fmt_bytes(y, r->device_total),
			 100.0 * (double)r->peak_reserved / (double)r->device_total);
	else
		snprintf(v, sizeof(v), "%s", gs_fmt_bytes(x, peak));
	card(a, "peak reserved", v);
	uint64_t records, own = gs_own_ns(r, &records);
	if (records || r->proc.stacks_taken) {
		snprintf(v, sizeof(v), "about %s", gs_fmt_ns(z, own));
		card(a, "gpuspy's own time", v);
	}
	return a;
}

static cJSON *diagnoses(const struct gs_report *r)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->ndiag; i++) {
		char buf[512];
		if (r->diag[i].context)
			continue; /* the telemetry panels show what it saw */
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "id", r->diag[i].id);
		cJSON_AddStringToObject(d, "text", r->diag[i].text);
		const char *s = gs_diag_saving(&r->diag[i], buf, sizeof(buf));
		if (s)
			cJSON_AddStringToObject(d, "saving", s);
		cJSON_AddItemToArray(a, d);
	}
	return a;
}

/* The short names of the first kernels of a --json report (rep), as the
 * kernels table shows them: the chart's labels. */
static cJSON *kernel_labels(const cJSON *rep)
{
	cJSON *a = cJSON_CreateArray();
	const cJSON *k;
	int i = 0;
	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(rep, "kernels")) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(k, "name");
		char label[64];
		if (i++ == TOP_KERNELS)
			break;
		gs_kernel_label(cJSON_IsString(name) ? gs_demangle(name->valuestring) : "", label);
		cJSON_AddItemToArray(a, cJSON_CreateString(label));
	}
	return a;
}

/* What the trace's header says of NVML: its state, its period, and per
 * device the pid that sampled it (0 none): where a process's telemetry is
 * when another process sampled its device. */
static cJSON *nvml_header(const struct gs_report *r)
{
	static const char *const states[] = {
#define GSPY_X(n) #n,
		GSPY_NVML_STATE_LIST(GSPY_X)
#undef GSPY_X
	};
	cJSON *o = cJSON_CreateObject();
	unsigned st = r->proc.nvml_state < sizeof(states) / sizeof(states[0]) ? r->proc.nvml_state : 0;
	cJSON_AddStringToObject(o, "state", states[st]);
	cJSON_AddNumberToObject(o, "ms", r->proc.nvml_ms);
	cJSON *a = cJSON_AddArrayToObject(o, "sampler");
	for (int d = 0; d < GSPY_DEVICES; d++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(r->proc.nvml_sampler[d]));
	return o;
}

int gs_report_html(FILE *f, struct gs_report *const *procs, size_t n, const struct gs_report *whole)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "tool", "gpuspy " GPUSPY_VERSION);
	char *text = text_report(procs, n, whole);
	cJSON_AddStringToObject(o, "text", text ? text : "");
	free(text);
	cJSON *rep = gs_report_json(procs, n, whole);
	cJSON_AddItemToObject(o, "report", rep);
	cJSON_AddItemToObject(o, "cards", cards(whole));
	cJSON_AddItemToObject(o, "kernel_labels", kernel_labels(rep));
	cJSON *ranks = gs_ranks_table(procs, n);
	if (ranks)
		cJSON_AddItemToObject(o, "ranks", ranks);
	if (n > 1 && whole->flame) /* the view of all processes */
		cJSON_AddItemToObject(o, "flame", gs_flame_json(whole->flame, GS_FLAME_NODES));
	cJSON *ps = cJSON_AddArrayToObject(o, "processes");
	for (size_t i = 0; i < n; i++) {
		const struct gs_report *r = procs[i];
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "label", r->label);
		cJSON_AddStringToObject(p, "command", r->proc.command);
		text = text_report(&procs[i], 1, r);
		cJSON_AddStringToObject(p, "text", text ? text : "");
		free(text);
		cJSON_AddItemToObject(p, "cards", cards(r));
		cJSON_AddItemToObject(p, "diagnoses", diagnoses(r));
		cJSON_AddItemToObject(p, "kernel_labels", kernel_labels(cJSON_GetArrayItem(
								  cJSON_GetObjectItemCaseSensitive(rep, "processes"), (int)i)));
		cJSON_AddItemToObject(p, "nvml", nvml_header(r));
		if (r->flame)
			cJSON_AddItemToObject(p, "flame", gs_flame_json(r->flame, GS_FLAME_NODES));
		if (r->series)
			cJSON_AddItemToObject(p, "series", gs_series_json(r->series, r));
		cJSON_AddItemToArray(ps, p);
	}
	char *json = gs_json_print(o, 0);
	cJSON_Delete(o);
	if (!json)
		return -1;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>gpuspy report: ",
	      f);
	gs_html_text(f, n == 1 ? procs[0]->proc.command : "all processes");
	fprintf(f, "</title>\n<style>\n%s\n%s</style>\n</head>\n<body>\n"
		   "<noscript>This report draws its charts with JavaScript; the text report is in its "
		   "data.</noscript>\n<script type=\"application/json\" id=\"gspy-data\">",
		gs_asset_uplot_css, gs_asset_page_css);
	gs_html_script_json(f, json);
	free(json);
	fprintf(f, "</script>\n<script>\n%s\n</script>\n", gs_asset_uplot_js);
	const char *const scripts[] = { gs_asset_charts_js, gs_asset_flame_js, gs_asset_page_js };
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++)
		fprintf(f, "<script>\n%s</script>\n", scripts[i]);
	fputs("</body>\n</html>\n", f);
	return ferror(f) ? -1 : 0;
}
