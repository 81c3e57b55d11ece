/* SPDX-License-Identifier: MIT */
/*
 * 2,000 short-lived threads, one after another, each making 5 calls (3
 * allocations' worth: alloc, alloc, free, free, sync): far more threads
 * than a 16 MiB buffer has 64 KiB chunks (256).
 */
#include <pthread.h>
#include <stdio.h>

#include "../../lib/cuda_api.h"

static CUcontext ctx;

static void *five(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(ctx);
	CUdeviceptr a = 0, b = 0;
	cuMemAlloc_v2(&a, 4096);
	cuMemAlloc_v2(&b, 8192);
	cuMemFree_v2(a);
	cuMemFree_v2(b);
	cuCtxSynchronize();
	return NULL;
}

int main(void)
{
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	for (int i = 0; i < 2000; i++) {
		pthread_t th;
		pthread_create(&th, NULL, five, NULL);
		pthread_join(th, NULL);
	}
	printf("2000 threads done\n");
	return 0;
}
