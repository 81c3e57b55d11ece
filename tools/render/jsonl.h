/* SPDX-License-Identifier: MIT */
/* JSON Lines form of a trace (the post-mortem format). */
#ifndef GPUSPY_DUMP_H
#define GPUSPY_DUMP_H

#include <stdio.h>

#include <cJSON.h>

#include "read/reader.h"

/* One JSON object; the caller owns it (cJSON_Delete). */
cJSON *gs_dump_process(const struct gs_trace *t);
cJSON *gs_dump_event(const struct gs_trace *t, const struct gs_event *ev);
/* gpuspy's notes (lines each ending in '\n', gs_header_notes') as o's
 * "notes", an array of strings, and the lines lost as "notes_lost"; each
 * key only when there are any. */
void gs_notes_json(cJSON *o, const char *notes, uint64_t lost);
/* The whole trace, one line per object; 0 or -1 on a write error. */
int gs_dump(struct gs_trace *t, FILE *out);

#endif
