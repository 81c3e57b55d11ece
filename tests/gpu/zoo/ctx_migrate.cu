// SPDX-License-Identifier: MIT
// cuda-samples' threadMigration, reduced, on the driver API: the main
// thread creates a context and pops it; two threads in turn push it,
// launch a kernel (loaded from this program's own fatbin through the
// runtime's registration, fetched with cudaGetFuncBySymbol), synchronize
// and pop it. gpuspy kept 1 of the 2 kernels' GPU records (issue 54.2).
// Build: nvcc -O2 ctx_migrate.cu -lcuda -o ctx_migrate
#include <cstdio>
#include <thread>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void fill(int *p, int v) { p[threadIdx.x] = v; }

int main()
{
	cuInit(0);
	CUdevice dev;
	cuDeviceGet(&dev, 0);
	CUcontext ctx;
	cuDevicePrimaryCtxRetain(&ctx, dev);
	cuCtxPushCurrent(ctx);
	CUfunction f;
	cudaGetFuncBySymbol(&f, (const void *)fill);
	CUdeviceptr d;
	cuMemAlloc(&d, 64 * sizeof(int));
	cuCtxPopCurrent(nullptr);
	int sum = 0;
	for (int k = 1; k <= 2; k++) {
		std::thread t([&, k] {
			cuCtxPushCurrent(ctx);
			void *args[] = { &d, (void *)&k };
			cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr);
			cuCtxSynchronize();
			int h[64];
			cuMemcpyDtoH(h, d, sizeof(h));
			sum += h[63];
			cuCtxPopCurrent(nullptr);
		});
		t.join();
	}
	cuCtxPushCurrent(ctx);
	cuMemFree(d);
	cuCtxPopCurrent(nullptr);
	cuDevicePrimaryCtxRelease(dev);
	printf("sum %d\n", sum);
	return sum == 3 ? 0 : 1;
}
