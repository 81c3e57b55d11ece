// SPDX-License-Identifier: MIT
// A C program whose kernel trips a device-side assert (tests/gpu/exits.sh,
// issue 54 point 3): 20 good launches of `scale`, then `check_index`, whose
// assert fails; the next cudaDeviceSynchronize and every call after it
// fail with cudaErrorAssert (710). Exits 1, as the program says.
#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= 1.0001f;
}

__global__ void check_index(const float *x, int n, int at)
{
	assert(at < n);
	(void)x;
}

int main()
{
	const int n = 1 << 20;
	float *x;
	cudaMalloc(&x, n * sizeof(float));
	for (int i = 0; i < 20; i++)
		scale<<<n / 256, 256>>>(x, n);
	cudaDeviceSynchronize();
	check_index<<<1, 1>>>(x, n, n + 5); // the launch the report should name
	cudaError_t e = cudaDeviceSynchronize();
	cudaError_t again = cudaMemset(x, 0, 16);
	printf("synchronize: %d, memset after: %d\n", (int)e, (int)again);
	return e == cudaSuccess ? 0 : 1;
}
