/* SPDX-License-Identifier: MIT */
/*
 * Known call chains for the call-stack tests, on the runtime
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
 * With argv[2] = "pausefirst", gpuspy_pause() and gpuspy_resume() before
 * anything else, then one allocate/free pair.
 * With argv[2] = "symbols", prints which objects define backtrace and
 * _Unwind_Backtrace for the process (libunwind must not take them over).
 * With argv[2] = "early", before any CUDA call: a 3 MiB block allocated
 * and freed, the 64 MiB host buffer allocated (make_host_buffer), and a
 * thread that allocates 2 MiB and ends without a CUDA call; then
 * model_init, the upload from that buffer and its free.
 * With argv[2] = "earlyfork", the 64 MiB buffer before any CUDA call, then
 * a fork: child and parent each call CUDA and upload from it.
 * With argv[2] = "nocuda", the host allocations alone: no CUDA call.
 * With argv[2] = "allocators", every host allocator once or more, with
 * GPUSPY_HOST_ALLOC_MIN=1M: see allocators() below.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* Through volatile pointers too, so that each call happens as written. */
static void *(*volatile do_calloc)(size_t, size_t) = calloc;
static void *(*volatile do_realloc)(void *, size_t) = realloc;
static int (*volatile do_memalign)(void **, size_t, size_t) = posix_memalign;
static void *(*volatile do_aligned)(size_t, size_t) = aligned_alloc;
static void (*volatile do_free)(void *) = free;

#define MIB (1u << 20)

/* Every host allocator, in this order (GPUSPY_HOST_ALLOC_MIN=1M):
 * before any CUDA call a 3 MiB posix_memalign kept (written when the file
 * opens), a 2 MiB aligned_alloc freed (never written) and a 2 MiB malloc
 * realloc'ed to 4 MiB (the 4 MiB block kept); cudaMalloc; a 2
 * MiB calloc, realloc'ed to 4 MiB, then to 256 KiB (under the minimum),
 * then freed; a posix_memalign with a bad alignment (EINVAL, errno left
 * as it was); a 5 MiB aligned_alloc and its free; a 6 MiB mmap unmapped
 * 2 MiB first, then the 4 MiB rest; 512 KiB malloc'ed and freed (under the
 * minimum); a calloc whose size overflows and a malloc too big to succeed
 * (both NULL, ENOMEM); the early posix_memalign and realloc blocks freed. Prints what
 * each returned, addresses on lines of their own. */
static int allocators(void)
{
	void *pm = NULL;
	int rc = do_memalign(&pm, 4096, 3 * MIB);
	do_free(do_aligned(4096, 2 * MIB));
	char *early = do_realloc(do_malloc(2 * MIB), 4 * MIB);
	void *w = NULL;
	rc |= cudaMalloc(&w, MIB);
	char *c = do_calloc(2, MIB);
	printf("calloc zeroed %d\n", c && c[0] == 0 && c[2 * MIB - 1] == 0);
	printf("addr calloc %p\n", (void *)c);
	c = do_realloc(c, 4 * MIB);
	printf("addr realloc %p\n", (void *)c);
	c = do_realloc(c, MIB / 4);
	printf("shrunk %d\n", c != NULL);
	do_free(c);
	void *q = &q;
	errno = EDOM;
	int bad = do_memalign(&q, 3, 3 * MIB);
	printf("bad alignment rc %d errno %d untouched %d\n", bad, errno, q == (void *)&q);
	char *a = do_aligned(64, 5 * MIB);
	printf("aligned %d\n", a && (uintptr_t)a % 64 == 0);
	printf("addr aligned_alloc %p\n", (void *)a);
	do_free(a);
	char *m = mmap(NULL, 6 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("addr mmap %p\n", (void *)m);
	printf("munmap %d %d\n", munmap(m, 2 * MIB), munmap(m + 2 * MIB, 4 * MIB));
	do_free(do_malloc(MIB / 2));
	errno = 0;
	void *over = do_calloc(SIZE_MAX, 2);
	printf("calloc overflow %d errno %d\n", over == NULL, errno);
	errno = 0;
	void *huge = do_malloc(SIZE_MAX / 2);
	printf("huge malloc %d errno %d\n", huge == NULL, errno);
	printf("addr posix_memalign %p\n", pm);
	printf("early aligned %d\n", rc == 0 && (uintptr_t)pm % 4096 == 0);
	printf("addr early_realloc %p\n", (void *)early);
	do_free(pm);
	do_free(early);
	cudaFree(w);
	return 0;
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

/* Long (about 90 lines): one branch per mode of argv[2], each calling its
 * chains from main itself: the tests' expected stacks end at main, and a
 * function per mode would be a frame of its own in every one. */
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
	if (argc > 2 && !strcmp(argv[2], "pausefirst")) {
		GPUSPY_PAUSE();
		GPUSPY_RESUME();
		cudaFree(alloc_weights(1u << 20));
		printf("paused first\n");
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
	if (argc > 2 && !strcmp(argv[2], "allocators"))
		return allocators();
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
