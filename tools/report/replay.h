/* SPDX-License-Identifier: MIT */
/*
 * The steady-state steps replayed with a change made (replay.c): what a
 * fix would save, computed from the run's own timeline rather than bounded
 * by it. docs/design.md#replay says what the model assumes and where it
 * is wrong.
 */
#ifndef GPUSPY_REPLAY_H
#define GPUSPY_REPLAY_H

#include <stddef.h>
#include <stdint.h>

/* One event kept for the replay: a host call, a GPU record, a top-level
 * phase's begin, or a nested phase's begin kept for its step count alone
 * (GS_IT_MARK: the PyTorch helper's phases inside the user's range). */
enum { GS_IT_CALL, GS_IT_GPU, GS_IT_PHASE, GS_IT_MARK };
struct gs_item {
	uint64_t start, end, bytes, stream, corr; /* end >= start (steps.c clamps a forged one); a phase's
						    * corr: the PyTorch helper's step count + 1 (0: none) */
	uint64_t own_ns; /* gpuspy's stack walk after the call (0: none, or not timed) */
	uint32_t tid, tok, stack_id, phase; /* tok: the call's kind of work (steps.c); phase: a call's
					     * top-level phase, a GPU record's launching call's innermost */
	uint32_t inner;  /* a call's innermost phase */
	uint16_t api;
	uint8_t what, kind, dir, mem, async;
	int16_t device;
};

/* What a batch that a PyTorch DataLoader's worker loaded costs the main
 * process as it reaches the step (unpickled from shared memory, pinned by
 * the loader's thread, both under the GIL): GS_CH_WORKERS keeps it of each
 * data phase's work where the helper marked the loop's DataLoader
 * (tests/gpu/whatif/loader_cost.sh; docs/design.md#replay). Other loaders'
 * is not measured: none is kept. */
#define GS_LOADER_HANDOFF_NS 750000
/* What the batch costs its worker beyond the main process's loading of it
 * (collated and pickled into shared memory): the workers that keep up
 * are counted with it. loader_cost.sh at 3 ms of load a batch, on an H100:
 * 2 workers ran 2.58 ms a step (a batch every 5.17 ms each, about 1.7 ms
 * over the main process's 3.44 ms load), 3 ran 1.95: one point, rounded
 * (tests/gpu/results/zoo/zoo.md). */
#define GS_LOADER_WORKER_NS 2000000

/* The changes a replay can make. */
enum gs_change {
	GS_CH_NONE,    /* the run as it was: the model's own step */
	GS_CH_PIN,     /* pageable copies of 1 MiB or more become async copies from pinned memory */
	GS_CH_NOWAIT,  /* the step's waits (synchronize, a small copy back) block the host in one step of wait_every only */
	GS_CH_GRAPH,   /* each step's launches become one graph launch (a graph ends at a wait too) */
	GS_CH_WORKERS, /* the data phase's host work moves to loader workers, less a batch's handoff */
	GS_CH_POOL,    /* allocations and frees come from a pool: no cost, no synchronization */
	GS_CH_FUSE,    /* several steps a dispatch: the step's host work divided by fuse */
	GS_CH_COUNT
};

struct gs_replay {
	const struct gs_item *it; /* the window's items, in start order */
	size_t n;
	uint64_t ta, tb;       /* the window: its steps' first begin and last end */
	const uint64_t *bounds; /* its steps' begins, steps + 1 of them (bounds[0] = ta) */
	size_t steps;          /* whole steps in it */
	const uint8_t *odd;    /* by step, NULL: none: a step replayed but left out of the figures a
				* step (an evaluation's, every few steps: steps.c's window_of) */
	double pinned_bps;     /* pinned copy bandwidth, bytes a second */
	uint64_t launch_ns;    /* an async call's host cost (the median launch) */
	uint64_t node_gap_ns;  /* the GPU's gap between a graph's kernels */
	uint32_t data_phase;   /* the loader's phase (0: none) */
	unsigned fuse;         /* steps a dispatch for GS_CH_FUSE */
	unsigned wait_every;   /* GS_CH_NOWAIT: the steps still waiting are one in this many (the advice's) */
	int framework;         /* PyTorch or JAX: the host code between a step's launches is theirs */
	int copy_syncs;        /* PyTorch: a blocking copy is an async copy, then a synchronize of its stream */
	uint64_t handoff_ns;     /* GS_CH_WORKERS: a batch's handoff, kept of each data phase (a DataLoader's) */
	/* What tracing added to each call, taken off every replay (the
	 * savings are the untraced program's): gpuspy's record, and CUPTI's
	 * work for each GPU record a call launched, when CUPTI was on. An
	 * XLA graph launch traced under CUPTI keeps graph_keep_pm per mille
	 * of its time, and the host's gap before it loses graph_beyond_pm per
	 * mille of what the launch lost (CUPTI's work in the calls gpuspy
	 * does not see); without graph_keep_pm (not JAX), and one made by
	 * GS_CH_GRAPH, takes graph_base_ns, and graph_node_ns for each
	 * kernel node. */
	uint64_t record_ns, cupti_ns, graph_base_ns, graph_node_ns;
	unsigned graph_keep_pm, graph_beyond_pm;
	uint64_t stack_ns; /* and a call stack's walk after the call, where the trace did
			    * not time each (gs_item.own_ns): gs_replay_mean_walk */
	uint64_t *ahead;   /* by item: gs_replay_overlaps (NULL: none) */
};

/* Each GPU record's overlap with the work before it on its stream, as the
 * run had it, by item (calloc'd; NULL out of memory): how far before its
 * stream is free the replay may start it. XLA's kernels start before the
 * last one ends (a programmatic dependent launch: the what-if suite's JAX
 * loop, about a tenth of its GPU time in the window, 0.2 us each at the
 * median, up to 1.4 us); queued one after another, its GPU-bound fix
 * replayed 6-8 us a step over the 51 us it ran. */
uint64_t *gs_replay_overlaps(const struct gs_replay *rp);

/* The walk to take off after a call with a stack but no walk timed: in a
 * trace from before records carried their walk, the run's mean (taken
 * walks, their total ns); none in one that times them (such a stack was
 * taken elsewhere: a host allocation's, inside its call). */
uint64_t gs_replay_mean_walk(const struct gs_item *v, size_t n, uint64_t taken, uint64_t ns);
/* The median host time of a kernel launch (graph launches aside) that
 * starts in [ta, tb); 0 with none. */
uint64_t gs_replay_median_launch(const struct gs_item *v, size_t n, uint64_t ta, uint64_t tb);

/* The window replayed with change made: its length in ns, less the odd
 * steps' (divide by the steps that are not odd for a step). */
uint64_t gs_replay_run(const struct gs_replay *rp, enum gs_change change);

/* Whether a call waits for the GPU (a synchronize, a blocking copy, a
 * free that synchronizes) and, of those, whether it is a wait the program
 * could drop (a synchronize, or a small copy back: its cost is the wait). */
/* qsort's comparison of two uint64_t, ascending. */
int gs_cmp_u64(const void *a, const void *b);

/* The odd steps' time in the run (their bounds' spans); 0 with none. */
uint64_t gs_replay_odd_run(const struct gs_replay *rp);

/* Whether time t is in the window's steps that count: in [ta, tb), and
 * not in an odd step. */
int gs_replay_counts(const struct gs_replay *rp, uint64_t t);

int gs_replay_waits(const struct gs_item *c);
int gs_replay_droppable_wait(const struct gs_item *c);
/* A pageable copy worth pinning (1 MiB or more). */
int gs_replay_pinnable(const struct gs_item *c);
/* A device (or managed) allocation or free, which a pool would serve (not
 * the host's malloc, free or mmap that --host-alloc records, nor pinned). */
int gs_replay_poolable(const struct gs_item *c);

#endif
