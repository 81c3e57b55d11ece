// SPDX-License-Identifier: MIT
// Host cost of the driver calls GPUSPY_CUPTI=events makes, on the real
// driver: each call is timed interleaved with an empty kernel launch on the
// legacy stream (as a training loop has them), minus the launch alone.
// With an argument N it instead times N iterations of a phase loop
// (push "a", 8 launches, pop, 8 launches: two phase changes per iteration)
// and prints ns per phase change over the launches; run it under gpuspy
// with GPUSPY_CUPTI=off and =events to get the events mode's cost. With a
// second argument "busy", the GPU is on the loop's critical path as in a
// PyTorch step that begins with a pageable copy: each iteration starts with
// a 64 KiB pageable cudaMemcpy (it waits for the stream) and the kernels
// spin about 4 us each.
//   nvcc -O2 -Iinclude -o event_costs bench/gpu/event_costs.cu -lcuda
//   ./event_costs; LD_PRELOAD=lib/libgpuspy.so GPUSPY_CUPTI=events ./event_costs 20000 [busy]
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpuspy.h"

__global__ void empty(void) {}
__global__ void spin(long long cycles)
{
	long long t = clock64();
	while (clock64() - t < cycles)
		;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

enum { ITERS = 20000, REPS = 7 };
static CUevent ev[2], done[2], light;
static CUstream side;

static void call(int what, int i)
{
	CUcontext c;
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
	CUstreamCaptureStatus cs;
	float ms;
	switch (what) {
	case 0: break;
	case 1: cuEventRecord(ev[i & 1], 0); break;
	case 2: cuEventRecord(light, 0); break;
	case 3: cuEventQuery(ev[i & 1]); break;   /* usually still pending */
	case 4: cuEventQuery(done[0]); break;     /* long complete */
	case 5: cuEventElapsedTime(&ms, done[0], done[1]); break;
	case 6: cuThreadExchangeStreamCaptureMode(&m); cuThreadExchangeStreamCaptureMode(&m); break;
	case 7: cuStreamIsCapturing(side, &cs); break;
	case 8: cuCtxGetCurrent(&c); break;
	case 9: cuEventRecord(ev[i & 1], side); break;
	}
}

static const char *names[] = {
	"launch alone", "cuEventRecord (timing), legacy stream", "cuEventRecord (no timing)",
	"cuEventQuery, recent event", "cuEventQuery, completed event", "cuEventElapsedTime",
	"cuThreadExchangeStreamCaptureMode x2", "cuStreamIsCapturing", "cuCtxGetCurrent",
	"cuEventRecord (timing), created stream",
};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int phases(int iters, int busy)
{
	static char host[64 << 10];
	void *dev = NULL;
	cudaMalloc(&dev, sizeof(host));
	long long cycles = busy ? 8000 : 0; /* ~4 us at the H200's clock */
	double t[REPS];
	for (int r = 0; r < REPS; r++) {
		cudaDeviceSynchronize();
		double t0 = now();
		for (int i = 0; i < iters; i++) {
			if (busy)
				cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice);
			GPUSPY_PHASE_PUSH("a");
			for (int k = 0; k < 8; k++)
				busy ? spin<<<1, 1>>>(cycles) : empty<<<1, 1>>>();
			GPUSPY_PHASE_POP();
			for (int k = 0; k < 8; k++)
				busy ? spin<<<1, 1>>>(cycles) : empty<<<1, 1>>>();
		}
		cudaDeviceSynchronize();
		t[r] = (now() - t0) / iters;
	}
	qsort(t, REPS, sizeof(double), cmp);
	printf("phase loop%s: %.0f ns per iteration (2 phase changes, 16 launches)\n",
	       busy ? " (GPU busy, pageable copy first)" : "", t[REPS / 2]);
	cudaFree(dev);
	return 0;
}

int main(int argc, char **argv)
{
	cudaFree(0);
	if (argc > 1)
		return phases(atoi(argv[1]), argc > 2 && argv[2][0] == 'b');
	for (int i = 0; i < 2; i++) {
		cuEventCreate(&ev[i], CU_EVENT_DEFAULT);
		cuEventCreate(&done[i], CU_EVENT_DEFAULT);
		cuEventRecord(done[i], 0);
	}
	cuEventCreate(&light, CU_EVENT_DISABLE_TIMING);
	cuStreamCreate(&side, CU_STREAM_NON_BLOCKING);
	cudaDeviceSynchronize();
	int n = sizeof(names) / sizeof(names[0]);
	double med[16][REPS];
	for (int r = 0; r < REPS; r++)
		for (int w = 0; w < n; w++) {
			int what = r & 1 ? n - 1 - w : w;
			cudaDeviceSynchronize();
			double t0 = now();
			for (int i = 0; i < ITERS; i++) {
				empty<<<1, 1>>>();
				call(what, i);
			}
			med[what][r] = (now() - t0) / ITERS;
			cudaDeviceSynchronize();
		}
	double base = 0;
	for (int w = 0; w < n; w++) {
		qsort(med[w], REPS, sizeof(double), cmp);
		double m = med[w][REPS / 2];
		if (w == 0)
			base = m;
		printf("%-40s %8.0f ns per iteration, %+7.0f ns over the launch alone\n", names[w], m,
		       m - base);
	}
	return 0;
}
