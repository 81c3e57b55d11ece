/* SPDX-License-Identifier: MIT */
/*
 * A process's run over time, for the HTML report (series.c): GPU busy
 * time, reserved device memory and NVML's samples in time bins, and each
 * step's time by phase. Memory is bounded whatever the trace's length:
 * GS_SERIES_BINS bins that double in width when the run outgrows them,
 * and GS_SERIES_STEPS points that each stand for 1, 2, 4 ... steps. A
 * merge adds (sums and counts stay exact); what a point stands for is in
 * the output, so a chart never shows a downsampled value as one step's.
 * Fed by the report's pass (report.c, memory.c, telemetry.c) when
 * gs_series_on is set (`report --html`).
 */
#ifndef GPUSPY_SERIES_H
#define GPUSPY_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#define GS_SERIES_BINS 1024
#define GS_SERIES_STEPS 2048
#define GS_SERIES_PHASES 12 /* top-level phases a step is split into; the rest are "other" */

struct gs_report;
struct gspy_nvml;

struct gs_bin {
	uint64_t busy_ns;              /* GPU busy time (all devices) in the bin */
	int64_t reserved_max, reserved_last; /* -1: no change in the bin */
	uint32_t util_n, used_n, power_n, sm_n, temp_n; /* NVML samples with each */
	double util, used_mib, power_w, sm_mhz, temp_c;   /* ... their sums */
};

struct gs_step_point {
	uint64_t t, n, total_ns;       /* first step's start, steps, their time */
	uint64_t coll_ns;              /* GPU time of collective kernels (NCCL) that began in them */
	uint64_t ph[GS_SERIES_PHASES + 1]; /* time in each top-level phase; [GS_SERIES_PHASES]: other */
};

struct gs_series {
	uint64_t t0, bin_ns;
	size_t used;                   /* bins up to the latest time seen */
	struct gs_bin bin[GS_SERIES_BINS];
	size_t slot_phase[GS_SERIES_PHASES]; /* the report's phase index of each slot */
	size_t nslots;
	uint64_t slot_wall[GS_SERIES_PHASES + 1]; /* wall_ns of each at the last step boundary */
	struct gs_step_point *step;    /* GS_SERIES_STEPS points */
	size_t nsteps;                 /* points complete */
	uint64_t group;                /* steps per point */
	uint64_t first;                /* the step number of the first point's first step */
	struct gs_step_point cur;      /* the point being filled */
	uint64_t step_begin;           /* the open step's start, 0 none */
	uint64_t coll_step;            /* the open step's collective GPU time */
	uint64_t top_end;              /* the latest end of a top-level phase */
	int64_t reserved;              /* the reserved memory last seen */
};

extern int gs_series_on;

/* Allocated at the report's start when gs_series_on; freed with it. */
struct gs_series *gs_series_new(uint64_t t0);
void gs_series_free(struct gs_series *s);

/* The pass's events. */
void gs_series_busy(struct gs_series *s, uint64_t start, uint64_t end);
void gs_series_reserved(struct gs_series *s, uint64_t t, int64_t reserved);
void gs_series_nvml(struct gs_series *s, uint64_t t, const struct gspy_nvml *v);
void gs_series_phase_begin(struct gs_series *s, const struct gs_report *r, size_t p, int depth);
void gs_series_top_end(struct gs_series *s, uint64_t t);
/* A collective kernel (NCCL) ran ns on the GPU, begun in the open step. */
void gs_series_collective(struct gs_series *s, uint64_t ns);
/* A step begins at t (memory.c's step samples). first: 0, or the series
 * restarts its steps here, this being the loop's step number first (the
 * step's phase is known from its third occurrence, or changed). */
void gs_series_step(struct gs_series *s, const struct gs_report *r, uint64_t t, uint64_t first);
/* The end of the pass: the open step ends with the last top-level phase. */
void gs_series_end(struct gs_series *s, const struct gs_report *r, uint64_t t_last);

/* {"t0_ns", "bin_ns", "devices", "busy_ns": [...], "reserved": [...],
 *  "nvml": {...}, "steps": {...}}: see docs/html.md. */
cJSON *gs_series_json(const struct gs_series *s, const struct gs_report *r);

#endif
