/* SPDX-License-Identifier: MIT */
/*
 * Process life-cycle cases, each with launches before and after:
 *   _exit        10 launches, then _exit(3): no exit handlers run;
 *   thread-exit  a second thread calls exit(5) while main keeps launching;
 *   exec         5 launches, then exec of this program ("child"): the new
 *                image writes its own file;
 *   spawn        posix_spawn of "child", 2 launches in the parent;
 *   vfork        vfork + exec of "child", 2 launches in the parent;
 *   child        4 launches.
 * Usage: prog_life MODE
 */
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

extern char **environ;
static CUfunction f;

static void launches(int n)
{
	for (int i = 0; i < n; i++)
		cuLaunchKernel(f, (unsigned)i + 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}

static int launched; /* thread-exit: launches made by main so far */

static void *exiter(void *arg)
{
	(void)arg;
	/* After main's first launches (the trace file exists by then, however
	 * slow the machine), while it keeps launching. */
	while (__atomic_load_n(&launched, __ATOMIC_RELAXED) < 100)
		usleep(1000);
	usleep(20000);
	exit(5);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "child";
	f = fakecuda_function("life_kernel", NULL);
	if (!strcmp(mode, "child")) {
		launches(4);
		return 0;
	}
	if (!strcmp(mode, "_exit")) {
		launches(10);
		_exit(3);
	}
	if (!strcmp(mode, "thread-exit")) {
		pthread_t t;
		pthread_create(&t, NULL, exiter, NULL);
		for (;;) {
			launches(1);
			__atomic_fetch_add(&launched, 1, __ATOMIC_RELAXED);
		}
	}
	char *child_argv[] = { argv[0], "child", NULL };
	if (!strcmp(mode, "exec")) {
		launches(5);
		execv("/proc/self/exe", child_argv);
		return 1;
	}
	pid_t pid;
	if (!strcmp(mode, "spawn")) {
		if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, environ) != 0)
			return 1;
	} else {
		pid = vfork();
		if (pid == 0) {
			execv("/proc/self/exe", child_argv);
			_exit(127);
		}
	}
	int st;
	waitpid(pid, &st, 0);
	launches(2);
	printf("child %d exit %d\n", (int)pid, WEXITSTATUS(st));
	return 0;
}
