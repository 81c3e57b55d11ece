// SPDX-License-Identifier: MIT
// cuda-samples' simpleCallback, reduced: 8 threads start at once, each
// sets the device, makes its own stream, launches one kernel on it and
// adds a stream callback (cudaStreamAddCallback) that counts on the host.
// gpuspy kept 1 of the 8 kernels' GPU records: the threads launched while
// CUPTI was starting on the first one's call (issue 54.1).
// Build: nvcc -O2 callbacks.cu -o callbacks
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>
#include <cuda_runtime.h>

__global__ void inc(int *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] += 1;
}

static std::atomic<int> called{0};

static void CUDART_CB done(cudaStream_t, cudaError_t status, void *)
{
	if (status == cudaSuccess)
		called++;
}

int main()
{
	const int threads = 8, n = 1 << 20;
	std::vector<std::thread> t;
	for (int k = 0; k < threads; k++)
		t.emplace_back([=] {
			cudaSetDevice(0);
			cudaStream_t s;
			cudaStreamCreate(&s);
			int *d;
			cudaMalloc(&d, n * sizeof(int));
			cudaMemsetAsync(d, 0, n * sizeof(int), s);
			inc<<<n / 256, 256, 0, s>>>(d, n);
			cudaStreamAddCallback(s, done, nullptr, 0);
			cudaStreamSynchronize(s);
			cudaFree(d);
			cudaStreamDestroy(s);
		});
	for (auto &x : t)
		x.join();
	printf("callbacks %d of %d\n", called.load(), threads);
	return called.load() == threads ? 0 : 1;
}
