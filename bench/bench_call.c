/* SPDX-License-Identifier: MIT */
/*
 * Cost of one intercepted call against the driver double: T threads each
 * make N calls of one kind; prints the mean thread-CPU ns per call (immune
 * to the oversubscription of 8 threads on a small machine).
 * Usage: bench_call launch|copy|malloc T N   (run by bench/run.py)
 * malloc: a malloc(1 MiB) + free pair per call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "../lib/cuda_api.h"
#include "doubles/fakecuda.h"

static long calls;
static int copy_mode, malloc_mode;
/* Through a volatile pointer: the compiler may not drop the pair. */
static void *(*volatile do_malloc)(size_t) = malloc;
static CUfunction fn;
static CUcontext ctx;
static CUdeviceptr dev;
static char host[64];
static double ns_per_call[256];
static long faults[256];

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *work(void *arg)
{
	long id = (long)arg;
	cuCtxSetCurrent(ctx); /* as in a real program: a context is current */
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	double t0 = cpu_ns();
	if (malloc_mode)
		for (long i = 0; i < calls; i++)
			free(do_malloc(1u << 20));
	else if (copy_mode)
		for (long i = 0; i < calls; i++)
			cuMemcpyHtoDAsync_v2(dev, host, 1, NULL);
	else
		for (long i = 0; i < calls; i++)
			cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	ns_per_call[id] = (cpu_ns() - t0) / (double)calls;
	getrusage(RUSAGE_THREAD, &r1);
	faults[id] = (r1.ru_minflt - r0.ru_minflt) + (r1.ru_majflt - r0.ru_majflt);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	copy_mode = !strcmp(argv[1], "copy");
	malloc_mode = !strcmp(argv[1], "malloc");
	int t = atoi(argv[2]);
	calls = atol(argv[3]);
	if (t < 1 || t > 256 || calls < 1)
		return 2;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	fn = fakecuda_function("bench_kernel", NULL);
	cuMemAlloc_v2(&dev, 64);
	/* Warm up: first-call work (file creation, name lookup) is not the
	 * per-call cost. */
	for (int i = 0; i < 1000; i++) {
		cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		cuMemcpyHtoDAsync_v2(dev, host, 1, NULL);
		if (malloc_mode)
			free(do_malloc(1u << 20));
	}
	pthread_t th[256];
	for (long i = 0; i < t; i++)
		pthread_create(&th[i], NULL, work, (void *)i);
	double sum = 0;
	long nf = 0;
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		sum += ns_per_call[i];
		nf += faults[i];
	}
	printf("%.2f\n", sum / t);
	if (getenv("BENCH_FAULTS"))
		fprintf(stderr, "page faults in the calling threads: %ld\n", nf);
	return 0;
}
