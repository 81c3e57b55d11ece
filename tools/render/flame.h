/* SPDX-License-Identifier: MIT */
/* Flame graphs of where the CUDA calls come from (flame.c). */
#ifndef GPUSPY_FLAME_H
#define GPUSPY_FLAME_H

#include <stddef.h>
#include <stdio.h>

enum gs_flame_format {
	GS_FLAME_COLLAPSED,  /* "pid N;outer;...;inner NS" a line: host time in CUDA calls */
	GS_FLAME_SPEEDSCOPE, /* speedscope's JSON: host time, and bytes allocated */
};

/* The stacks of the traces in paths; 0, or -1 with err set and *bad the
 * index of the trace that could not be read. */
int gs_export_flame(FILE *f, enum gs_flame_format fmt, char *const *paths, size_t n, char *err, size_t errlen,
		    size_t *bad);

#endif
