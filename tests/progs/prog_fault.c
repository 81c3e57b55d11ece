/* SPDX-License-Identifier: MIT */
/*
 * tests/gpu/exits/fault.cu on the runtime double, for the post-mortem's
 * tests (test_cupti.py): 20 launches of `scale`, a synchronize, then
 * `check_index`, whose device-side assert the driver double trips when
 * FAKECUDA_ASSERT=check_index: the next synchronize and the memset after
 * it fail with 710, as on the H200. With `two`, `scale` runs once more
 * between the good synchronize and `check_index`: two launches the
 * failure may come from; with `poll`, 40 more synchronizes after the
 * memset, each failing at once. Built -O1 -g: the tests know its lines.
 * Prints both results; exits 1 when the synchronize failed, as fault.cu
 * does.
 * Usage: prog_fault [two|poll]
 */
#include <stdio.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

static void scale(float *x, int n) { (void)x; (void)n; }
static void check_index(const float *x, int n, int at) { (void)x; (void)n; (void)at; }

/* Where the error surfaces, the stack is as nvcc builds fault.cu (the
 * runtime linked in, -cudart static): the runtime's API and its own
 * functions, without lines, are frames of the program, which the report
 * passes over (fault_rt.c, built -g0); and cuda_runtime.h's templates
 * (cudaMalloc<T>) are inlined into main, here two deep, whose line the
 * report gives, not theirs. asm keeps each call from becoming a jump. */
cudaError_t cudaStaticSynchronize(void);

static inline __attribute__((always_inline)) cudaError_t checked(void)
{
	cudaError_t e = cudaStaticSynchronize();
	__asm__ volatile("");
	return e;
}

static inline __attribute__((always_inline)) cudaError_t synchronize(void)
{
	cudaError_t e = checked();
	__asm__ volatile("");
	return e;
}

/* In main itself: a launch's stack is main's line. */
#define LAUNCH(k) cudaLaunchKernel((const void *)(k), grid, block, args, 0, NULL)

int main(int argc, char **argv)
{
	int two = argc > 1 && !strcmp(argv[1], "two");
	fakecudart_register((const void *)scale, "scale", NULL);
	fakecudart_register((const void *)check_index, "check_index", NULL);
	float *x = NULL;
	int n = 1 << 20, at = n + 5;
	cudaMalloc((void **)&x, (size_t)n * sizeof(float));
	void *args[] = { &x, &n, &at };
	dim3 grid = { 64, 1, 1 }, block = { 256, 1, 1 };
	for (int i = 0; i < 20; i++)
		LAUNCH(scale);
	cudaDeviceSynchronize();
	if (two)
		LAUNCH(scale); /* the other candidate */
	LAUNCH(check_index); /* the launch the report should name */
	cudaError_t e = synchronize(); /* the error surfaces here */
	cudaError_t again = cudaMemset(x, 0, 16);
	for (int i = 0; argc > 1 && !strcmp(argv[1], "poll") && i < 40; i++)
		cudaDeviceSynchronize();
	printf("synchronize: %d, memset after: %d\n", (int)e, (int)again);
	return e == cudaSuccess ? 0 : 1;
}
