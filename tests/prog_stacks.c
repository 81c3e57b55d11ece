/* SPDX-License-Identifier: MIT */
/*
 * Known call chains for the call-stack tests (issue 6), on the runtime
 * double (shared, or static with -DSTATIC_RT):
 *   main -> load_batch -> make_host_buffer -> malloc(64 MiB)      host alloc
 *   main -> load_batch -> upload -> cudaMemcpy (pageable h2d)     copy
 *   main -> model_init -> alloc_weights -> cudaMalloc(64 MiB)     device alloc
 *   main -> model_init -> alloc_staging -> cudaMallocHost(1 MiB)  pinned alloc
 *   main -> train_step -> wait_for_gpu -> cudaDeviceSynchronize   sync
 *   main -> train_step -> clear_grads -> cudaMemset               memset
 * train_step runs `steps` times (argv[1], default 3), each in a phase
 * "step". Prints the addresses
 * it used so that the test can match them.
 * With argv[2] = "threads", 8 threads each run the whole chain argv[1] times
 * while host allocations are recorded (recursion and thread safety).
 * With argv[2] = "pause", 3 + 5 + 2 allocate/free pairs, the middle ones
 * inside gpuspy_pause()/gpuspy_resume().
 * With argv[2] = "symbols", prints which objects define backtrace and
 * _Unwind_Backtrace for the process (libunwind must not take them over).
 * With argv[2] = "early", before any CUDA call: a 3 MiB block allocated
 * and freed, the 64 MiB host buffer allocated (make_host_buffer), and a
 * thread that allocates 2 MiB and ends without a CUDA call; then
 * model_init, the upload from that buffer and its free.
 * With argv[2] = "earlyfork", the 64 MiB buffer before any CUDA call, then
 * a fork: child and parent each call CUDA and upload from it.
 * With argv[2] = "nocuda", the host allocations alone: no CUDA call.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "gpuspy.h"

#define NOINLINE __attribute__((noinline))
/* Keeps a call from becoming a tail call, so that every frame stays. */
#define KEEP() __asm__ volatile("" ::: "memory")

static int sink, rounds = 200;
/* Through a volatile pointer: the compiler may not drop a malloc/free pair. */
static void *(*volatile do_malloc)(size_t) = malloc;

NOINLINE static char *make_host_buffer(size_t n)
{
	char *p = malloc(n);
	KEEP();
	return p;
}

NOINLINE static int upload(void *dst, const char *src, size_t n)
{
	int rc = cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice);
	KEEP();
	return rc;
}

NOINLINE static int load_batch(void *dev, size_t n)
{
	char *host = make_host_buffer(n);
	if (!host)
		return 1;
	memset(host, 1, 4096);
	int rc = upload(dev, host, n);
	free(host);
	KEEP();
	return rc;
}

NOINLINE static void *alloc_weights(size_t n)
{
	void *d = NULL;
	cudaMalloc(&d, n);
	KEEP();
	return d;
}

NOINLINE static void *alloc_staging(size_t n)
{
	void *p = NULL;
	cudaMallocHost(&p, n);
	KEEP();
	return p;
}

NOINLINE static void *model_init(void **staging)
{
	void *w = alloc_weights(64u << 20);
	*staging = alloc_staging(1u << 20);
	KEEP();
	return w;
}

NOINLINE static int wait_for_gpu(void)
{
	int rc = cudaDeviceSynchronize();
	KEEP();
	return rc;
}

NOINLINE static int clear_grads(void *d)
{
	int rc = cudaMemset(d, 0, 4096);
	KEEP();
	return rc;
}

NOINLINE static int train_step(void *d)
{
	int rc = clear_grads(d) | wait_for_gpu();
	KEEP();
	return rc;
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < rounds; i++) {
		void *staging = NULL;
		void *w = model_init(&staging);
		__atomic_fetch_add(&sink, load_batch(w, 2u << 20) | train_step(w), __ATOMIC_RELAXED);
		cudaFree(w);
		cudaFreeHost(staging);
		free(do_malloc(3u << 20)); /* a recorded host alloc and free */
		free(do_malloc(100));      /* not recorded: under the minimum */
	}
	return NULL;
}

/* A thread's allocation kept from before the trace file, never written:
 * the thread ends without a CUDA call. */
void *volatile early_leak;
static void *leak_early(void *arg)
{
	(void)arg;
	early_leak = do_malloc(2u << 20);
	return NULL;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 3;
	if (argc > 2 && !strcmp(argv[2], "pause")) {
		/* 3 allocations recorded, 5 while paused, 2 after resuming. */
		const int n[3] = { 3, 5, 2 };
		for (int part = 0; part < 3; part++) {
			if (part == 1)
				GPUSPY_PAUSE();
			if (part == 2)
				GPUSPY_RESUME();
			for (int i = 0; i < n[part]; i++)
				cudaFree(alloc_weights(1u << 20));
		}
		printf("paused run done\n");
		return 0;
	}
	if (argc > 2 && !strcmp(argv[2], "symbols")) {
		const char *names[] = { "backtrace", "_Unwind_Backtrace" };
		for (int i = 0; i < 2; i++) {
			Dl_info di = { 0 };
			void *p = dlsym(RTLD_DEFAULT, names[i]);
			printf("%s %s\n", names[i], p && dladdr(p, &di) && di.dli_fname ? di.dli_fname : "(none)");
		}
		return 0;
	}
	if (argc > 2 && !strcmp(argv[2], "early")) {
		free(do_malloc(3u << 20));
		char *host = make_host_buffer(64u << 20);
		pthread_t th;
		pthread_create(&th, NULL, leak_early, NULL);
		pthread_join(th, NULL);
		void *staging = NULL;
		void *w = model_init(&staging);
		memset(host, 1, 4096);
		int rc = upload(w, host, 64u << 20);
		printf("host %p rc %d\n", (void *)host, rc);
		free(host);
		return rc;
	}
	if (argc > 2 && !strcmp(argv[2], "earlyfork")) {
		/* The 64 MiB buffer before any CUDA call, then a fork: the child
		 * copies from its inherited buffer, then the parent does. */
		char *host = make_host_buffer(64u << 20);
		memset(host, 1, 4096);
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		void *staging = NULL;
		void *w = model_init(&staging);
		int rc = upload(w, host, 64u << 20);
		if (pid == 0)
			_exit(rc);
		int st = 1;
		waitpid(pid, &st, 0);
		free(host);
		printf("parent %d child %d\n", rc, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return rc;
	}
	if (argc > 2 && !strcmp(argv[2], "nocuda")) {
		free(do_malloc(3u << 20));
		char *kept = make_host_buffer(64u << 20);
		printf("no cuda %p\n", (void *)kept);
		return 0; /* kept lives to the exit */
	}
	if (argc > 2 && !strcmp(argv[2], "threads")) {
		rounds = steps;
		pthread_t th[8];
		for (int i = 0; i < 8; i++)
			pthread_create(&th[i], NULL, worker, NULL);
		for (int i = 0; i < 8; i++)
			pthread_join(th[i], NULL);
		printf("threads done %d\n", sink);
		return 0;
	}
	void *staging = NULL;
	void *w = model_init(&staging);
	int rc = load_batch(w, 64u << 20);
	for (int i = 0; i < steps; i++) {
		GPUSPY_PHASE_PUSH("step");
		rc |= train_step(w);
		GPUSPY_PHASE_POP();
	}
	cudaFree(w);
	cudaFreeHost(staging);
	printf("weights %p staging %p rc %d\n", w, staging, rc);
	return rc;
}
