/* SPDX-License-Identifier: MIT */
/*
 * One stream of decoded events from either kind of trace: a .gspy file (via
 * reader.c) or a JSON Lines dump (read line by line with cJSON, so memory
 * does not grow with the file). The report and the export see no difference
 * between the two. Returns 0 / negative errno with a one-line reason.
 */
#ifndef GPUSPY_INPUT_H
#define GPUSPY_INPUT_H

#include <stdint.h>
#include <stdio.h>

#include "read/reader.h"
#include "read/symbolize.h"

struct gs_proc {
	uint32_t pid, ppid;
	int32_t rank, local_rank;
	char host[65];
	char command[1025];
	uint64_t events, dropped;
	uint64_t overwritten; /* flight recorder: oldest events overwritten */
	uint64_t dropped_after_exit; /* of dropped: after gpuspy's destructor cut the file */
	uint64_t chunks_reused;      /* chunks of threads that exited, taken over */
	uint64_t nvtx_too_deep;      /* NVTX ranges not recorded: nested too deep */
	uint64_t host_unwritten;     /* host allocations from before the file, never written */
	uint32_t cpus;               /* CPUs it could run on (0: not known) */
	uint64_t stacks_taken, stacks_ns; /* gpuspy's own time taking call stacks */
	uint64_t stack_min_ns; /* GPUSPY_STACK_MIN: shorter memsets (etc.) have no stack */
	uint64_t wait_stack_min_ns; /* the same for waits (10 us unless GPUSPY_STACK_MIN was set) */
	unsigned nvml_ms, nvml_state; /* telemetry: GPUSPY_NVML_MS, enum gspy_nvml_state */
	int nvml_sampler[GSPY_DEVICES]; /* per device, the pid that sampled it, 0 none */
	unsigned state;  /* enum gspy_state */
	int exit_signal;
	int exit_code;   /* exited by _exit: its status; -1 unknown (exit() runs first) */
	int truncated;   /* the input ended early: events may be missing */
	uint64_t start_ns;
	uint64_t device_mem[GSPY_DEVICES];
	unsigned gpu_timing; /* enum gspy_gpu_timing */
	int start_paused;    /* GPUSPY_START=paused */
	unsigned windows;    /* times recording resumed (on demand or gpuspy_resume) */
	/* gpuspy's own messages (header notes; a dump's "notes"), lines each
	 * ending in '\n', raw: escape them for the sink; and the lines lost. */
	char notes[GSPY_NOTES_SIZE + 1];
	uint64_t notes_lost;
};

struct gs_ev {
	uint8_t kind, dir, mem;
	uint16_t api;
	int16_t device;
	int32_t result;
	uint32_t tid;
	uint64_t start_ns, end_ns, bytes, addr, stream;
	uint32_t grid[3], block[3];
	const char *name; /* valid until the next gs_input_next(); "" if none */
	int async;
	int captured;      /* made on a stream being captured: it did not run */
	uint64_t corr;     /* CUPTI external correlation id, 0 none */
	uint32_t graph_id; /* GPU kernels of a graph launch */
	uint64_t step;     /* phase events from PyTorch: the step number */
	int has_step;
	int window;        /* phase event written as recording resumed (GSPY_FLAG_WINDOW) */
	uint32_t stack_id; /* call stack (gs_input_stack), 0 none */
	uint64_t own_ns;   /* gpuspy's own time after the call (its stack walk), 0 none */
	uint64_t gpu_ns;   /* gpu_span: GPU time of the phase interval */
	struct gspy_nvml nvml; /* nvml: the sample; name is the device's UUID */
};

struct gs_input {
	const char *path;
	int is_jsonl;
	struct gs_trace trace;
	FILE *f;
	char *line;
	size_t cap;
	uint64_t lineno;
	char name[1024];
	int error;       /* a JSON Lines line could not be read */
	char err[256];
	struct gs_proc proc;
	struct gs_symbolizer *sym;  /* .gspy: stacks symbolized on demand */
	struct gs_stack_tab *jstacks; /* JSON Lines: stack lines read so far */
};

/* nofollow: path was found by listing a directory (gs_paths' listed), so
 * a symbolic link at it is refused, not followed (docs/security.md). */
int gs_input_open(const char *path, int nofollow, struct gs_input *in, char *err, size_t errlen);
/* 1 = an event, 0 = end, -1 = a malformed line (in->err says which). */
int gs_input_next(struct gs_input *in, struct gs_ev *ev);
void gs_input_close(struct gs_input *in);
/* A .gspy event of t as the report reads it (name: t's string, valid while t is). */
void gs_ev_from_event(const struct gs_trace *t, const struct gs_event *e, struct gs_ev *ev);
/* The call stack of an event (ev->stack_id); NULL if none or unknown. */
const struct gs_stack *gs_input_stack(struct gs_input *in, uint32_t id);

int gs_kind_from_name(const char *s);
int gs_api_from_name(const char *s);
int gs_dir_from_name(const char *s);
int gs_mem_from_name(const char *s);

#endif
