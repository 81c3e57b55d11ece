/* SPDX-License-Identifier: MIT */
/*
 * Phases whose GPU time GPUSPY_CUPTI=events measures, on the driver double
 * (a launch there takes grid_x microseconds of its stream's GPU clock):
 *   "multi":    10 us on stream s1, 20 us on s2, 5 us on the legacy stream;
 *               100 us on the per-thread stream twice (not timed);
 *   "outer" 1 us on s1, then "inner" 2 us on s1, then "outer" again 4 us;
 *   "threaded": another thread launches 7 us on s2 (the phase is
 *               process-wide), main closes the phase after joining it.
 * `prog_events many`: instead, one phase with 1 us on each of 70 streams
 * (gpuspy follows 64).
 * `prog_events loop N`: N times phase "loop" with 1 us on s1 (the read-back
 * is batched: far fewer queries than intervals).
 * `prog_events capture`: phase "before" uses the legacy stream (5 us), then
 * s1 begins a capture in global mode and the phase ends while it lasts;
 * the capture's end must succeed; phase "after" 2 us on the legacy stream.
 * `prog_events destroy`: phase "short" makes two streams, 3 us and 4 us on
 * them, synchronizes and destroys them (cuStreamDestroy_v2, then the old
 * cuStreamDestroy), then 1 us on s1; phase "next" 2 us on s1.
 * `prog_events churn`: one phase in which 70 streams are each made, given
 * 1 us, synchronized and destroyed in turn.
 * Usage: prog_events [many | loop N | capture | destroy | churn]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"
#include "gpuspy.h"

static CUcontext ctx;
static CUstream s1, s2;
static CUfunction k;

static void go(unsigned us, CUstream st)
{
	cuLaunchKernel(k, us, 1, 1, 32, 1, 1, 0, st, NULL, NULL);
}

static void *worker(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(ctx);
	go(7, s2);
	return NULL;
}

static int capture(void)
{
	GPUSPY_PHASE_PUSH("before");
	go(5, NULL);
	printf("begin capture rc=%d\n", cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	go(3, s1);
	GPUSPY_PHASE_POP();
	CUgraph g = NULL;
	CUresult rc = cuStreamEndCapture(s1, &g);
	printf("end capture rc=%d graph %s\n", rc, g ? "made" : "none");
	GPUSPY_PHASE_PUSH("after");
	go(2, NULL);
	GPUSPY_PHASE_POP();
	return 0;
}

static int destroy(void)
{
	GPUSPY_PHASE_PUSH("short");
	CUstream a, b;
	cuStreamCreate(&a, 0);
	cuStreamCreate(&b, 0);
	go(3, a);
	go(4, b);
	cuStreamSynchronize(a);
	cuStreamSynchronize(b);
	printf("destroy rc=%d", cuStreamDestroy_v2(a));
	printf(" old ABI rc=%d\n", cuStreamDestroy(b));
	go(1, s1);
	GPUSPY_PHASE_POP();
	GPUSPY_PHASE_PUSH("next");
	go(2, s1);
	GPUSPY_PHASE_POP();
	return 0;
}

static int churn(void)
{
	GPUSPY_PHASE_PUSH("churn");
	for (int i = 0; i < 70; i++) {
		CUstream st;
		cuStreamCreate(&st, 0);
		go(1, st);
		cuStreamSynchronize(st);
		cuStreamDestroy_v2(st);
	}
	GPUSPY_PHASE_POP();
	printf("churn done\n");
	return 0;
}

int main(int argc, char **argv)
{
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	cuStreamCreate(&s1, 0);
	cuStreamCreate(&s2, 0);
	k = fakecuda_function("work", NULL);
	if (argc > 2 && !strcmp(argv[1], "loop")) {
		int n = atoi(argv[2]);
		for (int i = 0; i < n; i++) {
			GPUSPY_PHASE_PUSH("loop");
			go(1, s1);
			GPUSPY_PHASE_POP();
		}
		printf("loop done\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "capture"))
		return capture();
	if (argc > 1 && !strcmp(argv[1], "destroy"))
		return destroy();
	if (argc > 1 && !strcmp(argv[1], "churn"))
		return churn();
	if (argc > 1) {
		GPUSPY_PHASE_PUSH("many");
		for (int i = 0; i < 70; i++) {
			CUstream st;
			cuStreamCreate(&st, 0);
			go(1, st);
		}
		GPUSPY_PHASE_POP();
		printf("many done\n");
		return 0;
	}

	GPUSPY_PHASE_PUSH("multi");
	go(10, s1);
	go(20, s2);
	go(5, NULL);
	go(100, CU_STREAM_PER_THREAD);
	cuLaunchKernel_ptsz(k, 100, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	GPUSPY_PHASE_POP();

	GPUSPY_PHASE_PUSH("outer");
	go(1, s1);
	GPUSPY_PHASE_PUSH("inner");
	go(2, s1);
	GPUSPY_PHASE_POP();
	go(4, s1);
	GPUSPY_PHASE_POP();

	GPUSPY_PHASE_PUSH("threaded");
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	GPUSPY_PHASE_POP();
	printf("events done\n");
	return 0;
}
