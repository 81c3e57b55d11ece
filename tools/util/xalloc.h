/* SPDX-License-Identifier: MIT */
/* Allocation for the gpuspy command: out of memory is a one-line error and
 * exit 1, never a crash. */
#ifndef GPUSPY_XALLOC_H
#define GPUSPY_XALLOC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fprintf(stderr, "gpuspy: error: out of memory\n");
		exit(1);
	}
	return q;
}

static inline void *xcalloc(size_t n, size_t k)
{
	void *p = calloc(n, k);
	if (!p) {
		fprintf(stderr, "gpuspy: error: out of memory\n");
		exit(1);
	}
	return p;
}

static inline char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

#endif
