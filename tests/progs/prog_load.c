/* SPDX-License-Identifier: MIT */
/*
 * Load: N threads each launch M kernels while another thread keeps
 * dlopen/dlclose-ing the runtime double and looking CUDA symbols up in it
 * (dlsym goes through gpuspy). Prints what was issued; the runner checks
 * recorded + dropped == issued. Usage: prog_load N M
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

static long per_thread;
static CUfunction fn;
static int done;
static long lookups;

static void *work(void *arg)
{
	(void)arg;
	for (long i = 0; i < per_thread; i++)
		cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	return NULL;
}

static void *loader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
		if (h) {
			if (dlsym(h, "cudaLaunchKernel") && dlsym(h, "cudaMalloc"))
				__atomic_fetch_add(&lookups, 1, __ATOMIC_RELAXED);
			dlclose(h);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	per_thread = argc > 2 ? atol(argv[2]) : 1000000;
	if (n < 1 || n > 256)
		return 2;
	fn = fakecuda_function("load_kernel", NULL);
	pthread_t t[256], l;
	pthread_create(&l, NULL, loader, NULL);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	pthread_join(l, NULL);
	printf("issued %ld lookups %s\n", n * per_thread, lookups > 0 ? "yes" : "no");
	return 0;
}
