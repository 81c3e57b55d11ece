/* SPDX-License-Identifier: MIT */
/*
 * One rank of a made-up job whose all-reduce runs on the host as gloo's
 * does for CUDA tensors, against the driver double. Each step (a phase
 * "step" holding "forward" and "backward"): forward launches a kernel (and
 * on the slow rank sleeps SLOW_MS first); backward copies 1 MiB from the
 * device to a pinned buffer on a stream of its own and hands it to a
 * worker thread, which syncs that stream, waits at a barrier for every
 * rank (files in DIR: the reduction), and copies the buffer back on the
 * same stream; the main thread waits for the worker (a condition
 * variable, which gpuspy does not see) and syncs the stream.
 * Usage (RANK and WORLD_SIZE set): prog_ranks DIR STEPS SLOW_RANK SLOW_MS
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

#include "../../include/gpuspy.h"

enum { BYTES = 1 << 20 };
static const char *dir;
static int rank, world;
static CUstream s;
static CUdeviceptr dev;
static void *pinned;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int asked, done; /* steps handed to the worker, and reduced */

/* Every rank's file for step k exists: all came to the all-reduce. */
static void barrier(int k)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%d.%d", dir, k, rank);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	for (int r = 0; r < world;) {
		snprintf(p, sizeof(p), "%s/%d.%d", dir, k, r);
		if (access(p, F_OK) == 0)
			r++;
		else
			nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
}

static void *worker(void *arg)
{
	(void)arg;
	for (int k = 0;; k++) {
		pthread_mutex_lock(&mu);
		while (asked == k)
			pthread_cond_wait(&cv, &mu);
		int stop = asked < 0;
		pthread_mutex_unlock(&mu);
		if (stop)
			return NULL;
		cuStreamSynchronize(s);
		barrier(k);
		cuMemcpyHtoDAsync_v2(dev, pinned, BYTES, s);
		pthread_mutex_lock(&mu);
		done = k + 1;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
}

int main(int argc, char **argv)
{
	if (argc != 5 || !getenv("RANK") || !getenv("WORLD_SIZE"))
		return 2;
	dir = argv[1];
	int steps = atoi(argv[2]), slow = atoi(argv[3]), slow_ms = atoi(argv[4]);
	rank = atoi(getenv("RANK"));
	world = atoi(getenv("WORLD_SIZE"));
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	CUfunction f = fakecuda_function("sgemm_step", NULL);
	cuStreamCreate(&s, 0);
	cuMemAlloc_v2(&dev, BYTES);
	cuMemHostAlloc(&pinned, BYTES, 0);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	for (int k = 0; k < steps; k++) {
		gpuspy_phase_push("step");
		gpuspy_phase_push("forward");
		if (rank == slow)
			nanosleep(&(struct timespec){ slow_ms / 1000, (slow_ms % 1000) * 1000000L }, NULL);
		cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		gpuspy_phase_pop();
		gpuspy_phase_push("backward");
		cuMemcpyDtoHAsync_v2(pinned, dev, BYTES, s);
		pthread_mutex_lock(&mu);
		asked = k + 1;
		pthread_cond_broadcast(&cv);
		while (done <= k)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		cuStreamSynchronize(s);
		gpuspy_phase_pop();
		gpuspy_phase_pop();
	}
	pthread_mutex_lock(&mu);
	asked = -1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	printf("rank %d steps %d\n", rank, steps);
	return 0;
}
