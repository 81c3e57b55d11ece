/* SPDX-License-Identifier: MIT */
/* CUDA graphs (hook_graph.c) as the record path sees them. */
#ifndef GS_GRAPHS_H
#define GS_GRAPHS_H

#include "gs.h"

/* The mark of a call captured rather than run (gs_g.capturing counts the
 * stream captures open). */
void gs_capture_note(struct gspy_record *r);

#endif
