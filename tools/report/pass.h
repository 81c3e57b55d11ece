/* SPDX-License-Identifier: MIT */
/*
 * The report's pass (pass.c) and what it holds while it runs: one
 * streaming pass over a process's events cuts out the paused time, follows
 * the phases (timeline.c), finds the phase each event belongs to, and
 * hands the event to the sections fed its class (section.h). Nothing here
 * outlives the pass: the results are struct gs_report.
 */
#ifndef GPUSPY_PASS_H
#define GPUSPY_PASS_H

#include <stddef.h>
#include <stdint.h>

#include "read/input.h"
#include "report/report.h"

#define GS_PHASE_DEPTH 64 /* open phases followed; deeper ones count in the deepest */

struct gs_open_phase {
	size_t idx;
	uint64_t begin;
};

struct gs_phase_change {
	uint64_t t;
	uint32_t phase; /* the innermost phase open from t on */
};

/* The phases open, the user's and the libraries' apart, and the ring of
 * the latest phase changes, which places the GPU's late records. */
struct gs_timeline {
	struct gs_open_phase stack[GS_PHASE_DEPTH], lib[GS_PHASE_DEPTH];
	int depth, ldepth;
	uint64_t top_begin, covered; /* the open top-level phase's begin; the time in top-level phases */
	struct gs_phase_change *changes;
	uint64_t nchanges;
	char fw_name[128]; /* the name of the phase event being handed out, when XLA's was renamed */
};

struct gs_corr_slot {
	uint64_t id, host_start;
	uint32_t phase;
};

struct gs_last_call;
struct gs_gpu_pass;
struct gs_graph_pass;
struct gs_coll_state;
struct gs_step_ring;
struct gs_stack_sums;

struct gs_pass {
	struct gs_report *r;
	struct gs_input *in; /* the events' stacks */
	struct gs_timeline tl;
	struct gs_corr_slot *corr; /* external id -> the call that launched it */
	int phase_depth;       /* GS_FEED_PHASE: the depth the phase began at (0: top level) */
	uint64_t launched_at;  /* GS_FEED_GPU: when the call that launched it began; 0: not known */
	int peak_snapshot;     /* memory.c: reserved memory peaked at this host call; sites.c,
				* fed it after, takes the sites' snapshot once it has the call */
	/* The sections' scratch: each allocates its own and frees it in its finish. */
	struct gs_last_call *last;    /* phases.c: each thread's last call */
	struct gs_gpu_pass *gpu;      /* gpu.c: the device timeline */
	struct gs_graph_pass *graphs; /* graphs.c: executable graphs' nodes */
	struct gs_coll_state *coll;   /* collectives.c */
	struct gs_step_ring *steps;   /* steps.c: the latest events */
	struct gs_stack_sums *stack_sums; /* stacks.c: the calls by stack */
};

/* The timeline (timeline.c). A phase event (user's phase, library range,
 * XLA's module renamed to the user's function): 1, with *began the user's
 * phase it began (SIZE_MAX: none); 0 for another event. */
int gs_timeline_event(struct gs_pass *p, struct gs_ev *ev, size_t *began);
/* The innermost user's phase open now (0: "(no phase)"). */
size_t gs_timeline_current(const struct gs_pass *p);
/* The phase open at time t, from the ring of recent phase changes (cur when
 * t is older than the ring). */
size_t gs_timeline_at(const struct gs_pass *p, uint64_t t, size_t cur);
/* How much of [s, e) lies inside named phases. */
uint64_t gs_timeline_in_phases(const struct gs_pass *p, uint64_t s, uint64_t e);
/* The end of the trace: phases still open run to it; "(no phase)" gets
 * the span no phase covered. */
void gs_timeline_end(struct gs_pass *p);

#endif
