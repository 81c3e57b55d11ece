/* SPDX-License-Identifier: MIT */
/*
 * Preloaded in front of libgpuspy: its first dlopen of libcupti (CUPTI's
 * start, on gpuspy's timing thread, while the trace file is open and
 * its modules start) writes a byte to fd SLOW_CUPTI_FD and then takes a
 * second: the start made long enough for the program to act in it.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *dlopen(const char *name, int flags)
{
	static void *(*real)(const char *, int);
	static int done;
	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	const char *fd = getenv("SLOW_CUPTI_FD");
	if (fd && name && strstr(name, "libcupti") && !__atomic_exchange_n(&done, 1, __ATOMIC_RELAXED)) {
		char c = 1;
		if (write(atoi(fd), &c, 1) != 1)
			abort();
		struct timespec second = { 1, 0 };
		nanosleep(&second, NULL);
	}
	return real(name, flags);
}
