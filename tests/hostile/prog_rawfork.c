/* SPDX-License-Identifier: MIT */
/*
 * fork by system call, which runs no fork handlers: the parent makes 3
 * calls, forks raw; the child makes 5 (allocations and frees) and exits;
 * the parent, after waiting, makes 3 more. Each process's calls must land
 * in its own trace.
 */
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

int main(void)
{
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
