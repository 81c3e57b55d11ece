/* SPDX-License-Identifier: MIT */
/*
 * A timeout that siglongjmps out of a blocking cuStreamSynchronize (the
 * driver double's stream 0xb10c never finishes), then calls that must all
 * be recorded, each once. First from deeper frames: a recursion five
 * frames deep, each frame with a 16 KiB buffer it fills, an allocation and
 * a free on every level, then at the bottom a launch and a runtime
 * cudaMalloc and cudaFree (whose nested driver calls stay unrecorded); an
 * allocation, a launch and a free from a helper one small frame deeper
 * than the wait's caller. Then 20 allocations and 20 frees from the frame
 * the wait was called from. Calls from deeper frames were taken for calls
 * nested in the abandoned wait and lost, all of them.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "../../lib/cuda_api.h"
#include "doubles/fakecuda.h"

static sigjmp_buf env;
static CUfunction kernel;

static void on_alarm(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

static __attribute__((noinline)) int helper(void)
{
	CUdeviceptr d = 0;
	int ok = cuMemAlloc_v2(&d, 256) == CUDA_SUCCESS;
	ok += cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS;
	ok += cuMemFree_v2(d) == CUDA_SUCCESS;
	return ok;
}

static __attribute__((noinline)) int deep(int level)
{
	volatile char buf[16384];
	memset((char *)buf, level, sizeof(buf));
	CUdeviceptr d = 0;
	int ok = cuMemAlloc_v2(&d, 1024u * (unsigned)level) == CUDA_SUCCESS;
	ok += cuMemFree_v2(d) == CUDA_SUCCESS;
	if (level < 5) {
		ok += deep(level + 1);
	} else {
		void *p = NULL;
		ok += cuLaunchKernel(kernel, 2, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS;
		ok += cudaMalloc(&p, 512) == cudaSuccess;
		ok += cudaFree(p) == cudaSuccess;
	}
	return buf[sizeof(buf) - 1] == level ? ok : -100; /* the buffer stays in use */
}

int main(void)
{
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	kernel = fakecuda_function("after_jump", NULL);
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
	int deeper = deep(1);
	deeper += helper();
	int ok = 0;
	for (int i = 0; i < 20; i++) {
		CUdeviceptr d = 0;
		ok += cuMemAlloc_v2(&d, 4096) == CUDA_SUCCESS;
		ok += cuMemFree_v2(d) == CUDA_SUCCESS;
	}
	printf("timed out of the wait; %d calls after it, %d from deeper frames\n", ok, deeper);
	return 0;
}
