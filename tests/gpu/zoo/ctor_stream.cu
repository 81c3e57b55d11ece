// SPDX-License-Identifier: MIT
// A C++ global whose constructor creates a stream in a shared library the
// program links (so it runs before libgpuspy's constructor); main launches
// a kernel on it 10 times. gpuspy once hung here: its start-up re-entered
// itself through its own constructor.
// Build: nvcc -O2 -Xcompiler -fPIC -shared -cudart shared ctor_stream.cu -DLIB -o libctor_stream.so
//        nvcc -O2 -cudart shared ctor_stream.cu -L. -lctor_stream -o ctor_stream
#include <cstdio>
#include <cuda_runtime.h>
#ifdef LIB
struct Global {
	cudaStream_t s;
	Global() { cudaStreamCreate(&s); }
};
Global the_global;
cudaStream_t global_stream() { return the_global.s; }
#else
cudaStream_t global_stream();
__global__ void bump(int *p) { atomicAdd(p, 1); }
int main()
{
	int *d, h = 0;
	cudaMalloc(&d, sizeof(int));
	cudaMemsetAsync(d, 0, sizeof(int), global_stream());
	for (int i = 0; i < 10; i++)
		bump<<<1, 32, 0, global_stream()>>>(d);
	cudaMemcpyAsync(&h, d, sizeof(int), cudaMemcpyDeviceToHost, global_stream());
	cudaStreamSynchronize(global_stream());
	printf("sum %d\n", h);
	return 0;
}
#endif
