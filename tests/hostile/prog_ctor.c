/* SPDX-License-Identifier: MIT */
/*
 * Linked against tests/hostile/ctor_lib.c, whose constructor calls
 * cudaFree(0) before libgpuspy's constructor has run; then main makes two
 * calls. Under gpuspy all three are recorded and the program finishes.
 */
#include <stdio.h>
#include <stddef.h>

int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);

int main(void)
{
	void *p = NULL;
	int a = cudaMalloc(&p, 4096);
	int b = cudaFree(p);
	printf("main: %d %d\n", a, b);
	return 0;
}
