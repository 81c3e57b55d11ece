/* SPDX-License-Identifier: MIT */
/*
 * Test shim, preloaded into `gpuspy run`: in a program named gpuspy,
 * fork() returns to the parent only after FORK_DELAY_MS (default 300)
 * milliseconds, so that a signal sent while the child already runs lands
 * between the fork and the parent's note of the child's pid
 * (run_forwards_a_signal_sent_right_after_the_fork in tests/test_cli.py). Other programs (the command, which inherits the
 * preload) fork as usual.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pid_t fork(void)
{
	pid_t (*real)(void) = (pid_t(*)(void))dlsym(RTLD_NEXT, "fork");
	pid_t p = real();
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	const char *base = strrchr(exe, '/');
	if (p > 0 && base && !strcmp(base, "/gpuspy")) {
		const char *v = getenv("FORK_DELAY_MS");
		long ms = v ? atol(v) : 300;
		struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	return p;
}
