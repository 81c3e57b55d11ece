/* SPDX-License-Identifier: MIT */
/*
 * A thread dlopens a library whose constructor waits for the other thread
 * (tests/hostile/loader_lock_lib.c), which meanwhile makes its first CUDA
 * calls: gpuspy's start-up in that thread must not wait on the loader
 * lock the first thread holds. Exits 0 when the constructor did not time
 * out, 1 when it did (a deadlock that its 5 s timeout broke).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"

static int in_ctor[2], done[2];

static void *loader(void *arg)
{
	(void)arg;
	void *h = dlopen("libhostile_loader_lock.so", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(2);
	}
	return (void *)(long)*(int *)dlsym(h, "hostile_ctor_timed_out");
}

int main(void)
{
	if (pipe(in_ctor) || pipe(done))
		return 2;
	char fd[2][16];
	snprintf(fd[0], 16, "%d", in_ctor[1]);
	snprintf(fd[1], 16, "%d", done[0]);
	setenv("HOSTILE_IN_CTOR_FD", fd[0], 1);
	setenv("HOSTILE_DONE_FD", fd[1], 1);
	pthread_t th;
	pthread_create(&th, NULL, loader, NULL);
	char c;
	if (read(in_ctor[0], &c, 1) != 1)
		return 2;
	/* The loader lock is the other thread's now: the first CUDA calls. */
	CUdeviceptr p = 0;
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	int a = cuMemAlloc_v2(&p, 1 << 20);
	int b = cuMemsetD8_v2(p, 0, 1 << 20);
	int f = cuMemFree_v2(p);
	if (write(done[1], &c, 1) != 1)
		return 2;
	void *timed_out;
	pthread_join(th, &timed_out);
	printf("calls %d %d %d, constructor %s\n", a, b, f, timed_out ? "timed out" : "done");
	return timed_out ? 1 : 0;
}
