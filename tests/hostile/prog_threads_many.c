/* SPDX-License-Identifier: MIT */
/*
 * 2,000 short-lived threads, one after another, each making 5 calls (3
 * allocations' worth: alloc, alloc, free, free, sync): far more threads
 * than a 16 MiB buffer has 64 KiB chunks (256).
 *
 * "exit": first a thread that allocates 1 MiB and ends before any CUDA
 * call (with GPUSPY_HOST_ALLOC_MIN, a host allocation kept for a thread
 * that never writes it); then a wait on the main thread, recorded; then
 * each of the 2,000 threads also leaves a value in a key made after that
 * (so its destructor runs after gpuspy's, in each round), whose destructor
 * makes an allocation and a free and sets the value again, for all 4 of
 * glibc's rounds: 13 calls a thread, 8 of them from its exit path.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"

static CUcontext ctx;
static pthread_key_t key;
static int exit_calls;

static void on_exit_path(void *v)
{
	CUdeviceptr d = 0;
	cuMemAlloc_v2(&d, 512);
	cuMemFree_v2(d);
	long round = (long)v;
	if (round < 4) /* PTHREAD_DESTRUCTOR_ITERATIONS: glibc's rounds */
		pthread_setspecific(key, (void *)(round + 1));
}

static void *five(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(ctx);
	if (exit_calls)
		pthread_setspecific(key, (void *)1);
	CUdeviceptr a = 0, b = 0;
	cuMemAlloc_v2(&a, 4096);
	cuMemAlloc_v2(&b, 8192);
	cuMemFree_v2(a);
	cuMemFree_v2(b);
	cuCtxSynchronize();
	return NULL;
}

static void *early(void *arg)
{
	(void)arg;
	char *p = malloc(1 << 20);
	if (p)
		p[0] = 1;
	return p;
}

int main(int argc, char **argv)
{
	exit_calls = argc > 1 && !strcmp(argv[1], "exit");
	pthread_t th;
	void *block = NULL;
	if (exit_calls) {
		pthread_create(&th, NULL, early, NULL);
		pthread_join(th, &block);
	}
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	if (exit_calls) {
		/* A recorded call first: gpuspy's key is made with the file,
		 * before this one, whose destructor then runs after its own. */
		cuCtxSetCurrent(ctx);
		cuCtxSynchronize();
		pthread_key_create(&key, on_exit_path);
	}
	for (int i = 0; i < 2000; i++) {
		pthread_create(&th, NULL, five, NULL);
		pthread_join(th, NULL);
	}
	(void)block; /* live at exit: no free to record */
	printf("2000 threads done\n");
	return 0;
}
