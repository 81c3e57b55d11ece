/* SPDX-License-Identifier: MIT */
/*
 * The GPU section: each device's busy time and idle gaps (host-bound or
 * other), in all and in phases, with CUPTI; the GPU spans at phase
 * boundaries with CUDA events; queue delay, graphs' kernels and the share
 * of GPU records matched to their launch.
 */
#include <stdio.h>

#include "report/diag.h"
#include "report/report.h"
#include "report/section.h"
#include "util/units.h"

void gs_gpu_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	char a[32], b[32], c[32], d[32];
	uint64_t span = r->t_last - r->t_first;
	if (st->events_mode) {
		/* Spans include their gaps and may overlap across streams: their
		 * sum bounds the GPU's work from above. */
		fprintf(f, "\n  %sGPU%s (CUDA events at phase boundaries)\n", st->bold, st->reset);
		for (int i = 0; i < GSPY_DEVICES; i++) {
			const struct gs_device_gpu *g = &r->dev[i];
			if (!g->spans)
				continue;
			/* With phases, of the time in them: the intervals outside
			 * (start-up) span their idle time too. */
			uint64_t in = span, ns = g->span_ns, n = g->spans;
			int phased = gs_loop_span(r, &in);
			if (phased) {
				ns = g->phase_span_ns;
				n = g->phase_spans;
			}
			double pct = in ? 100.0 * (double)ns / (double)in : 0.0;
			fprintf(f, "  device %d: GPU spans %s of %s%s (%s interval%s): busy at most %.1f%%\n", i,
				gs_fmt_ns(a, ns), gs_fmt_ns(b, in), phased ? " in phases" : "", gs_fmt_count(c, n),
				gs_pl(n, "", "s"), pct < 100.0 ? pct : 100.0);
			uint64_t out = g->spans - g->phase_spans;
			if (phased && out)
				fprintf(f, "    outside phases: %s (%s interval%s)\n",
					gs_fmt_ns(a, g->span_ns - g->phase_span_ns), gs_fmt_count(c, out),
					gs_pl(out, "", "s"));
		}
		return;
	}
	if (!st->gpu_mode)
		return;
	fprintf(f, "\n  %sGPU%s\n", st->bold, st->reset);
	for (int i = 0; i < GSPY_DEVICES; i++) {
		const struct gs_device_gpu *g = &r->dev[i];
		if (!g->ops)
			continue;
		fprintf(f, "  device %d: busy %s of %s (%.1f%%); idle gaps: %s host-bound, %s other\n", i,
			gs_fmt_ns(a, g->busy_ns), gs_fmt_ns(b, span),
			span ? 100.0 * (double)g->busy_ns / (double)span : 0.0, gs_fmt_ns(c, g->idle_host_ns),
			gs_fmt_ns(d, g->idle_other_ns));
		/* The loop's own share: start-up outside phases dilutes the run's. */
		uint64_t in = span;
		if (gs_loop_span(r, &in))
			fprintf(f, "    in phases: busy %s of %s (%.1f%%)\n", gs_fmt_ns(a, g->phase_busy_ns),
				gs_fmt_ns(b, in), in ? 100.0 * (double)g->phase_busy_ns / (double)in : 0.0);
		fprintf(f, "    (host-bound: the work after the gap was launched only after the GPU went idle)\n");
	}
	if (r->queue_n)
		fprintf(f, "  queue delay (launch call to kernel start): mean %s, max %s over %s kernel%s\n",
			gs_fmt_ns(a, r->queue_sum_ns / r->queue_n), gs_fmt_ns(b, r->queue_max_ns),
			gs_fmt_count(c, r->queue_n), gs_pl(r->queue_n, "", "s"));
	if (r->graph_kernels)
		fprintf(f, "  CUDA graphs ran %s kernel%s (%s GPU time)\n", gs_fmt_count(a, r->graph_kernels),
			gs_pl(r->graph_kernels, "", "s"), gs_fmt_ns(b, r->graph_kernel_ns));
	if (r->gpu_records)
		fprintf(f, "  GPU records matched to the call that launched them: %.1f%% of %s\n",
			100.0 * (double)r->gpu_matched / (double)r->gpu_records, gs_fmt_count(a, r->gpu_records));
}

void gs_gpu_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	if (st->gpu_mode || st->events_mode) {
		cJSON *g = cJSON_AddObjectToObject(o, "gpu");
		cJSON *devs = cJSON_AddArrayToObject(g, "devices");
		for (int i = 0; i < GSPY_DEVICES; i++) {
			const struct gs_device_gpu *x = &r->dev[i];
			if (!(st->gpu_mode ? x->ops : x->spans))
				continue;
			cJSON *d = cJSON_CreateObject();
			cJSON_AddNumberToObject(d, "device", i);
			if (st->gpu_mode) {
				cJSON_AddNumberToObject(d, "busy_ns", (double)x->busy_ns);
				cJSON_AddNumberToObject(d, "busy_in_phases_ns", (double)x->phase_busy_ns);
				cJSON_AddNumberToObject(d, "idle_host_bound_ns", (double)x->idle_host_ns);
				cJSON_AddNumberToObject(d, "idle_other_ns", (double)x->idle_other_ns);
			} else {
				cJSON_AddNumberToObject(d, "span_ns", (double)x->span_ns);
				cJSON_AddNumberToObject(d, "spans", (double)x->spans);
				cJSON_AddNumberToObject(d, "phases_span_ns", (double)x->phase_span_ns);
				cJSON_AddNumberToObject(d, "phases_spans", (double)x->phase_spans);
			}
			cJSON_AddItemToArray(devs, d);
		}
		if (st->gpu_mode) {
			cJSON_AddNumberToObject(g, "records", (double)r->gpu_records);
			cJSON_AddNumberToObject(g, "matched", (double)r->gpu_matched);
			cJSON_AddNumberToObject(g, "queue_delay_mean_ns",
						r->queue_n ? (double)(r->queue_sum_ns / r->queue_n) : 0);
			cJSON_AddNumberToObject(g, "queue_delay_max_ns", (double)r->queue_max_ns);
			cJSON_AddNumberToObject(g, "graph_kernels", (double)r->graph_kernels);
			cJSON_AddNumberToObject(g, "graph_kernel_ns", (double)r->graph_kernel_ns);
		}
	}
}
