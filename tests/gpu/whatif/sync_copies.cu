// SPDX-License-Identifier: MIT
// A C program with synchronous copies: each iteration copies 32 MiB in
// from pageable memory with cudaMemcpy, runs a kernel of a few ms, and
// copies 32 MiB back with cudaMemcpy.
// Fix (--fix): what the report's advice says, and only that: pinned
// buffers and cudaMemcpyAsync, on one stream. (Runs 1-3 of the suite
// also put the two buffers on two streams, so one's copies overlapped the
// other's kernel: a second change, which the advice does not make and the
// replay does not model; their predictions fell 8-19% short.)
// Build: nvcc -O2 -o sync_copies sync_copies.cu; run: ./sync_copies [--fix]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

__global__ void work(float *x, size_t n, int rounds)
{
	for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float v = x[i];
		for (int r = 0; r < rounds; r++)
			v = v * 0.999f + 0.001f;
		x[i] = v;
	}
}

int main(int argc, char **argv)
{
	bool fix = argc > 1 && !strcmp(argv[1], "--fix");
	const size_t n = 8u << 20; // 32 MiB of floats
	const int warmup = 5, steps = 60, rounds = 2000;
	float *h[2], *d[2];
	cudaStream_t s[2];
	for (int k = 0; k < 2; k++) {
		if (fix)
			cudaMallocHost(&h[k], n * sizeof(float));
		else
			h[k] = (float *)malloc(n * sizeof(float));
		memset(h[k], 0, n * sizeof(float));
		cudaMalloc(&d[k], n * sizeof(float));
		cudaStreamCreate(&s[k]);
	}
	auto step = [&](int i) {
		int k = i & 1;
		if (fix) {
			cudaMemcpyAsync(d[k], h[k], n * sizeof(float), cudaMemcpyHostToDevice, s[0]);
			work<<<1024, 256, 0, s[0]>>>(d[k], n, rounds);
			cudaMemcpyAsync(h[k], d[k], n * sizeof(float), cudaMemcpyDeviceToHost, s[0]);
		} else {
			cudaMemcpy(d[k], h[k], n * sizeof(float), cudaMemcpyHostToDevice);
			work<<<1024, 256>>>(d[k], n, rounds);
			cudaMemcpy(h[k], d[k], n * sizeof(float), cudaMemcpyDeviceToHost);
		}
	};
	for (int i = 0; i < warmup; i++)
		step(i);
	cudaDeviceSynchronize();
	auto t = std::chrono::steady_clock::now();
	for (int i = 0; i < steps; i++)
		step(warmup + i);
	cudaDeviceSynchronize();
	double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count() / steps;
	printf("whatif step_ms=%.4f steps=%d\n", ms, steps);
	return 0;
}
