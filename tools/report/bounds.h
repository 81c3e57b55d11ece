/* SPDX-License-Identifier: MIT */
/*
 * Where the steps begin (bounds.c): each finder returns the begins of the
 * steps it found, in time order (the last begins a step that may not end),
 * into a new array *out; 0, and *out NULL, where it finds fewer than four.
 */
#ifndef GPUSPY_BOUNDS_H
#define GPUSPY_BOUNDS_H

#include <stddef.h>
#include <stdint.h>

#include "report/replay.h"

struct gs_report;

/* PyTorch's optimizer steps, where the helper counted them: its phases
 * carry the count of optimizer steps done, and a step begins at the first
 * phase of each new count, at any depth (the helper's phases may be inside
 * the user's range), and at the first phase where whole: not only a long
 * run's last events, which may begin mid-step. The cycle of phases would
 * take an evaluation loop after the training for the loop, or an epoch
 * with its evaluation for the step; counted, an evaluation falls in the
 * step it begins (its count is the next step's), and one after the last
 * step in none. Steps whose phases (the user's top-level ones too) repeat
 * every g counts and not every one, g up to 8, make a step of g counts
 * (*group): two optimizers that take turns, a critic's five steps to a
 * generator's one; not an evaluation every few steps (its steps hold more
 * forward phases than backward ones: they are odd). The leading steps whose
 * phases are not the commonest steps' are warm-up (a model's first pass
 * before the loop); *odd: one a begin, a later such step (an evaluation's
 * phases are in it). */
size_t gs_bounds_marked(const struct gs_report *r, const struct gs_item *v, size_t n, int whole, uint64_t **out,
			uint8_t **odd, size_t *group);

/* The top-level phases that begin in [t0, t1) (none: the counted phases
 * inside the user's range), after head, into out: a line that fits the
 * report's columns. */
void gs_bounds_describe(const struct gs_report *r, const struct gs_item *v, size_t n, uint64_t t0, uint64_t t1,
			const char *head, char *out, size_t cap);

/* The repetitions of the cycle of top-level phases; what: the cycle, said. */
size_t gs_bounds_phases(const struct gs_report *r, const struct gs_item *v, size_t n, uint64_t **out, char *what,
			size_t cap);

/* The repetitions of the kernels, copies and waits of the thread that
 * launches most, GS_CALL_STEPS_MIN of them at least (before short ones
 * are grouped into a step); what: said. */
#define GS_CALL_STEPS_MIN 6
size_t gs_bounds_calls(const struct gs_item *v, size_t n, uint64_t **out, char *what, size_t cap);

#endif
