// SPDX-License-Identifier: MIT
// A closed-binary stand-in: nvcc links cudart statically by default, so no
// cuda* symbol of this program can be interposed; gpuspy sees its work
// through dlsym and cuGetProcAddress. One 4 MiB pageable H2D copy, 100
// kernel launches, one D2H copy.
//
// Build: nvcc -O2 -o static_launches examples/static_launches.cu
// Run:   LD_PRELOAD=lib/libgpuspy.so ./static_launches && tools/gpuspy dump gpuspy-*.gspy
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void scale(float *x, int n, float a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

int main()
{
	const int n = 1 << 20; // 4 MiB of floats
	std::vector<float> host(n, 1.0f);
	float *dev = nullptr;
	if (cudaMalloc(&dev, n * sizeof(float)) != cudaSuccess) {
		std::fprintf(stderr, "cudaMalloc failed\n");
		return 1;
	}
	cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
	for (int i = 0; i < 100; i++)
		scale<<<(n + 255) / 256, 256>>>(dev, n, 1.0001f);
	cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost);
	cudaFree(dev);
	std::printf("x[0] = %f after 100 launches\n", host[0]);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
