/* SPDX-License-Identifier: MIT */
/*
 * Call sites (issue 6): events grouped by their rendered call stack.
 *   alloc: device and pinned allocations, by stack and memory kind;
 *   peak:  what each allocation site held when reserved device memory peaked;
 *   copy:  pageable copies, each with the stack that allocated its host
 *          buffer when host allocations were recorded;
 *   sync:  waits made inside phases that repeat (per step).
 * Memory grows with distinct stacks and live recorded allocations, never
 * with the number of events.
 */
#ifndef GPUSPY_SITES_H
#define GPUSPY_SITES_H

#include <stdint.h>

#include <cJSON.h>

#include "input.h"

struct gs_site {
	char *frames;   /* rendered frames joined by '\n', innermost first */
	uint8_t mem;    /* alloc sites: GSPY_MEM_*; copy sites: GSPY_DIR_*; sync sites: 0 */
	char *phase;    /* sync sites: the phase the waits were in */
	uint64_t count, bytes, host_ns;
	uint64_t live_bytes, live_count; /* alloc sites: device memory held now */
	uint64_t peak_bytes, peak_count; /* ... and at the peak of reserved memory */
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
	struct gs_siteset alloc, copy, sync, host;
	struct gs_live *dev, *hostlive; /* live recorded allocations */
	size_t ndev, devcap, nhost, hostcap;
	int any; /* some event had a stack */
};

/* Before the memory bookkeeping of the event (the peak uses its result). */
void gs_sites_event(struct gs_sites *s, struct gs_input *in, const struct gs_ev *ev,
		    const char *phase);
/* Reserved device memory reached a new peak: remember what each site holds. */
void gs_sites_peak(struct gs_sites *s);
void gs_sites_merge(struct gs_sites *d, const struct gs_sites *s);
void gs_sites_free(struct gs_sites *s);
/* The four lists for --json (sites with a zero count are left out). */
void gs_sites_json(cJSON *o, const struct gs_sites *s);
/* Sorted views for printing: count returned, *out malloc'ed. */
size_t gs_sites_sorted(const struct gs_siteset *set, int by, const struct gs_site ***out);
enum { GS_BY_BYTES, GS_BY_COUNT, GS_BY_PEAK, GS_BY_TIME };

#endif
