/* SPDX-License-Identifier: MIT */
/*
 * The program's own period: the repeating unit of a sequence of calls
 * (kernel names, copies, waits of the thread that launches), found with
 * no annotation. A training step, a decode loop's token, a C program's
 * iteration: each repeats the same calls in the same order.
 */
#ifndef GPUSPY_PERIOD_H
#define GPUSPY_PERIOD_H

#include <stddef.h>
#include <stdint.h>

struct gs_period {
	size_t period; /* calls in one repetition; 0: none found */
	size_t start;  /* index of the steady state's first call (after warm-up) */
	size_t reps;   /* whole repetitions from start to the end */
	size_t runs;   /* bounds.c: the repetitions before it groups short ones into a step */
	size_t anchor; /* offset in the period where a repetition begins (start + anchor + k*period) */
	double match;  /* share of calls in the steady state equal to the one a period later */
};

/* Finds the smallest period p of tok[0..n) such that, from some start on,
 * at least 90% of tok[i] equal tok[i + p] and at least 3 repetitions fit;
 * the steady state starts as early as that holds (warm-up before it).
 * anchor_tok, when non-zero, is preferred as the first call of a
 * repetition (a wait that ends a step). Returns 1 found, 0 none (or no
 * memory for the search). */
int gs_period_find(const uint32_t *tok, size_t n, uint32_t anchor_tok, struct gs_period *out);

#endif
