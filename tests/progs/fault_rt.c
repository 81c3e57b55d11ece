/* SPDX-License-Identifier: MIT */
/*
 * prog_fault's stand-in for the CUDA runtime that nvcc links into a
 * program: built without debug information (-g0), as NVIDIA ships
 * libcudart_static.a, so its frames have no lines: an API function of its
 * own, and an internal one named as the real one's are
 * ("libcudart_static_<hash>"). asm keeps each call from becoming a jump.
 */
#include "../../lib/cuda_api.h"

cudaError_t cudaStaticSynchronize(void);

__attribute__((noinline)) cudaError_t libcudart_static_5382377d(void)
{
	cudaError_t e = cudaDeviceSynchronize();
	__asm__ volatile("");
	return e;
}

__attribute__((noinline)) cudaError_t cudaStaticSynchronize(void)
{
	cudaError_t e = libcudart_static_5382377d();
	__asm__ volatile("");
	return e;
}
