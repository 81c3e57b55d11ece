/* SPDX-License-Identifier: MIT */
/* Human units: times scale ns/us/ms/s, sizes B/KiB/MiB/GiB/TiB. */
#include <time.h>
#include <stdio.h>
#include <string.h>

#include "util/units.h"

char *gs_fmt_ns(char *buf, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, 32, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, 32, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, 32, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, 32, "%.2f s", (double)ns / 1e9);
	return buf;
}

char *gs_fmt_bytes(char *buf, uint64_t b)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, 32, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, 32, v < 10 ? "%.1f %s" : "%.0f %s", v, u[i]);
	return buf;
}

char *gs_fmt_count(char *buf, uint64_t n)
{
	if (n < 100000)
		snprintf(buf, 32, "%llu", (unsigned long long)n);
	else if (n < 100000000)
		snprintf(buf, 32, "%.0fk", (double)n / 1e3);
	else
		snprintf(buf, 32, "%.0fM", (double)n / 1e6);
	return buf;
}

char *gs_fmt_rate(char *buf, uint64_t bytes, uint64_t ns)
{
	if (!ns || !bytes)
		snprintf(buf, 32, "-");
	else
		snprintf(buf, 32, "%.2f", (double)bytes / (double)ns);
	return buf;
}

uint64_t gs_mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t gs_str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

const char *gs_tail_of(const char *s, unsigned cap)
{
	static __thread char buf[128];
	size_t n = strlen(s);
	if (n <= cap || cap + 4 > sizeof(buf))
		return s;
	snprintf(buf, sizeof(buf), "...%s", s + n - (cap - 3));
	return buf;
}
