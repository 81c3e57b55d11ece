/* SPDX-License-Identifier: MIT */
/*
 * What every diagnosis is made with (diag.c), below the sections that
 * diagnose (diagnose.c, telemetry.c, ...), which call none of each other:
 * adding one to a report, the sentence of what it saves, and the loop's
 * span that shares are taken of.
 */
#ifndef GPUSPY_DIAG_H
#define GPUSPY_DIAG_H

#include <stddef.h>
#include <stdint.h>

struct gs_report;
struct gs_diag;

/* The advice reads values back every GS_WAIT_EVERY steps, and the replay
 * of its change (replay.h's GS_CH_NOWAIT) keeps one step in that many
 * waiting, so the saving is the advice's. */
#define GS_WAIT_EVERY 20
/* A copy of this many bytes or more is pinning's to speed (replay.h's
 * GS_CH_PIN); a smaller copy back costs its wait for the work before it,
 * a wait's to drop (GS_CH_NOWAIT, step_waits). */
#define GS_PIN_BYTES (1u << 20)
#define GS_STR_(x) #x
#define GS_STR(x) GS_STR_(x)

/* A diagnosis with this id (static) and text (printf's fmt) added to r's
 * list, in the order they are made (out of memory: the command's one-line
 * error, util/xalloc.h). */
void gs_diag_add(struct gs_report *r, const char *id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "Saves up to 1.2 ms a step, 120 ms in all over 100 steps: HOW." in buf,
 * or NULL for a diagnosis without a saving. */
const char *gs_diag_saving(const struct gs_diag *d, char *buf, size_t cap);
/* Narrows *span (the run) to the time in phases; 0 without phases. */
int gs_loop_span(const struct gs_report *r, uint64_t *span);

#endif
