/* SPDX-License-Identifier: MIT */
/*
 * Runtime API scenario with a known sequence of calls (see tests/run.py for
 * the expected trace). Built against the runtime double as a shared library
 * (route 1: exported symbols) and linked in statically (routes 2 and 3:
 * dlsym and cuGetProcAddress), each with and without PTDS, which calls the
 * per-thread-default-stream entry points as CUDA_API_PER_THREAD_DEFAULT_STREAM
 * does. Prints every return code and errno so traced and untraced runs can be
 * compared byte for byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"
#include "prog_common.h"

static dim3 dim3_make(unsigned x, unsigned y, unsigned z)
{
	dim3 d = { x, y, z };
	return d;
}

static void scale_body(void **args)
{
	float *p = *(float **)args[0];
	int n = *(int *)args[1];
	for (int i = 0; i < n; i++)
		p[i] *= 2.0f;
}

static void add_body(void **args)
{
	float *p = *(float **)args[0];
	p[0] += 1.0f;
}

static void scale_kernel(float *p, int n) { (void)p; (void)n; }
static void add_kernel(float *p) { (void)p; }

int main(void)
{
	fakecudart_register((const void *)scale_kernel, "scale_kernel", scale_body);
	fakecudart_register((const void *)add_kernel, "add_kernel", add_body);
	float *d = NULL;
	void *pin = NULL;
	char *pg = calloc(1, 8192);
	cudaStream_t s = (cudaStream_t)0x5000;
	for (int i = 0; i < 2048; i++)
		((float *)pg)[i] = (float)i;

	CALL(cudaMalloc((void **)&d, 1 << 20));
	CALL(cudaMallocHost(&pin, 4096));
	if (!d || !pin) {
		printf("allocation failed\n");
		return 0;
	}
	CALL(D(cudaMemcpy)(d, pg, 8192, cudaMemcpyHostToDevice));
	CALL(S(cudaMemcpyAsync)(d + 4096, pin, 4096, cudaMemcpyHostToDevice, s));
	CALL(D(cudaMemcpy)(pg, d, 2048, cudaMemcpyDeviceToHost));
	CALL(S(cudaMemcpyAsync)(pin, d, 1024, cudaMemcpyDeviceToHost, s));
	CALL(D(cudaMemcpy)(d + 65536, d, 512, cudaMemcpyDeviceToDevice));
	CALL(D(cudaMemcpy)(d + 1024, pg, 256, cudaMemcpyDefault));
	CALL(D(cudaMemcpy)(pin, d, 128, cudaMemcpyDefault));
	CALL(D(cudaMemset)(d + 8192, 0, 4096));
	int n = 16;
	void *args[] = { &d, &n };
	CALL(S(cudaLaunchKernel)((const void *)scale_kernel, dim3_make(4, 2, 1), dim3_make(128, 1, 1), args, 0, s));
	cudaKernel_t k;
	__cudaGetKernel(&k, (const void *)scale_kernel);
	CALL(S(__cudaLaunchKernel)(k, dim3_make(8, 1, 1), dim3_make(64, 1, 1), args, 0, s));
	cudaLaunchConfig_t cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDim = dim3_make(2, 2, 2);
	cfg.blockDim = dim3_make(32, 4, 1);
	cfg.stream = s;
	CALL(S(cudaLaunchKernelExC)(&cfg, (const void *)add_kernel, args));
	CALL(S(cudaStreamSynchronize)(s));
	CALL(cudaDeviceSynchronize());
	float out[4];
	CALL(D(cudaMemcpy)(out, d, sizeof(out), cudaMemcpyDeviceToHost));
	printf("result %.1f %.1f %.1f %.1f\n", out[0], out[1], out[2], out[3]);
	CALL(cudaFree(d));
	CALL(cudaFreeHost(pin));
	free(pg);
	return 0;
}
