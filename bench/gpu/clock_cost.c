// SPDX-License-Identifier: MIT
/* ns per timestamp read on this host: clock_gettime(CLOCK_MONOTONIC) (what
 * gpuspy uses when the clocksource is not the TSC) and rdtsc (when it is).
 * Prints "clock_gettime NS" and "rdtsc NS", the median of 9 runs of 1e6. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	enum { N = 1000000, R = 9 };
	double cg[R], tsc[R];
	volatile uint64_t sink = 0;
	for (int r = 0; r < R; r++) {
		struct timespec t;
		double a = now();
		for (int i = 0; i < N; i++) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			sink += (uint64_t)t.tv_nsec;
		}
		double b = now();
		for (int i = 0; i < N; i++)
			sink += __rdtsc();
		double c = now();
		cg[r] = (b - a) / N;
		tsc[r] = (c - b) / N;
	}
	qsort(cg, R, sizeof(double), cmp);
	qsort(tsc, R, sizeof(double), cmp);
	printf("clock_gettime %.1f\nrdtsc %.1f\n", cg[R / 2], tsc[R / 2]);
	return sink == 42;
}
