/* SPDX-License-Identifier: MIT */
/*
 * The step (steps.c): the repeated unit of work of any program, found
 * with no annotation, its steady state apart from its warm-up, and what
 * each change would save a step, replayed (replay.h).
 */
#ifndef GPUSPY_STEPS_H
#define GPUSPY_STEPS_H

#include <stdint.h>

#include "report/replay.h"

/* Events the step is searched in: the run's last ones. */
#define GS_STEPS_RING (1u << 20)

struct gs_step_change {
	int64_t save_ns;     /* a step, replayed (may be negative: the change would cost) */
	uint64_t count;      /* the calls it changes, in the window */
	char where[240];     /* the line of the call it changes most (waits), "" unknown */
	uint64_t after_ns;   /* waits: the host's own work right after the wait, a step;
			      * workers: the data phase's own host work, a step */
	uint64_t workers;    /* workers: how many load a batch within the replayed step */
	int bound;           /* the saving is a bound, not a replay (workers: the CPUs' floor set the step) */
	uint32_t phase, inner; /* waits: the top-level and innermost phases of the one that waits longest */
};

struct gs_steps {
	int found;              /* a step repeats */
	char what[200];         /* what was taken as the step */
	uint64_t steps;         /* steps found, from the steady state on */
	uint64_t window;        /* of those, the ones replayed (the last), odd_replayed aside: every figure a step is theirs */
	uint64_t odd_steps;     /* of those, marked steps with other phases too (an evaluation's): not replayed */
	uint64_t odd_replayed;  /* such steps among the window's, where neither of the last two stretches without them
				 * held six steps (an evaluation every few steps): replayed with it, in no figure a step */
	uint64_t warmup_ns;     /* from the first event searched to the steady state */
	uint64_t searched_from; /* the first event searched (the run's first, unless kept_last) */
	uint64_t steady_from;   /* when the steady state begins */
	uint64_t steady_to;     /* when the last step found ends */
	uint64_t step_ns;       /* the steady step, median */
	uint64_t model_ns;      /* the replay's own step, nothing changed */
	int replay_off;         /* model_ns over the run's step by a tenth: no savings replayed (steps.c) */
	uint64_t gpu_ns;        /* GPU work a step */
	uint64_t launches;      /* kernel launches a step (host calls) */
	uint64_t graph_launches; /* graph launches a step, rounded (a captured step's replays: torch.compile's
				  * reduce-overhead, torch.cuda.graphs, XLA's modules) */
	char launch_where[240]; /* the program's function they come from (sites.h), "" unknown */
	uint64_t launch_path_ns; /* the host's time a step in launches and the dispatch between them */
	/* The replayed steps' own host time a step in waits (a synchronize,
	 * a blocking copy), in pageable copies (h2d, d2h) and in device
	 * allocations and frees: without GPU records, what a bound from the
	 * run's totals (warm-up included) may claim a step of the loop; and
	 * in its data phases (a phase named for data, as data_starvation's). */
	uint64_t wait_host_ns, pageable_host_ns[2], alloc_host_ns, data_host_ns;
	int kept_last;          /* the events kept ended before the run's: only its last steps were seen */
	double pinned_bps;      /* the bandwidth the pinned copies were replayed at */
	uint64_t handoff_ns;    /* what loader workers' replay kept of a data phase (its DataLoader's batch) */
	uint64_t pinnable[2];   /* of those, in the window: host-to-device, device-to-host */
	const char *pinned_from; /* where it came from */
	struct gs_step_change change[GS_CH_COUNT];
	/* One-time costs: before the steady state. */
	uint64_t once_copy_bytes, once_copy_ns, once_copies;
	char once_where[240];   /* the line of the largest of those copies, "" unknown */
};

/* Which of the window's steps a replayed figure is over: fills among with
 * " among the last N" where evaluation steps were replayed with them
 * (odd_replayed; else ""), and returns the words before the count, "" or
 * "the last " (steps_show.c). */
const char *gs_steps_among(const struct gs_steps *s, char *among, size_t cap);

#endif
