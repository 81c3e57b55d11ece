// SPDX-License-Identifier: MIT
// Pageable vs pinned host-to-device copies: the same 64 MiB buffer copied 10
// times from malloc'd (pageable) memory and 10 times from cudaMallocHost'd
// (pinned) memory, each in its own phase. gpuspy diagnoses the pageable copies.
//
// Build: nvcc -O2 -cudart shared -Iinclude -o pinned_vs_pageable examples/pinned_vs_pageable.cu
// Run:   tools/gpuspy run -- ./pinned_vs_pageable
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpuspy.h"

static double seconds_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main()
{
	const size_t n = 64u << 20;
	const int reps = 10;
	char *pageable = static_cast<char *>(malloc(n));
	char *pinned = nullptr;
	void *dev = nullptr;
	if (!pageable || cudaMallocHost(&pinned, n) != cudaSuccess || cudaMalloc(&dev, n) != cudaSuccess) {
		std::fprintf(stderr, "allocation failed\n");
		return 1;
	}
	memset(pageable, 1, n);
	memset(pinned, 1, n);

	GPUSPY_PHASE_PUSH("pageable");
	auto t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < reps; i++)
		cudaMemcpy(dev, pageable, n, cudaMemcpyHostToDevice);
	double tp = seconds_since(t0);
	GPUSPY_PHASE_POP();

	GPUSPY_PHASE_PUSH("pinned");
	t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < reps; i++)
		cudaMemcpyAsync(dev, pinned, n, cudaMemcpyHostToDevice, 0);
	cudaStreamSynchronize(0);
	double tq = seconds_since(t0);
	GPUSPY_PHASE_POP();

	std::printf("pageable %.1f GB/s, pinned %.1f GB/s\n", reps * n / tp / 1e9, reps * n / tq / 1e9);
	cudaFree(dev);
	cudaFreeHost(pinned);
	free(pageable);
	return 0;
}
