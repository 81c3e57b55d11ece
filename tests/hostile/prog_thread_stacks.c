/* SPDX-License-Identifier: MIT */
/*
 * THREADS threads one after another (argv[1]), each allocating and freeing
 * PAIRS times (argv[2]) at the same two lines: every call keeps a stack,
 * and a thread's first ones are unwound by glibc, the rest by libunwind
 * (lib/stacks.c). Also the benchmark of bench/stack_threads.sh.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../lib/cuda_api.h"

static CUcontext ctx;
static int pairs;

static void *work(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(ctx);
	for (int i = 0; i < pairs; i++) {
		CUdeviceptr a = 0;
		cuMemAlloc_v2(&a, 4096);
		cuMemFree_v2(a);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	pairs = argc > 2 ? atoi(argv[2]) : 1;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	for (int i = 0; i < threads; i++) {
		pthread_t th;
		pthread_create(&th, NULL, work, NULL);
		pthread_join(th, NULL);
	}
	printf("%d threads x %d pairs\n", threads, pairs);
	return 0;
}
