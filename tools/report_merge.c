/* SPDX-License-Identifier: MIT */
/* The whole of several processes: their reports' numbers added (report.h). */
#include <string.h>

#include "report.h"
#include "xalloc.h"

static void agg_merge(struct gs_agg *d, const struct gs_agg *s)
{
	d->count += s->count;
	d->bytes += s->bytes;
	d->host_ns += s->host_ns;
	d->gpu_count += s->gpu_count;
	d->gpu_bytes += s->gpu_bytes;
	d->gpu_ns += s->gpu_ns;
}

static void cats_merge(struct gs_cats *d, const struct gs_cats *s)
{
	const struct gs_agg *a = (const struct gs_agg *)s;
	struct gs_agg *b = (struct gs_agg *)d;
	for (size_t i = 0; i < sizeof(*s) / sizeof(struct gs_agg); i++)
		agg_merge(&b[i], &a[i]);
}

void gs_report_merge(struct gs_report *d, const struct gs_report *s)
{
	d->fw_seen |= s->fw_seen;
	if (s->framework == GS_FW_JAX || (d->framework == GS_FW_CUDA && s->framework != GS_FW_CUDA))
		d->framework = s->framework;
	/* The first process's out-of-memory failure stands for the merge's. */
	if (s->oom.n && !d->oom.n) {
		d->oom = s->oom;
		d->oom.phase = s->oom.phase ? xstrdup(s->oom.phase) : NULL;
		d->oom.frames = s->oom.frames ? xstrdup(s->oom.frames) : NULL;
	}
	if (!d->nprocs) {
		gs_report_phase(d, "(no phase)");
		d->t_first = s->t_first;
		snprintf(d->label, sizeof(d->label), "all processes");
	}
	d->nprocs += s->nprocs;
	if (s->nevents && (!d->nevents || s->t_first < d->t_first))
		d->t_first = s->t_first;
	if (s->t_last > d->t_last)
		d->t_last = s->t_last;
	d->nevents += s->nevents;
	/* Each process's pauses are cut from its own timeline. */
	if (s->windows > d->windows)
		d->windows = s->windows;
	if (s->paused_ns > d->paused_ns)
		d->paused_ns = s->paused_ns;
	d->proc.events += s->proc.events;
	d->proc.dropped += s->proc.dropped;
	d->proc.nvtx_too_deep += s->proc.nvtx_too_deep;
	d->proc.host_unwritten += s->proc.host_unwritten;
	d->proc.stacks_taken += s->proc.stacks_taken;
	d->proc.stacks_ns += s->proc.stacks_ns;
	if (s->proc.stack_min_ns > d->proc.stack_min_ns)
		d->proc.stack_min_ns = s->proc.stack_min_ns;
	if (s->proc.wait_stack_min_ns > d->proc.wait_stack_min_ns)
		d->proc.wait_stack_min_ns = s->proc.wait_stack_min_ns;
	if (s->gpu_timing == GSPY_GPU_TIMING_cupti)
		d->gpu_timing = GSPY_GPU_TIMING_cupti;
	else if (s->gpu_timing == GSPY_GPU_TIMING_events && d->gpu_timing != GSPY_GPU_TIMING_cupti)
		d->gpu_timing = GSPY_GPU_TIMING_events;
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
	for (int k = 0; k < GSPY_KIND_COUNT; k++)
		d->captured[k] += s->captured[k];
	d->graph_kernels += s->graph_kernels;
	d->graph_gpu_copies += s->graph_gpu_copies;
	d->graph_gpu_copy_bytes += s->graph_gpu_copy_bytes;
	d->graph_gpu_memsets += s->graph_gpu_memsets;
	d->graph_kernel_ns += s->graph_kernel_ns;
	d->short_kernels += s->short_kernels;
	d->own_kernels += s->own_kernels;
	d->own_kernel_ns += s->own_kernel_ns;
	cats_merge(&d->total, &s->total);
	for (size_t i = 0; i < s->nphases; i++) {
		size_t at = gs_report_phase(d, s->phases[i].name); /* may move d->phases */
		struct gs_phase_stat *p = &d->phases[at];
		p->count += s->phases[i].count;
		p->wall_ns += s->phases[i].wall_ns;
		p->gpu_busy_ns += s->phases[i].gpu_busy_ns;
		p->idle_host_ns += s->phases[i].idle_host_ns;
		if (s->phases[i].first_ns && (!p->first_ns || s->phases[i].first_ns < p->first_ns))
			p->first_ns = s->phases[i].first_ns;
		if (s->phases[i].last_ns > p->last_ns)
			p->last_ns = s->phases[i].last_ns;
		p->span_ns += s->phases[i].span_ns;
		p->span_n += s->phases[i].span_n;
		p->library |= s->phases[i].library;
		p->compile |= s->phases[i].compile;
		p->nvml_n += s->phases[i].nvml_n;
		p->util_sum += s->phases[i].util_sum;
		p->power_sum += s->phases[i].power_sum;
		p->sm_sum += s->phases[i].sm_sum;
		cats_merge(&p->c, &s->phases[i].c);
	}
	gs_tele_merge(d, s);
	for (size_t i = 0; i < s->kernels_cap; i++) {
		const struct gs_kernel_stat *k = &s->kernels[i];
		if (!k->name)
			continue;
		struct gs_kernel_stat *t = gs_report_kernel(d, k->name);
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
	d->peak_reserved += s->peak_reserved; /* an upper bound across processes */
	for (size_t i = 0; i < s->nfailed; i++) {
		const struct gs_failed *f = &s->failed[i];
		gs_report_failed(d, f->api, f->result, f->first_ns, f->first_bytes, f->count, f->bytes);
	}
	d->failed_other += s->failed_other;
	gs_sites_merge(&d->sites, &s->sites);
}
