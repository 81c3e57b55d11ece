/* SPDX-License-Identifier: MIT */
/*
 * Preloaded before libgpuspy: counts the calls of glibc's backtrace() (the
 * unwinder of a thread's first stacks) and prints the count at exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>

static int calls;

int backtrace(void **buf, int n)
{
	static int (*real)(void **, int);
	if (!real)
		real = (int (*)(void **, int))dlsym(RTLD_NEXT, "backtrace");
	__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
	return real(buf, n);
}

__attribute__((destructor)) static void report(void)
{
	fprintf(stderr, "backtrace calls: %d\n", __atomic_load_n(&calls, __ATOMIC_RELAXED));
}
