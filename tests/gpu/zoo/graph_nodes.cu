// SPDX-License-Identifier: MIT
// Zoo: a CUDA graph captured from a stream with a memcpy (host to device,
// pinned), a memset, memory nodes (cudaMallocAsync / cudaFreeAsync), a
// kernel and a copy back; instantiated once, launched 10 times.
// Build: nvcc -O2 graph_nodes.cu -o graph_nodes
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float *d, const float *s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		d[i] = 2.0f * s[i] + d[i];
}

int main()
{
	const int n = 1 << 20;
	float *h, *out, *d;
	cudaMallocHost(&h, n * sizeof(float));
	cudaMallocHost(&out, n * sizeof(float));
	for (int i = 0; i < n; i++)
		h[i] = 1.0f;
	cudaMalloc(&d, n * sizeof(float));
	cudaStream_t s;
	cudaStreamCreate(&s);
	cudaGraph_t g;
	cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
	float *tmp;
	cudaMallocAsync(&tmp, n * sizeof(float), s);
	cudaMemcpyAsync(tmp, h, n * sizeof(float), cudaMemcpyHostToDevice, s);
	cudaMemsetAsync(d, 0, n * sizeof(float), s);
	scale<<<(n + 255) / 256, 256, 0, s>>>(d, tmp, n);
	cudaMemcpyAsync(out, d, n * sizeof(float), cudaMemcpyDeviceToHost, s);
	cudaFreeAsync(tmp, s);
	cudaStreamEndCapture(s, &g);
	cudaGraphExec_t e;
	cudaGraphInstantiate(&e, g, 0);
	for (int i = 0; i < 10; i++)
		cudaGraphLaunch(e, s);
	cudaStreamSynchronize(s);
	printf("graph: out[7] = %.1f\n", out[7]);
	return 0;
}
