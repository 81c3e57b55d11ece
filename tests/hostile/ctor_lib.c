/* SPDX-License-Identifier: MIT */
/*
 * A library whose constructor makes a CUDA call, as C++ globals that
 * create a stream or call cudaFree(0) do. The program links it, so its
 * constructor runs before libgpuspy's own (tests/hostile/prog_ctor.c).
 */
#include <stdio.h>

int cudaFree(void *p);

__attribute__((constructor)) static void ctor_makes_a_cuda_call(void)
{
	fprintf(stderr, "ctor: cudaFree(0) = %d\n", cudaFree(0));
}

