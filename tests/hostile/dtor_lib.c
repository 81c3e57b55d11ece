/* SPDX-License-Identifier: MIT */
/*
 * A library whose destructor, which runs after libgpuspy's, makes the
 * process's first CUDA calls (tests/hostile/prog_dtor.c links it).
 */
#include <stdio.h>

int cudaMalloc(void **p, unsigned long n);
int cudaFree(void *p);

__attribute__((destructor)) static void dtor_makes_the_first_cuda_calls(void)
{
	void *p = 0;
	int a = cudaMalloc(&p, 1 << 20);
	int b = cudaFree(p);
	fprintf(stderr, "dtor: %d %d\n", a, b);
}
