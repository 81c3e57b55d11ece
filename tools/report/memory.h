/* SPDX-License-Identifier: MIT */
/*
 * Memory facts of a process (memory.c): an out-of-memory failure with what
 * was held at that moment, and device memory that grows step after step
 * (a leak), with the sites that grew. Kept by the memory section
 * (memory.c), read by diagnose.c.
 */
#ifndef GPUSPY_MEMORY_H
#define GPUSPY_MEMORY_H

#include <stdint.h>
#include <stddef.h>

struct gs_report;

struct gs_oom {
	uint64_t n;          /* allocations that failed for lack of memory */
	uint64_t t_ns;       /* the first: when (trace clock) */
	uint64_t bytes;      /* ... the size it asked for */
	const char *api;
	char *phase;         /* ... the phase it was in, or NULL */
	uint64_t phase_n;    /* ... that phase's occurrence (1 = the first) */
	int64_t reserved;    /* ... device memory held then */
	char *frames;        /* ... its call stack, or NULL */
	/* The caching allocator's free-and-retry: frees between the failure
	 * and the next allocation of the same size, and how that retry went. */
	uint64_t freed_n, freed_bytes;
	int retry;           /* 0 none seen, 1 retried and succeeded, -1 retried and failed */
};

struct gs_growth {
	size_t phase;        /* the phase sampled at each begin (0: by step number) */
	int by_step;         /* samples at each new PyTorch step */
	uint64_t last_step;
	int64_t *at;         /* reserved device memory at each sample */
	size_t n, cap;
};

/* A leak: reserved memory rose at most step transitions and never fell.
 * 1 with the rate per step and the steps measured; 0 otherwise. */
int gs_mem_leak(const struct gs_report *r, double *per_step, size_t *steps);
/* The loop's steps as the growth samples count them (PyTorch's step
 * numbers, else the occurrences of the first top-level phase to repeat);
 * 0 for a run without a repeated phase. */
uint64_t gs_mem_steps(const struct gs_report *r);

#endif
