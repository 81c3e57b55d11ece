/* SPDX-License-Identifier: MIT */
/* N threads each launch M kernels through the driver at once; the runner
 * checks recorded + dropped == N * M exactly. With `migrate`, the main
 * thread creates a context and pops it, and each thread pushes it before
 * its launches and pops it after (threadMigration's way). Usage:
 * prog_threads N M [migrate] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

static long per_thread;
static CUfunction fn;
static CUcontext migrating;

static void *work(void *arg)
{
	(void)arg;
	if (migrating)
		cuCtxPushCurrent_v2(migrating);
	for (long i = 0; i < per_thread; i++)
		cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	if (migrating)
		cuCtxPopCurrent_v2(NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	per_thread = argc > 2 ? atol(argv[2]) : 10000;
	pthread_t t[256];
	if (n < 1 || n > 256)
		return 2;
	fn = fakecuda_function("thread_kernel", NULL);
	if (argc > 3 && !strcmp(argv[3], "migrate")) {
		cuInit(0);
		cuCtxCreate_v2(&migrating, 0, 0);
		cuCtxPopCurrent_v2(NULL);
	}
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("issued %ld\n", n * per_thread);
	return 0;
}
