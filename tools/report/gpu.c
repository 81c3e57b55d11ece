/* SPDX-License-Identifier: MIT */
/*
 * The GPU section: each device's busy time and idle gaps (host-bound or
 * other), in all and in phases, with CUPTI; the GPU spans at phase
 * boundaries with CUDA events; queue delay, graphs' kernels and the share
 * of GPU records matched to their launch. The pass hands it the GPU
 * records, which it puts on each device's timeline in start order.
 */
#include <stdio.h>
#include <stdlib.h>

#include "report/diag.h"
#include "report/pass.h"
#include "report/report.h"
#include "report/section.h"
#include "report/series.h"
#include "util/units.h"
#include "util/xalloc.h"

#define HEAP_MAX (1u << 18)

/* GPU work waiting to be put on the device timeline in start order: CUPTI
 * delivers records in buffers that overlap in time. */
struct gs_gpu_item {
	uint64_t start, end, host_start;
	int16_t device;
	uint32_t phase; /* of the call that launched it (its correlation), else the phase open at its start */
};

/* The pass's device timeline: the records waiting (a min-heap by start,
 * bounded), and each device's busy stretch being merged. */
struct gs_gpu_pass {
	struct gs_gpu_item *heap;
	size_t nheap;
	uint64_t cur_start[GSPY_DEVICES], cur_end[GSPY_DEVICES];
};

/* A busy stretch of a device ends: to its busy time, and the part of it
 * inside named phases to its time in phases (a stretch that began in a
 * phase can run long past it: a GPU-bound loop, a final sync). */
static void busy_done(struct gs_pass *p, int dev)
{
	struct gs_gpu_pass *s = p->gpu;
	struct gs_device_gpu *d = &p->r->dev[dev];
	uint64_t ns = s->cur_end[dev] - s->cur_start[dev];
	d->busy_ns += ns;
	gs_series_busy(p->r->series, s->cur_start[dev], s->cur_end[dev]);
	d->phase_busy_ns += gs_timeline_in_phases(p, s->cur_start[dev], s->cur_end[dev]);
	s->cur_start[dev] = s->cur_end[dev] = 0;
}

/* The device timeline, in start order: busy time and idle gaps, an idle gap
 * being host-bound when the work after it was launched only after the GPU
 * went idle. */
static void device_step(struct gs_pass *p, const struct gs_gpu_item *g)
{
	if (g->device < 0 || g->device >= GSPY_DEVICES)
		return;
	struct gs_report *r = p->r;
	struct gs_gpu_pass *s = p->gpu;
	struct gs_device_gpu *d = &r->dev[g->device];
	uint64_t *cur_start = &s->cur_start[g->device], *cur_end = &s->cur_end[g->device];
	struct gs_phase_stat *ph = g->phase < r->nphases ? &r->phases[g->phase] : NULL;
	d->ops++;
	if (ph && g->end > ph->last_ns)
		ph->last_ns = g->end;
	if (!*cur_end) {
		*cur_start = g->start;
		*cur_end = g->end;
	} else if (g->start > *cur_end) {
		uint64_t gap = g->start - *cur_end;
		if (g->host_start > *cur_end) {
			d->idle_host_ns += gap;
			/* The phase's share: the part after its first run began. */
			uint64_t from = ph && ph->first_ns > *cur_end ? ph->first_ns : *cur_end;
			if (ph && g->start > from)
				ph->idle_host_ns += g->start - from;
		} else
			d->idle_other_ns += gap;
		busy_done(p, g->device);
		*cur_start = g->start;
		*cur_end = g->end;
	} else if (g->end > *cur_end) {
		*cur_end = g->end;
	}
}

static void heap_pop(struct gs_pass *p)
{
	struct gs_gpu_pass *s = p->gpu;
	struct gs_gpu_item *h = s->heap;
	device_step(p, &h[0]);
	h[0] = h[--s->nheap];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < s->nheap && h[l].start < h[m].start)
			m = l;
		if (l + 1 < s->nheap && h[l + 1].start < h[m].start)
			m = l + 1;
		if (m == i)
			break;
		struct gs_gpu_item x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

static void heap_push(struct gs_pass *p, struct gs_gpu_item g)
{
	struct gs_gpu_pass *s = p->gpu;
	if (!s->heap) {
		s->heap = malloc(HEAP_MAX * sizeof(*s->heap));
		if (!s->heap) {
			device_step(p, &g);
			return;
		}
	}
	if (s->nheap == HEAP_MAX)
		heap_pop(p);
	size_t i = s->nheap++;
	s->heap[i] = g;
	while (i && s->heap[(i - 1) / 2].start > s->heap[i].start) {
		struct gs_gpu_item x = s->heap[i];
		s->heap[i] = s->heap[(i - 1) / 2];
		s->heap[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

void gs_gpu_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	struct gs_report *r = p->r;
	if (feed == GS_FEED_SPAN) { /* cur: the phase the span names */
		if (ev->device >= 0 && ev->device < GSPY_DEVICES) {
			r->dev[ev->device].span_ns += ev->gpu_ns;
			r->dev[ev->device].spans++;
			r->dev[ev->device].phase_span_ns += cur ? ev->gpu_ns : 0;
			r->dev[ev->device].phase_spans += cur != 0;
		}
		return;
	}
	if (!p->gpu)
		p->gpu = xcalloc(1, sizeof(*p->gpu));
	uint64_t ns = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0, host_start = p->launched_at;
	if (ev->kind == GSPY_KIND_gpu_kernel) {
		if (ev->graph_id) {
			r->graph_kernels++;
			r->graph_kernel_ns += ns;
		}
		if (host_start && ev->start_ns > host_start) {
			uint64_t q = ev->start_ns - host_start;
			r->queue_n++;
			r->queue_sum_ns += q;
			if (q > r->queue_max_ns)
				r->queue_max_ns = q;
		}
		/* A graph's kernels share one launch call: a kernel is short
		 * against its own launch only. */
		if (!ev->graph_id) {
			r->own_kernels++;
			r->own_kernel_ns += ns;
			if (r->total.launch.count && ns * r->total.launch.count < r->total.launch.host_ns)
				r->short_kernels++;
		}
	}
	heap_push(p, (struct gs_gpu_item){ ev->start_ns, ev->end_ns, host_start, ev->device, (uint32_t)cur });
}

/* The records still waiting, then each device's last busy stretch. */
void gs_gpu_finish(struct gs_pass *p)
{
	struct gs_gpu_pass *s = p->gpu;
	if (!s)
		return;
	while (s->nheap)
		heap_pop(p);
	for (int d = 0; d < GSPY_DEVICES; d++)
		if (s->cur_end[d])
			busy_done(p, d);
	free(s->heap);
	free(s);
	p->gpu = NULL;
}

void gs_gpu_merge(struct gs_report *d, const struct gs_report *s)
{
	for (int i = 0; i < GSPY_DEVICES; i++) {
		d->dev[i].busy_ns += s->dev[i].busy_ns;
		d->dev[i].phase_busy_ns += s->dev[i].phase_busy_ns;
		d->dev[i].idle_host_ns += s->dev[i].idle_host_ns;
		d->dev[i].idle_other_ns += s->dev[i].idle_other_ns;
		d->dev[i].ops += s->dev[i].ops;
		d->dev[i].span_ns += s->dev[i].span_ns;
		d->dev[i].spans += s->dev[i].spans;
		d->dev[i].phase_span_ns += s->dev[i].phase_span_ns;
		d->dev[i].phase_spans += s->dev[i].phase_spans;
	}
	d->gpu_records += s->gpu_records;
	d->gpu_matched += s->gpu_matched;
	d->queue_n += s->queue_n;
	d->queue_sum_ns += s->queue_sum_ns;
	if (s->queue_max_ns > d->queue_max_ns)
		d->queue_max_ns = s->queue_max_ns;
	d->graph_kernels += s->graph_kernels;
	d->graph_kernel_ns += s->graph_kernel_ns;
	d->short_kernels += s->short_kernels;
	d->own_kernels += s->own_kernels;
	d->own_kernel_ns += s->own_kernel_ns;
}

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
