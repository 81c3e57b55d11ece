// SPDX-License-Identifier: MIT
// A data-starved loop: each step prepares its batch on the host (about 3 ms
// of CPU work) before a few short kernels run, so the GPU waits for data.
// gpuspy diagnoses data starvation in the "data" phase.
//
// Build: nvcc -O2 -cudart shared -Iinclude -o data_starved examples/data_starved.cu
// Run:   tools/gpuspy run -- ./data_starved
#include <chrono>
#include <cstdio>
#include <cstdint>

#include "gpuspy.h"

__global__ void train_step(float *w, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		w[i] += 0.001f * x[i];
}

// Host-side "augmentation": a xorshift pass over the batch, for ~3 ms.
static void prepare(float *batch, int n, uint32_t *seed)
{
	auto t0 = std::chrono::steady_clock::now();
	do {
		for (int i = 0; i < n; i++) {
			*seed ^= *seed << 13;
			*seed ^= *seed >> 17;
			*seed ^= *seed << 5;
			batch[i] = (float)(*seed & 0xffff) / 65536.0f;
		}
	} while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(3));
}

int main()
{
	const int n = 1 << 20, steps = 50;
	float *batch = nullptr, *x = nullptr, *w = nullptr;
	cudaMallocHost(&batch, n * sizeof(float));
	cudaMalloc(&x, n * sizeof(float));
	cudaMalloc(&w, n * sizeof(float));
	cudaMemset(w, 0, n * sizeof(float));
	uint32_t seed = 42;
	for (int s = 0; s < steps; s++) {
		GPUSPY_PHASE_PUSH("data");
		prepare(batch, n, &seed);
		cudaMemcpyAsync(x, batch, n * sizeof(float), cudaMemcpyHostToDevice, 0);
		GPUSPY_PHASE_POP();
		GPUSPY_PHASE_PUSH("compute");
		for (int k = 0; k < 20; k++)
			train_step<<<(n + 255) / 256, 256>>>(w, x, n);
		cudaDeviceSynchronize();
		GPUSPY_PHASE_POP();
	}
	std::printf("%d steps done\n", steps);
	cudaFree(w);
	cudaFree(x);
	cudaFreeHost(batch);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
