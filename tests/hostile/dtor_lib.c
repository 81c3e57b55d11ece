/* SPDX-License-Identifier: MIT */
/*
 * A library whose destructor, which runs after libgpuspy's, makes CUDA
 * calls (tests/hostile/prog_dtor.c links it): two of its own, or with
 * HOSTILE_DTOR_THREAD set, two from a thread it starts then.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

int cudaMalloc(void **p, unsigned long n);
int cudaFree(void *p);

static void *two_calls(void *arg)
{
	void *p = 0;
	int a = cudaMalloc(&p, 1 << 20);
	int b = cudaFree(p);
	fprintf(stderr, "%s: %d %d\n", (const char *)arg, a, b);
	return NULL;
}

__attribute__((destructor)) static void dtor_makes_cuda_calls(void)
{
	if (getenv("HOSTILE_DTOR_THREAD")) {
		pthread_t th;
		pthread_create(&th, NULL, two_calls, "dtor thread");
		pthread_join(th, NULL);
	} else {
		two_calls("dtor");
	}
}
