/* SPDX-License-Identifier: MIT */
/*
 * The report: one streaming pass over a process's events builds per-phase
 * and total aggregates, kernel statistics, memory and the inputs of the
 * diagnoses. Memory grows with the number of distinct phase and kernel
 * names, never with the number of events.
 */
#ifndef GPUSPY_REPORT_H
#define GPUSPY_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "input.h"

struct gs_diag;

struct gs_agg {
	uint64_t count, bytes, host_ns;
};

enum { GS_PAGEABLE = 0, GS_PINNED = 1 };
enum { GS_ALLOC_DEVICE, GS_ALLOC_PINNED, GS_ALLOC_MANAGED, GS_ALLOC_HOST, GS_ALLOC_KINDS };

struct gs_cats {
	struct gs_agg launch, memset, free, sync;
	struct gs_agg alloc[GS_ALLOC_KINDS];
	struct gs_agg copy[GSPY_DIR_COUNT][2];      /* [dir][pageable/pinned] */
	struct gs_agg copy_sync[GSPY_DIR_COUNT][2]; /* copies the host waited for */
};

struct gs_phase_stat {
	char *name;
	uint64_t count, wall_ns;
	struct gs_cats c;
};

struct gs_kernel_stat {
	char *name;
	uint64_t count, total_ns, min_ns, max_ns;
};

struct gs_report {
	struct gs_proc proc;
	const char *path;
	char label[48];       /* "rank 3" or "pid 1234" */
	int nprocs;           /* processes merged into this report */
	uint64_t t_first, t_last, nevents;
	struct gs_cats total;
	struct gs_phase_stat *phases; /* [0] is "(no phase)" */
	size_t nphases, phases_cap;
	struct gs_kernel_stat *kernels; /* open-addressing table */
	size_t nkernels, kernels_cap;
	int64_t reserved, peak_reserved;
	uint64_t peak_t, device_total;
	uint64_t churn_phase, churn_events, churn_phase_bytes, churn_events_bytes;
	int phases_repeat;
	char input_error[300];  /* the input stopped at a malformed line */
	struct gs_diag *diag;
	size_t ndiag;
};

struct gs_diag {
	const char *id;   /* pageable_copies, data_starvation, sync_stalls, ... */
	char *text;       /* one or two lines: the numbers, then the change */
};

/* Analyse one trace (.gspy or JSON Lines). 0, or negative with err set. */
int gs_report_file(const char *path, struct gs_report *r, char *err, size_t errlen);
/* Add src's numbers into dst (the whole of several processes). */
void gs_report_merge(struct gs_report *dst, const struct gs_report *src);
void gs_report_diagnose(struct gs_report *r);
void gs_report_free(struct gs_report *r);

/* Output (report_print.c). */
void gs_report_print(FILE *f, struct gs_report *const *procs, size_t n,
		     const struct gs_report *whole, int color);
/* The caller owns the returned object. */
cJSON *gs_report_json(struct gs_report *const *procs, size_t n, const struct gs_report *whole);

#endif
