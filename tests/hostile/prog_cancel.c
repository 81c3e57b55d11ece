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
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

#include "../../lib/cuda_api.h"

static sem_t ready, cancelled;
static CUcontext ctx;

static void *first_calls(void *arg)
{
	(void)arg;
	int old;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	sem_post(&ready);
	while (sem_wait(&cancelled) != 0) /* not a cancellation point while off */
		;
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	CUdeviceptr d = 0;
	cuCtxSetCurrent(ctx);
	cuMemAlloc_v2(&d, 4096);
	cuMemFree_v2(d);
	pthread_testcancel();
	return (void *)"not cancelled";
}

int main(void)
{
	pthread_t th;
	void *how = NULL;
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
	int a = cuMemAlloc_v2(&d, 8192);
	int f = cuMemFree_v2(d);
	printf("main: %d %d\n", a, f);
	return 0;
}
