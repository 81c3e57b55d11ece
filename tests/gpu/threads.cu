// SPDX-License-Identifier: MIT
// Issue 7, threads created by the driver and by CUPTI (H200 check, run by
// tests/gpu/run.sh, checked by tests/gpu/check_threads.py). The program:
// 50 kernel launches on a stream, each followed by cudaLaunchHostFunc, and 10
// cudaStreamAddCallback calls; the host functions run on a thread the CUDA
// driver creates, call gpuspy_mark() from there and malloc/free. It prints
// its main thread id, the ids of the driver threads that ran callbacks, and
// the counts, for the checker to compare with the trace.
//
// Build: nvcc -O2 -Iinclude -o threads tests/gpu/threads.cu
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpuspy.h"

static std::atomic<int> host_fns{0}, stream_cbs{0};
static std::mutex tids_lock;
static std::set<long> cb_tids;

static void note_tid()
{
	std::lock_guard<std::mutex> g(tids_lock);
	cb_tids.insert((long)syscall(SYS_gettid));
}

static void CUDART_CB host_fn(void *)
{
	GPUSPY_MARK("host_fn");
	free(malloc(4096));
	note_tid();
	host_fns++;
}

static void CUDART_CB stream_cb(cudaStream_t, cudaError_t, void *)
{
	GPUSPY_MARK("stream_cb");
	note_tid();
	stream_cbs++;
}

__global__ void bump(int *x)
{
	atomicAdd(x, 1);
}

int main()
{
	int *dev = nullptr;
	cudaStream_t s;
	if (cudaMalloc(&dev, sizeof(int)) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) {
		std::fprintf(stderr, "CUDA setup failed\n");
		return 1;
	}
	cudaMemsetAsync(dev, 0, sizeof(int), s);
	for (int i = 0; i < 50; i++) {
		bump<<<1, 32, 0, s>>>(dev);
		cudaLaunchHostFunc(s, host_fn, nullptr);
		if (i % 5 == 0)
			cudaStreamAddCallback(s, stream_cb, nullptr, 0);
	}
	cudaStreamSynchronize(s);
	int x = 0;
	cudaMemcpy(&x, dev, sizeof(int), cudaMemcpyDeviceToHost);
	cudaStreamDestroy(s);
	cudaFree(dev);
	std::printf("main_tid %ld\n", (long)syscall(SYS_gettid));
	std::printf("cb_tids");
	for (long t : cb_tids)
		std::printf(" %ld", t);
	std::printf("\nhost_fns %d stream_cbs %d sum %d\n", host_fns.load(), stream_cbs.load(), x);
	return (x == 50 * 32 && host_fns == 50 && stream_cbs == 10) ? 0 : 1;
}
