/* SPDX-License-Identifier: MIT */
/*
 * A program whose trace file someone changes while it runs: a first batch
 * of calls (main thread and a worker), "batch 1 done" on stdout, a line
 * awaited on stdin (meanwhile the test empties the file or overwrites a
 * field of its header), then a second batch from other call sites (new
 * stacks for the string table) on a new thread and on main, 20,000 calls
 * each (new chunks), "batch 2 done", and LINGER_MS (argv[1]) of sleep so
 * that gpuspy's own threads (control, telemetry) wake up in the changed
 * file before the exit. Exit 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../lib/cuda_api.h"

static CUcontext ctx;

static __attribute__((noinline)) int first(int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		CUdeviceptr a = 0;
		bad |= cuMemAlloc_v2(&a, 4096) | cuMemFree_v2(a);
	}
	return bad;
}

static __attribute__((noinline)) int second(int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		CUdeviceptr a = 0;
		bad |= cuMemAlloc_v2(&a, 8192) | cuMemFree_v2(a);
		bad |= cuCtxSynchronize();
	}
	return bad;
}

static void *worker(void *arg)
{
	cuCtxSetCurrent(ctx);
	long bad = arg ? second(20000) : first(100);
	return (void *)bad;
}

static int on_thread(void *arg)
{
	pthread_t th;
	void *bad = (void *)1;
	if (pthread_create(&th, NULL, worker, arg) != 0 || pthread_join(th, &bad) != 0)
		return 1;
	return bad != NULL;
}

int main(int argc, char **argv)
{
	long linger_ms = argc > 1 ? atol(argv[1]) : 0;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	int bad = first(100) | on_thread(NULL);
	printf("batch 1 done %d\n", bad);
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		return 3;
	bad = second(20000) | on_thread((void *)1);
	printf("batch 2 done %d\n", bad);
	fflush(stdout);
	struct timespec ts = { linger_ms / 1000, (linger_ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	return 0;
}
