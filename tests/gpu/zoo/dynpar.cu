// SPDX-License-Identifier: MIT
// Zoo: dynamic parallelism: a parent kernel launches 4 child kernels.
// Build: nvcc -O2 -rdc=true dynpar.cu -lcudadevrt -o dynpar
#include <cstdio>
#include <cuda_runtime.h>

__global__ void child(int *c, int k) { atomicAdd(c, k); }

__global__ void parent(int *c)
{
	for (int k = 1; k <= 4; k++)
		child<<<1, 32>>>(c, k);
}

int main()
{
	int *c, h = 0;
	cudaMalloc(&c, sizeof(int));
	cudaMemset(c, 0, sizeof(int));
	for (int i = 0; i < 5; i++)
		parent<<<1, 1>>>(c);
	cudaMemcpy(&h, c, sizeof(int), cudaMemcpyDeviceToHost);
	printf("dynpar: %d\n", h);
	return 0;
}
