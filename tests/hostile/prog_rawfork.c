/* SPDX-License-Identifier: MIT */
/*
 * fork by system call, which runs no fork handlers: the parent makes 3
 * calls, forks raw; the child makes 5 (allocations and frees) and exits;
 * the parent, after waiting, makes 3 more. Each process's calls must land
 * in its own trace.
 *
 * `start`: the raw fork comes from a second thread while the main thread's
 * first call is still starting gpuspy's modules (the start, made a second
 * long by tests/hostile/slow_cupti.c, says so on fd SLOW_CUPTI_FD, and so
 * does the main thread once its first call returns, for runs without
 * gpuspy); the child says whether its first call took under half a
 * second, and the parent whether the child exited 0.
 *
 * `bare`: after its 3 calls the parent forks raw twice; one child raises
 * SIGTERM, the other calls _exit(3), neither having made a call (so both
 * still map the parent's file); the parent then kills itself (SIGKILL),
 * so that its trace says only what the parent did.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"

static void calls(int n)
{
	for (int i = 0; i < n; i++) {
		CUdeviceptr d = 0;
		cuMemAlloc_v2(&d, 4096 * (size_t)(i + 1));
		cuMemFree_v2(d);
	}
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int started[2];

static void *fork_in_start(void *arg)
{
	(void)arg;
	char c;
	if (read(started[0], &c, 1) != 1)
		exit(2);
	long pid = syscall(SYS_fork);
	if (pid == 0) {
		double t0 = now_s();
		calls(1);
		printf("child's first call took %s half a second\n", now_s() - t0 < 0.5 ? "under" : "over");
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid((pid_t)pid, &st, 0);
	return (void *)(long)(WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static int start_mode(void)
{
	char fd[16];
	if (pipe(started))
		return 2;
	snprintf(fd, sizeof(fd), "%d", started[1]);
	setenv("SLOW_CUPTI_FD", fd, 1);
	pthread_t th;
	pthread_create(&th, NULL, fork_in_start, NULL);
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	calls(1); /* the first recorded call: gpuspy makes its file and starts CUPTI */
	char c = 1;
	if (write(started[1], &c, 1) != 1)
		return 2;
	void *rc;
	pthread_join(th, &rc);
	printf("child exited %ld\n", (long)rc);
	return 0;
}

static int bare_mode(void)
{
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	calls(3);
	int st[2];
	for (int k = 0; k < 2; k++) {
		long pid = syscall(SYS_fork);
		if (pid == 0) {
			if (k == 0)
				raise(SIGTERM);
			_exit(3);
		}
		waitpid((pid_t)pid, &st[k], 0);
	}
	printf("children: signal %d, exit %d\n", WIFSIGNALED(st[0]) ? WTERMSIG(st[0]) : -1,
	       WIFEXITED(st[1]) ? WEXITSTATUS(st[1]) : -1);
	fflush(stdout);
	raise(SIGKILL);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "start"))
		return start_mode();
	if (argc > 1 && !strcmp(argv[1], "bare"))
		return bare_mode();
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	calls(3);
	fflush(stdout);
	long pid = syscall(SYS_fork);
	if (pid == 0) {
		calls(5);
		_exit(0);
	}
	int st;
	waitpid((pid_t)pid, &st, 0);
	calls(3);
	printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
