/* SPDX-License-Identifier: MIT */
/*
 * fork() while another thread is inside gpuspy's hooks: one thread
 * allocates and frees non-stop (each call updates gpuspy's memory map
 * under its lock, moving its entries), the main thread forks 100 times; each child makes a
 * copy (which reads that map) and exits. Prints how many children had to
 * be killed after 3 s (hung) and exits 1 if any was.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"

#define FORKS 300

static volatile int stop;

static void *churn(void *arg)
{
	CUcontext ctx = arg;
	cuCtxSetCurrent(ctx);
	/* 2,000 live blocks, the oldest freed each time: the map's entries
	 * move on every call, so its lock is held for a while. */
	static CUdeviceptr live[2000];
	for (int i = 0; i < 2000; i++)
		cuMemAlloc_v2(&live[i], 4096);
	for (unsigned i = 0; !stop; i = (i + 1) % 2000) {
		cuMemFree_v2(live[i]);
		cuMemAlloc_v2(&live[i], 4096);
	}
	return NULL;
}

int main(void)
{
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	CUdeviceptr d = 0;
	cuMemAlloc_v2(&d, 1 << 16);
	static char host[4096];
	pthread_t th;
	pthread_create(&th, NULL, churn, ctx);
	int hung = 0;
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			cuMemcpyHtoD_v2(d, host, sizeof(host));
			_exit(0);
		}
		int st = 0, done = 0;
		for (int t = 0; t < 300 && !done; t++) {
			done = waitpid(pid, &st, WNOHANG) == pid;
			if (!done) {
				struct timespec ts = { 0, 10000000 };
				nanosleep(&ts, NULL);
			}
		}
		if (!done) {
			hung++;
			/* FORK_BUSY_GDB=DIR: the hung child's stacks, for a diagnosis. */
			const char *g = getenv("FORK_BUSY_GDB");
			if (g) {
				char cmd[512];
				snprintf(cmd, sizeof(cmd), "gdb -p %d -batch -ex 'thread apply all bt' > %s/hung-%d.txt 2>&1",
					 (int)pid, g, (int)pid);
				if (system(cmd) != 0)
					fprintf(stderr, "gdb failed\n");
			}
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
	}
	stop = 1;
	pthread_join(th, NULL);
	printf("%d of %d children hung\n", hung, FORKS);
	return hung != 0;
}
