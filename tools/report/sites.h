/* SPDX-License-Identifier: MIT */
/*
 * Call sites: events grouped by their rendered call stack (docs/commands.md,
 * the report's sites).
 *   alloc: device and pinned allocations, by stack and memory kind;
 *   peak:  what each allocation site held when reserved device memory peaked;
 *   copy:  pageable copies, each with the stack that allocated its host
 *          buffer when host allocations were recorded;
 *   sync:  waits made inside phases that repeat (per step);
 *   frees: device frees after warm-up, counted by stack, one set for
 *          each of allocation churn's two rules of warm-up (report.h's
 *          churn): a cache emptied every step.
 * Memory grows with distinct stacks and live recorded allocations, never
 * with the number of events.
 */
#ifndef GPUSPY_SITES_H
#define GPUSPY_SITES_H

#include <stdint.h>

#include <cJSON.h>

#include "read/input.h"

struct gs_site {
	char *frames;   /* rendered frames joined by '\n', innermost first */
	uint8_t mem;    /* alloc sites: GSPY_MEM_*; copy sites: GSPY_DIR_*; sync sites: 0 */
	char *phase;    /* sync sites: the phase the waits were in */
	uint64_t count, bytes, host_ns;
	uint64_t live_bytes, live_count; /* alloc sites: device memory held now */
	uint64_t peak_bytes, peak_count; /* ... and at the peak of reserved memory */
	uint64_t oom_bytes, oom_count;   /* ... when an allocation first ran out of memory */
	uint64_t base_bytes, last_bytes; /* ... at the second and the latest step (memory.c) */
	char *alloc_phase; /* alloc sites: the phase all its allocations were made in */
	int phases_mixed;  /* ... or they were made in more than one (or in none) */
	char *host_alloc;  /* copy sites: where the host buffer came from */
	uint64_t host_alloc_bytes;
};

struct gs_siteset {
	struct gs_site *v;
	size_t n, cap;
	size_t *index; /* open addressing: position + 1 */
	size_t index_cap;
};

struct gs_live {
	uint64_t addr, bytes;
	size_t site; /* index into its site set */
};

struct gs_sites {
	struct gs_siteset alloc, copy, sync, host, frees[2];
	struct gs_live *dev, *hostlive; /* live recorded allocations */
	size_t ndev, devcap, nhost, hostcap;
	int any; /* some event had a stack */
	unsigned owners; /* allocations' frames: 1 PyTorch, 2 XLA/JAX, 4 CuPy */
};

/* Remember what each allocation site holds now: at the peak of reserved
 * memory, at an out-of-memory failure, at a step (GS_SNAP_*, or'ed). */
enum { GS_SNAP_PEAK = 1, GS_SNAP_OOM = 2, GS_SNAP_BASE = 4, GS_SNAP_LAST = 8 };
void gs_sites_snapshot(struct gs_sites *s, unsigned what);
/* Who owns a rendered frame: NULL for the program's own code, else the
 * library, framework or interpreter ("PyTorch", "cuBLAS", "a Python
 * package") whose frames a site passes over. */
const char *gs_frame_owner(const char *frame);
/* The frames of ev's stack as a site shows them, into buf; 0 without one. */
int gs_sites_frames(struct gs_sites *s, struct gs_input *in, const struct gs_ev *ev, char *buf, size_t cap);
/* The first of those frames that is the program's own (gs_frame_owner
 * NULL), into out; "" without a stack or such a frame. */
void gs_sites_own_line(struct gs_sites *s, struct gs_input *in, uint32_t stack_id, char *out, size_t cap);
/* Where a step's launches come from (ids: their stacks, sorted in place):
 * the program's own function whose frames are the innermost own frame of
 * a third of them or more (those without an own frame count too), as
 * "f (path:L1-L2)" (one line, or a range that does not fit: the first
 * frame seen); "" when no function has that share or no launch has a
 * stack. */
void gs_sites_step_line(struct gs_sites *s, struct gs_input *in, uint32_t *ids, size_t n, char *out, size_t cap);
/* The waits in repeated phases that carry no stack (GPUSPY_STACK_MIN). */
void gs_sites_unsited(const struct gs_siteset *set, uint64_t *n, uint64_t *ns);
/* Sorted views for printing: count returned, *out malloc'ed. */
size_t gs_sites_sorted(const struct gs_siteset *set, int by, const struct gs_site ***out);
/* The by-peak, by-OOM and by-growth views hold only sites with a share. */
enum { GS_BY_BYTES, GS_BY_COUNT, GS_BY_PEAK, GS_BY_TIME, GS_BY_OOM, GS_BY_GROWTH };

#endif
