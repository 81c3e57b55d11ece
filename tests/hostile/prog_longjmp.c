/* SPDX-License-Identifier: MIT */
/*
 * A timeout that siglongjmps out of a blocking cuStreamSynchronize (the
 * driver double's stream 0xb10c never finishes), then 40 more calls: 20
 * allocations and 20 frees, which must all be recorded.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "../../lib/cuda_api.h"

static sigjmp_buf env;

static void on_alarm(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

int main(void)
{
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { .it_value = { 0, 100000 } };
	if (!sigsetjmp(env, 1)) {
		setitimer(ITIMER_REAL, &it, NULL);
		cuStreamSynchronize((CUstream)0xb10c);
		return 2;
	}
	int ok = 0;
	for (int i = 0; i < 20; i++) {
		CUdeviceptr d = 0;
		ok += cuMemAlloc_v2(&d, 4096) == CUDA_SUCCESS;
		ok += cuMemFree_v2(d) == CUDA_SUCCESS;
	}
	printf("timed out of the wait; %d calls after it\n", ok);
	return 0;
}
