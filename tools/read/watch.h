/* SPDX-License-Identifier: MIT */
/*
 * A traced process as `gpuspy top` sees it (watch.c): its trace followed as
 * it grows, the new events of each poll put in time order and added into
 * one-second bins of the last LIVE_SECONDS; a view sums the bins of the
 * last seconds asked for.
 */
#ifndef GPUSPY_WATCH_H
#define GPUSPY_WATCH_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "read/follow.h"
#include "read/input.h"

#define LIVE_SECONDS 64
#define LIVE_PHASES 14 /* named phases kept; [0] is "(no phase)", [LIVE_PHASES + 1] the rest */
#define LIVE_NAME 256  /* a phase's name, its NUL included: longer ones are cut and hashed (watch.c) */

struct gs_watch_bin {
	uint64_t sec; /* the second of CLOCK_MONOTONIC it holds (bins are reused) */
	uint64_t phase_ns[LIVE_PHASES + 2]; /* time in each innermost phase */
	uint32_t begins[LIVE_PHASES + 2];
	uint32_t step_starts; /* phases with a new step number (the PyTorch helper's) */
	uint64_t gpu_busy_ns; /* GPU records' union */
	uint64_t copy_bytes, pageable_bytes; /* host to device and back */
	uint64_t events;
};

struct gs_watch {
	char path[PATH_MAX];
	dev_t dev;                          /* the file followed: one process's, */
	ino_t ino;                          /* whatever names it */
	struct gs_follow f;
	struct gs_watch_bin bin[LIVE_SECONDS];
	char names[LIVE_PHASES + 2][LIVE_NAME];
	uint64_t begins_total[LIVE_PHASES + 2];
	uint8_t top_level[LIVE_PHASES + 2]; /* begun with no other phase open */
	int nphases;                        /* names[0..nphases) are in use */
	int phase_used_other;               /* a phase went to "(other phases)" */
	int stack[32], depth;               /* the open phases */
	int cur;                            /* the innermost, -1 while paused */
	uint64_t since;                     /* cur's time counts from */
	uint64_t first_ns, last_ns;         /* first and latest event seen */
	uint64_t gpu_end;                   /* GPU busy is counted up to here */
	uint64_t step, steps_seen;          /* the last step number, and how many began */
	int step_first;                     /* the phase each step begins with */
	int gpu_seen;
	int64_t reserved;                   /* device memory allocated and not freed */
	struct gspy_nvml nvml[GSPY_DEVICES]; /* each device's latest sample */
	uint64_t nvml_at[GSPY_DEVICES];     /* its time, 0 none */
	/* Since the trace began, for counters (gpuspy serve). */
	struct gs_watch_totals {
		uint64_t events, steps_helper;      /* steps_helper: new step numbers */
		uint64_t phase_ns[LIVE_PHASES + 2];
		uint64_t gpu_busy_ns[GSPY_DEVICES]; /* each device's union */
		/* By the innermost phase open at the call: */
		uint64_t copy_bytes[LIVE_PHASES + 2][2][2]; /* [h2d, d2h][pageable, pinned] */
		uint64_t allocs[LIVE_PHASES + 2], frees[LIVE_PHASES + 2]; /* device memory calls */
		uint64_t failed[LIVE_PHASES + 2];   /* calls that returned an error */
	} total;
	uint64_t dev_gpu_end[GSPY_DEVICES];
	char uuid[GSPY_DEVICES][48];        /* NVML's name of each device sampled */
	/* This poll's events, as read (a record is 64 bytes, its decoded
	 * form 216: a first poll buffers the whole trace), decoded once
	 * sorted by start. */
	struct gs_watch_pend {
		struct gspy_record rec;
		uint64_t start_ns, end_ns, corr;
		uint32_t tid;
	} *pend;
	size_t npend, cap;
};

/* What `gpuspy top` shows of a process over its last seconds. */
struct gs_watch_view {
	uint32_t pid;
	const char *command;
	int running, paused;
	uint64_t window_ns;       /* the seconds summed, as far back as the trace goes */
	uint64_t events, steps;
	const char *step_phase;   /* the repeated top-level phase counted as the step, or NULL */
	int nphases;
	const char *phase[LIVE_PHASES + 2];
	uint64_t phase_ns[LIVE_PHASES + 2];
	int gpu_known;            /* GPU records came (CUPTI) */
	uint64_t gpu_busy_ns;     /* over gpu_window_ns, up to the last GPU record */
	uint64_t gpu_window_ns, gpu_lag_ns; /* CUPTI's records come in batches: how far behind now */
	uint64_t copy_bytes, pageable_bytes;
	int64_t reserved;
	int nvml_device;          /* the device of nvml, -1 none */
	struct gspy_nvml nvml;
	uint64_t dropped;
};

/* The trace open on fd (which it owns from then on), known as path. */
int gs_watch_open(struct gs_watch *l, int fd, const char *path, char *err, size_t errlen);
/* Reads what the process committed since; -1 once its file is cut (it exited). */
int gs_watch_poll(struct gs_watch *l);
/* The last window_ns before now (CLOCK_MONOTONIC), in whole seconds. */
void gs_watch_view(const struct gs_watch *l, uint64_t now, uint64_t window_ns, struct gs_watch_view *v);
void gs_watch_close(struct gs_watch *l);
/* Steps since the trace began, counted as gs_watch_view counts them. */
uint64_t gs_watch_steps_total(const struct gs_watch *l);

/* The traced processes running here (gpuspy top, gpuspy serve): found in
 * /proc/PID/maps, or the traces in dir whose processes run. As many as
 * there are: p grows (a node's processes are bounded by its pid space, and
 * a process left out would vanish without a word). */
struct gs_watch_set {
	const char *dir; /* NULL: every traced process found in /proc */
	struct gs_watch **p; /* owned; gs_watch_set_free frees it */
	int n, cap;
};
void gs_watch_scan(struct gs_watch_set *s);     /* follows the ones not followed yet */
void gs_watch_poll_all(struct gs_watch_set *s); /* reads what each wrote; drops the gone */
void gs_watch_set_free(struct gs_watch_set *s);

#endif
