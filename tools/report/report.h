/* SPDX-License-Identifier: MIT */
/*
 * The report of a process, or of the whole of several: its results only,
 * per phase and in all, which the pass (pass.c) and the sections
 * (section.h) fill, the merge adds and the renderers (render/) print.
 * What the pass holds only while it runs is struct gs_pass (pass.h).
 */
#ifndef GPUSPY_REPORT_H
#define GPUSPY_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "read/input.h"
#include "report/memory.h"
#include "report/sites.h"

struct gs_diag;
struct gs_series;
struct gs_flame;
struct gs_steps;
struct gs_fault;

struct gs_agg {
	uint64_t count, bytes, host_ns;      /* host calls */
	uint64_t gpu_count, gpu_bytes, gpu_ns; /* GPU-side records (CUPTI) */
};

enum { GS_PAGEABLE = 0, GS_PINNED = 1 };
enum { GS_ALLOC_DEVICE, GS_ALLOC_PINNED, GS_ALLOC_MANAGED, GS_ALLOC_HOST, GS_ALLOC_KINDS };

struct gs_cats {
	struct gs_agg launch, memset, free, sync;
	struct gs_agg alloc[GS_ALLOC_KINDS];
	struct gs_agg copy[GSPY_DIR_COUNT][2];      /* [dir][pageable/pinned] */
	struct gs_agg copy_sync[GSPY_DIR_COUNT][2]; /* copies the host waited for */
	struct gs_agg sync_after_pageable; /* waits a thread made right after its pageable copy */
	/* What the CUDA graphs launched here ran, from their nodes as
	 * instantiated: count and bytes only (no host call of their own).
	 * graph_launch counts the launches of graphs whose nodes were seen,
	 * graph_unseen the others. */
	struct gs_agg graph_launch, graph_kernel, graph_memset, graph_unseen;
	struct gs_agg host_fn; /* host functions launched (cuLaunchHostFunc): launches, not kernels */
	struct gs_agg graph_alloc, graph_free; /* memory nodes */
	struct gs_agg graph_copy[GSPY_DIR_COUNT][2];
};

struct gs_phase_stat {
	char *name;
	uint64_t count, wall_ns;
	uint64_t gpu_busy_ns; /* GPU work that started during the phase */
	uint64_t first_ns, last_ns; /* its first begin; its last end, or the end of GPU work it launched */
	uint64_t idle_host_ns; /* GPU idle before work launched in it, launched only after the GPU went idle */
	uint64_t span_ns, span_n; /* GPUSPY_CUPTI=events: GPU time of its intervals */
	struct gs_cats c;     /* calls made in the phase; GPU work launched in it */
	int library;          /* a library's range (gs_library_range): counted, attributed nothing */
	int compile;          /* a framework's compilation (gs_framework_phase): never the step */
	uint64_t nvml_n;      /* NVML samples taken in the phase, and their sums */
	double util_sum, power_sum, sm_sum;
};

/* A device's NVML samples (telemetry.c). */
#define GS_NVML_REASONS 9 /* GSPY_NVML_REASON_LIST, bit by bit */
struct gs_tele {
	uint64_t n, first_ns, last_ns, period_ns;
	uint64_t util_n, power_n, sm_n, temp_n;
	double util_sum, util_mem_sum, power_sum, sm_sum;
	uint32_t limit_w, sm_max, temp_max, used_max, other_max;
	uint64_t reason_n[GS_NVML_REASONS]; /* samples with each reason */
	uint64_t slowed_n;     /* samples with a reason that slows a busy GPU */
	uint64_t busy_n, busy_low_power_n; /* util > 0; of those, under 70% of the limit */
	uint64_t hot_n;        /* samples over 85 C */
	uint64_t link_n, link_low_n; /* samples moving PCIe data; of those, on a link below its max */
	uint32_t gen, gen_max, width, width_max; /* the last link seen below its max, or the last */
	char uuid[64];
	/* The last GS_TELE_KEEP samples' times, busy, SM clocks and what held
	 * a busy one back that a change can lift (reasons' bits, telemetry.c;
	 * allocated at the first): were the clocks held back in the loop? */
	struct gs_tele_sample {
		uint64_t t;
		uint32_t sm_mhz;
		uint8_t busy, slowed;
	} *keep;
	uint64_t kept; /* samples seen; the next goes to keep[kept % GS_TELE_KEEP] */
};
#define GS_TELE_KEEP 4096

/* The framework a process runs on, from its allocations' stacks, its
 * phases and its kernels' names; the diagnoses advise in its terms. */
enum gs_framework { GS_FW_CUDA, GS_FW_PYTORCH, GS_FW_JAX, GS_FW_CUPY, GS_FW_COUNT };
extern const char *const gs_framework_names[GS_FW_COUNT];
/* From the process's evidence, at the end of its pass (frameworks.c). */
void gs_framework_detect(struct gs_report *r);
/* The libraries' own ranges, grouped, below the phase table (frameworks.c;
 * all: every group, --all). */
void gs_library_ranges_print(FILE *f, const struct gs_report *r, int all);

struct gs_kernel_stat {
	char *name;
	uint64_t count, total_ns, min_ns, max_ns;             /* launches (host) */
	uint64_t gpu_count, gpu_total_ns, gpu_min_ns, gpu_max_ns; /* executions (GPU) */
};

struct gs_device_gpu {
	uint64_t busy_ns, idle_host_ns, idle_other_ns, ops;
	uint64_t phase_busy_ns; /* of busy_ns, the stretches that began in a named phase */
	uint64_t span_ns, spans; /* GPUSPY_CUPTI=events: every interval's GPU spans */
	uint64_t phase_span_ns, phase_spans; /* of those, the spans of named phases */
};

/* A collective: when it ran, and what it was (the ranks match the k-th of
 * each key): NCCL's kernel name, or the bytes gloo reduced. */
struct gs_coll_item {
	uint64_t start, end, key;
};

#define GS_COLL_ENDS 16384
struct gs_report {
	struct gs_proc proc;
	const char *path;
	char label[48];       /* "rank 3" or "pid 1234" */
	int nprocs;           /* processes merged into this report */
	uint64_t t_first, t_last, nevents; /* t_*: with the paused time cut out */
	unsigned windows;       /* recorded stretches: 1 + times recording resumed */
	uint64_t paused_ns;     /* the time between them, left out */
	struct gs_cats total;
	struct gs_phase_stat *phases; /* [0] is "(no phase)" */
	size_t nphases, phases_cap;
	uint32_t *phase_ix;     /* by name: open addressing, index + 1 (0: empty) */
	size_t phase_ix_cap;
	struct gs_kernel_stat *kernels; /* open-addressing table */
	size_t nkernels, kernels_cap;
	int64_t reserved, peak_reserved; /* device memory reserved (at the end), and its peak */
	uint64_t peak_t, device_total;
	/* Device allocations and frees after warm-up: [0] after the first
	 * occurrence of a repeated phase, [1] after the first fifth of the events. */
	struct gs_churn {
		uint64_t allocs, frees, alloc_bytes, host_ns; /* host_ns: in the calls */
		uint64_t turns;   /* frees followed by an allocation (after warm-up): none in a setup, then a teardown */
		int last_free;    /* the last counted call was a free */
		int warm;         /* warm-up has ended (warm_up) */
		uint64_t from_ns; /* when */
	} churn[2];
	int phases_repeat;
	uint64_t pageable_h2d_warm; /* pageable H2D copies from a phase's second occurrence on */
	uint64_t pageable_d2h_big;  /* pageable D2H copies of 1 MiB or more (a smaller one's cost is its wait) */
	unsigned gpu_timing;            /* enum gspy_gpu_timing of the inputs */
	struct gs_device_gpu dev[GSPY_DEVICES];
	struct gs_tele tele[GSPY_DEVICES];
	uint64_t gpu_records, gpu_matched;
	uint64_t queue_n, queue_sum_ns, queue_max_ns;
	uint64_t graph_kernels, graph_kernel_ns; /* CUPTI: kernels that graphs ran */
	/* Collectives (collectives.c): NCCL's kernels, or gloo's host-side
	 * all-reduces (coll_host). Each one, in order, up to GS_COLL_ENDS
	 * (their ends are the ranks' clocks); their time (the union: gloo runs
	 * a step's buckets on two threads at once) and count in all; the part
	 * of the union of those kept during which the process's other kernels
	 * ran (coll_overlap_ns of coll_span_ns). */
	struct gs_coll_item *coll;
	size_t ncoll;
	uint64_t coll_ns, coll_n, coll_span_ns, coll_overlap_ns;
	int coll_host, coll_overlap_known;
	uint64_t graph_gpu_copies, graph_gpu_copy_bytes, graph_gpu_memsets; /* CUPTI: their copies, memsets */
	uint64_t captured[GSPY_KIND_COUNT]; /* calls captured into graphs, by kind: they did not run */
	uint64_t short_kernels;         /* kernels shorter than the mean launch call */
	uint64_t own_kernels, own_kernel_ns; /* CUPTI: kernels launched one by one (not by a graph) */
	struct gs_sites sites;  /* call sites (events with stacks) */
	struct gs_oom oom;      /* the first out-of-memory failure (memory.c) */
	unsigned framework;     /* enum gs_framework: whose terms the advice is in */
	unsigned fw_seen;       /* evidence: bit per enum gs_framework */
	/* The most worker processes a DataLoader the helper saw had (its mark
	 * "DataLoader num_workers=N"): the data phase is then a wait for them. */
	unsigned loader_workers;
	/* Where the DataLoaders were made (the mark's "made at FUNC (FILE:LINE)",
	 * the first GS_LOADERS), with their workers, and each pass over one:
	 * when, and which (gs_loader_at). */
	struct gs_loader {
		char at[240];
		unsigned workers;
	} *loader;
	size_t nloaders;
	struct gs_loader_pass {
		uint64_t ns;
		size_t loader;
	} *loader_pass;
	size_t nloader_pass, loader_pass_cap;
	struct gs_growth growth; /* reserved memory step by step (memory.c) */
	/* Calls that failed: counted here, per entry point and error code,
	 * and nowhere else (no totals, bandwidths, sites or memory). */
	struct gs_failed {
		const char *api;  /* static (the format's names) */
		int result;
		uint64_t count, first_ns, first_bytes, bytes;
	} failed[32];
	size_t nfailed;
	uint64_t failed_other; /* beyond the table's 32 kinds */
	char input_error[300];  /* the input stopped at a malformed line */
	struct gs_diag *diag;
	size_t ndiag;
	struct gs_steps *steps;   /* the step and its replays (steps.h); NULL: none looked for */
	struct gs_fault *fault;   /* the post-mortem's first fact (fault.c); NULL: none looked for */
	struct gs_series *series; /* over time, for --html (series.h); else NULL */
	struct gs_flame *flame;   /* the calls by stack, for --html (stacks.h); else NULL */
};

struct gs_diag {
	const char *id;   /* pageable_copies, data_starvation, sync_stalls, ... */
	char *text;       /* one or two lines: the numbers, then the change */
	/* What the change would save, from this run's timeline (diagnose.c):
	 * save_ns in all, over steps steps (0: the run has none), and how
	 * that was computed; how is NULL for a diagnosis about memory. */
	uint64_t save_ns, steps;
	char *how;
	int about;        /* 1: save_ns is an estimate ("about"), 0: an upper bound ("up to") */
	int context;      /* an observation with no change to make (telemetry): shown as context */
	int once;         /* 1: a one-time cost (steps 0: an upload before the loop, compilation) */
	size_t phase;     /* the phase it is of (sync_stalls), 0: the run's */
};

/* Analyse one trace (.gspy or JSON Lines). nofollow: as gs_input_open's.
 * 0, or negative with err set. */
int gs_report_file(const char *path, int nofollow, struct gs_report *r, char *err, size_t errlen);
/* Add src's numbers into dst (the whole of several processes; report/merge.c). */
void gs_report_merge(struct gs_report *dst, const struct gs_report *src);
/* The phase of this name, added when new (r->phases may move; report.c). */
size_t gs_report_phase(struct gs_report *r, const char *name);
/* 1 when a phase of this name loads the data (its name holds "data", in
 * any case: "data", "load_data", "DataLoader"): data_starvation's phase,
 * and the one the replay's loader workers take (report.c). */
int gs_data_phase(const char *name);
/* The DataLoader whose pass began last at or before `before` (the one a
 * loop that starts then takes its batches from), else the first seen;
 * NULL when the helper marked where none was made (report.c). */
#define GS_LOADERS 64
const struct gs_loader *gs_loader_at(const struct gs_report *r, uint64_t before);
void gs_report_free(struct gs_report *r);

/* gpuspy's own time on the program's threads, estimated: each host record
 * at GS_RECORD_COST_NS (records cost ~250-400 ns each in place, sampled on
 * the H200: docs/measurements.md, bench/gpu/pcsample.sh) plus the call
 * stacks' measured time. CUPTI's own cost, when on, is not in it. */
#define GS_RECORD_COST_NS 300
uint64_t gs_own_ns(const struct gs_report *r, uint64_t *host_records);

/* The names of the kinds of allocation (report.c). */
extern const char *const gs_alloc_names[GS_ALLOC_KINDS];
/* 1 when two of procs have one RANK (then there is no ranks table), with
 * a line naming their files in msg (may be NULL); 0 otherwise (ranks.c). */
int gs_ranks_duplicate(struct gs_report *const *procs, size_t n, char *msg, size_t len);

#endif
