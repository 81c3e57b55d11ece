/* SPDX-License-Identifier: MIT */
/* The traces a command is given (paths.c). */
#ifndef GPUSPY_PATHS_H
#define GPUSPY_PATHS_H

#include <stddef.h>

struct gs_paths {
	char **v;
	unsigned char *listed; /* v[i] was found by listing a directory: open it O_NOFOLLOW */
	size_t n, cap;
};

/* Adds arg, or the traces of the directory arg: its .gspy files, or its
 * .jsonl files if it has none, or when it has neither those of its newest
 * gpuspy run directory that has some, said on stderr: the one
 * arg/gpuspy-latest links to, else newest first. A run directory is one of
 * the user's own named gpuspy-YYYYMMDD-HHMMSS right inside arg (not a
 * link). Only regular files are listed: a symbolic link or anything else
 * in a directory is skipped, said on stderr (docs/security.md); a file
 * named as arg is followed, as the user asked. 1 (with the error said)
 * for a directory without traces. */
int gs_paths_collect(const char *arg, struct gs_paths *in);
void gs_paths_free(struct gs_paths *p);
/* For the live views (top, serve): dir, or, when it holds no traces but
 * gpuspy run's directories (as above), the newest of them by name, traces
 * or not yet (into buf, a path that fits cap; said). */
const char *gs_paths_live_dir(const char *dir, char *buf, size_t cap);

#endif
