/* SPDX-License-Identifier: MIT */
/*
 * A thread cancelled during the process's first CUDA call: it holds its
 * cancellation off until main has called pthread_cancel on it, turns it
 * back on (deferred: acted on at the next cancellation point) and makes
 * the process's first CUDA calls, which is where gpuspy opens its trace
 * file (open, fallocate, write: cancellation points). Untraced, the fake
 * driver reaches none, and the thread ends at its pthread_testcancel.
 * Then main makes CUDA calls of its own and exits 0. Prints how the
 * thread ended and main's results.
 *
 * prog_cancel full: the thread first makes 65,536 live allocations (its
 * cancellation off), so that the call it makes once cancelled is the one
 * that finds gpuspy's table of allocations full: gpuspy says so in its log
 * (GPUSPY_LOG: a write, a cancellation point). Then main copies into one
 * of those allocations (a reader of the table) and allocates.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>

#include "../../lib/cuda_api.h"

#define FULL 65536 /* lib/memmap.c's MAP_CAP */

static sem_t ready, cancelled;
static CUcontext ctx;
static int full;
static CUdeviceptr first;

static void *first_calls(void *arg)
{
	(void)arg;
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	cuCtxSetCurrent(ctx);
	for (int i = 0; full && i < FULL; i++) {
		CUdeviceptr d = 0;
		if (cuMemAlloc_v2(&d, 64) != CUDA_SUCCESS)
			return (void *)"allocation failed";
		if (!first)
			first = d;
	}
	sem_post(&ready);
	while (sem_wait(&cancelled) != 0) /* not a cancellation point while off */
		;
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	CUdeviceptr d = 0;
	cuMemAlloc_v2(&d, 4096);
	if (!full)
		cuMemFree_v2(d);
	pthread_testcancel();
	return (void *)"not cancelled";
}

int main(int argc, char **argv)
{
	pthread_t th;
	void *how = NULL;
	full = argc > 1 && !strcmp(argv[1], "full");
	cuInit(0); /* not recorded: the trace file is not made here */
	cuDevicePrimaryCtxRetain(&ctx, 0);
	sem_init(&ready, 0, 0);
	sem_init(&cancelled, 0, 0);
	if (pthread_create(&th, NULL, first_calls, NULL) != 0)
		return 2;
	while (sem_wait(&ready) != 0)
		;
	pthread_cancel(th);
	sem_post(&cancelled);
	pthread_join(th, &how);
	printf("thread: %s\n", how == PTHREAD_CANCELED ? "cancelled" : (const char *)how);
	fflush(stdout);
	CUdeviceptr d = 0;
	cuCtxSetCurrent(ctx);
	if (full) { /* the double remembers no more than FULL: this one is not freed */
		char b[8] = "abcdefg";
		int c = cuMemcpyHtoD_v2(first, b, sizeof(b));
		printf("main: %d %d\n", c, cuMemAlloc_v2(&d, 8192));
		return 0;
	}
	int a = cuMemAlloc_v2(&d, 8192);
	int f = cuMemFree_v2(d);
	printf("main: %d %d\n", a, f);
	return 0;
}
