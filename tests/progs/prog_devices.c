/* SPDX-License-Identifier: MIT */
/*
 * Which device each call is recorded on, against the driver double (two
 * devices; contexts (device + 1) << 4, the current one per thread): device
 * 0 current, then device 1 pushed, popped, set; a second thread with no
 * current context, then its own; device 0 set again (twice) while a third
 * thread switches to device 1; a memset of pinned host memory (done by the
 * current device); a context created on device 1 (pushed), then destroyed
 * (popped). Prints every return code and errno.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"
#include "prog_common.h"

static CUcontext c0, c1;
static CUdeviceptr a0, a1;

/* A thread starts with no current context: its first call has no device,
 * then device 1 once it sets one. */
static void *other_thread(void *arg)
{
	char *pg = arg;
	CALL(cuMemcpyDtoH_v2(pg, a0, 64));
	CALL(cuCtxSetCurrent(c1));
	CALL(cuMemsetD8_v2(a1, 2, 32));
	return NULL;
}

/* Its switch is its own: the main thread's device stays 0. */
static void *switching_thread(void *arg)
{
	(void)arg;
	CALL(cuCtxSetCurrent(c1));
	CALL(cuLaunchKernel(fakecuda_function("other_dev1_kernel", NULL), 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	return NULL;
}

int main(void)
{
	CUdeviceptr a2 = 0;
	CUcontext prev = NULL;
	char *pg = calloc(1, 1 << 16);
	cuInit(0);
	cuDevicePrimaryCtxRetain(&c0, 0);
	cuDevicePrimaryCtxRetain(&c1, 1);
	CALL(cuCtxSetCurrent(c0));
	CALL(cuMemAlloc_v2(&a0, 4096));                        /* device 0 */
	CALL(cuCtxPushCurrent_v2(c1));
	CALL(cuMemAlloc_v2(&a1, 8192));                        /* device 1 */
	CALL(cuMemsetD8_v2(a1, 0, 8192));                      /* device 1 */
	CALL(cuLaunchKernel(fakecuda_function("dev1_kernel", NULL), 2, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CALL(cuCtxPopCurrent_v2(&prev));
	CALL(cuMemAlloc_v2(&a2, 2048));                        /* device 0 again */
	CALL(cuLaunchKernel(fakecuda_function("dev0_kernel", NULL), 3, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CALL(cuCtxSetCurrent(c1));
	CALL(cuMemcpyDtoH_v2(pg, a1, 1024));                   /* device 1 */
	pthread_t th;
	pthread_create(&th, NULL, other_thread, pg);
	pthread_join(th, NULL);
	CALL(cuCtxSetCurrent(c0));
	CALL(cuCtxSetCurrent(c0));
	CALL(cuLaunchKernel(fakecuda_function("dev0_kernel", NULL), 4, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	pthread_create(&th, NULL, switching_thread, NULL);
	pthread_join(th, NULL);
	CALL(cuLaunchKernel(fakecuda_function("dev0_kernel", NULL), 5, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	void *hp = NULL;
	CALL(cuMemHostAlloc(&hp, 256, 0));
	CALL(cuMemsetD8_v2((CUdeviceptr)hp, 1, 256));          /* device 0 */
	CALL(cuMemFreeHost(hp));
	CUcontext created = NULL;
	CALL(cuCtxCreate_v2(&created, 0, 1));                  /* pushed: device 1 */
	CALL(cuLaunchKernel(fakecuda_function("created_kernel", NULL), 6, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CALL(cuCtxDestroy_v2(created));                        /* popped: device 0 */
	CALL(cuLaunchKernel(fakecuda_function("dev0_kernel", NULL), 7, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CALL(cuMemFree_v2(a2));
	CALL(cuMemFree_v2(a1));
	CALL(cuMemFree_v2(a0));
	printf("popped %p\n", (void *)prev);
	free(pg);
	return 0;
}
