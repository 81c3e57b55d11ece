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

/* (a - b) / n as a signed number, saturated: no overflow for times and
 * sizes a forged trace makes near 2^64. */
static inline int64_t gs_diff_per(uint64_t a, uint64_t b, uint64_t n)
{
	uint64_t d = (a > b ? a - b : b - a) / (n ? n : 1);
	int64_t m = d > INT64_MAX ? INT64_MAX : (int64_t)d;
	return a > b ? m : -m;
}

/* r + or - bytes, saturated at int64's ends (device memory reserved). */
static inline int64_t gs_add_bytes(int64_t r, uint64_t bytes, int add)
{
	int64_t d = bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes, out;
	if (__builtin_add_overflow(r, add ? d : -d, &out))
		return add ? INT64_MAX : INT64_MIN;
	return out;
}

/* The form of a word that goes with a count of n: one or many. */
static inline const char *gs_pl(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

#endif
