/* SPDX-License-Identifier: MIT */
/* Human units for the report: the buffer (at least 32 bytes) is returned. */
#ifndef GPUSPY_UNITS_H
#define GPUSPY_UNITS_H

#include <stdint.h>

char *gs_fmt_ns(char *buf, uint64_t ns);
uint64_t gs_str_hash(const char *s); /* FNV-1a */
/* CLOCK_MONOTONIC now, in ns: the clock trace times are in. */
uint64_t gs_mono_now(void);
char *gs_fmt_bytes(char *buf, uint64_t bytes);
char *gs_fmt_count(char *buf, uint64_t n);
char *gs_fmt_rate(char *buf, uint64_t bytes, uint64_t ns); /* GB/s, "-" when unknown */
/* s, or its last cap (< 124) bytes after "...", so that a long path keeps
 * its file and line within a line of the report (a per-thread buffer). */
const char *gs_tail_of(const char *s, unsigned cap);

/* The form of a word that goes with a count of n: one or many. */
static inline const char *gs_pl(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

#endif
