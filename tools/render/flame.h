/* SPDX-License-Identifier: MIT */
/* Flame graphs of where the CUDA calls come from (flame.c). */
#ifndef GPUSPY_FLAME_H
#define GPUSPY_FLAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/stacks.h" /* struct gs_flame_cover: what the graph holds */
#include "util/paths.h"

enum gs_flame_format {
	GS_FLAME_COLLAPSED,  /* "pid N;outer;...;inner NS" a line: host time in CUDA calls with a stack */
	GS_FLAME_SPEEDSCOPE, /* speedscope's JSON: host time, and bytes allocated */
};

/* The stacks of the traces in paths, how many calls they cover in *c; 0,
 * or -1 with err set and *bad the index of the trace that could not be
 * read, or (no call in them with a stack) of the one trace, n when there
 * are several. */
int gs_export_flame(FILE *f, enum gs_flame_format fmt, const struct gs_paths *paths, struct gs_flame_cover *c,
		    char *err, size_t errlen, size_t *bad);

#endif
