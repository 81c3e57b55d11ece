/* SPDX-License-Identifier: MIT */
/*
 * The record path's rare extras (gs.h's gs_end and gs_begin_on), out of
 * line so that the inline path names no module: each is taken only when
 * its option or state asks for it, and each module keeps its own code.
 */
#include "gs.h"
#include "gpu_timing.h"
#include "graphs.h"
#include "stacks.h"

void gs_end_rare(struct gs_tls *t, struct gspy_record *r)
{
	/* Still inside the hook (depth raised): what the unwinder allocates
	 * is not recorded. It times itself from r->end: the record's own
	 * time. A call that failed with a sticky error (a kernel faulted)
	 * always keeps its stack: the post-mortem's line. */
	uint64_t own = 0;
	if (r->result && gspy_result_sticky(r->result)) {
		gs_cupti_faulted();
		own = gs_stack_fault(r);
		gs_stack_fault_site(t); /* a failed launch is not its last launch */
	} else if (gs_g.stack_kinds & (1u << r->kind)) {
		own = gs_stack_note(r);
	}
	if (r->kind == GSPY_KIND_launch && !r->result && !gspy_api_host_func(r->api))
		gs_stack_launch_where(t, r);
	if (t->cupti_corr)
		gs_cupti_note(r, t->cupti_corr);
	if (__atomic_load_n(&gs_g.capturing, __ATOMIC_RELAXED) && (r->flags & GSPY_FLAG_ASYNC))
		gs_capture_note(r);
	gs_commit_own(t, r, own);
}

void gs_begin_rare(unsigned api, uint64_t stream)
{
	gs_events_work(api, stream);
}
