// SPDX-License-Identifier: MIT
// Allocation churn: every step allocates a 32 MiB scratch buffer, uses it
// and frees it again, instead of allocating it once. Each cudaMalloc and
// cudaFree synchronizes the device. gpuspy diagnoses allocation churn.
//
// Build: nvcc -O2 -cudart shared -Iinclude -o alloc_churn examples/alloc_churn.cu
// Run:   tools/gpuspy run -- ./alloc_churn
#include <cstdio>

#include "gpuspy.h"

__global__ void fill(float *p, int n, float v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v;
}

int main()
{
	const int n = 8 << 20, steps = 100; // 32 MiB of floats
	for (int s = 0; s < steps; s++) {
		GPUSPY_PHASE_PUSH("step");
		float *scratch = nullptr;
		if (cudaMalloc(&scratch, n * sizeof(float)) != cudaSuccess) {
			std::fprintf(stderr, "cudaMalloc failed\n");
			return 1;
		}
		fill<<<(n + 255) / 256, 256>>>(scratch, n, (float)s);
		cudaFree(scratch);
		GPUSPY_PHASE_POP();
	}
	std::printf("%d steps done\n", steps);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
