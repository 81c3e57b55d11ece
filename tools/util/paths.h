/* SPDX-License-Identifier: MIT */
/* The traces a command is given (paths.c). */
#ifndef GPUSPY_PATHS_H
#define GPUSPY_PATHS_H

#include <stddef.h>

struct gs_paths {
	char **v;
	size_t n, cap;
};

/* Adds arg, or the traces of the directory arg: its .gspy files, or its
 * .jsonl files if it has none. 1 (with the error said) for a directory
 * without traces. */
int gs_paths_collect(const char *arg, struct gs_paths *in);
void gs_paths_free(struct gs_paths *p);

#endif
