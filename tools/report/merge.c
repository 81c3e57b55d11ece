/* SPDX-License-Identifier: MIT */
/*
 * The whole of several processes: their reports' numbers added
 * (report.h): the run's own figures here, each section's by its merge
 * (section.h).
 */
#include <string.h>

#include "report/report.h"
#include "report/section.h"

void gs_report_merge(struct gs_report *d, const struct gs_report *s)
{
	d->fw_seen |= s->fw_seen;
	if (s->framework == GS_FW_JAX || (d->framework == GS_FW_CUDA && s->framework != GS_FW_CUDA))
		d->framework = s->framework;
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
	for (size_t i = 0; i < gs_nsections; i++)
		if (gs_sections[i].merge)
			gs_sections[i].merge(d, s);
}
