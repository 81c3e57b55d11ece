/* SPDX-License-Identifier: MIT */
/*
 * A program linked with no CUDA library that looks for CUDA as a plugin
 * loader does: dlsym of CUDA names on RTLD_DEFAULT, on its own handle and
 * on RTLD_NEXT, and dlvsym. It calls cudaMalloc if it finds it, else
 * takes its CPU path. Untraced, every name is absent.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>

static const char *const names[] = {
	"cudaMalloc", "cudaGetDriverEntryPointByVersion", "cuCtxSynchronize_v2",
	"cuMemcpyBatchAsync_v2", "cuLaunchKernel", "cuGetProcAddress",
};

static const char *seen(void *p)
{
	return p ? "found" : "absent";
}

int main(void)
{
	void *self = dlopen(NULL, RTLD_NOW);
	void *malloc_fn = NULL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *p = dlsym(RTLD_DEFAULT, names[i]);
		printf("%s: default %s, own handle %s, next %s, versioned %s\n", names[i], seen(p),
		       seen(dlsym(self, names[i])), seen(dlsym(RTLD_NEXT, names[i])),
		       seen(dlvsym(RTLD_DEFAULT, names[i], "libcudart.so.13")));
		if (i == 0)
			malloc_fn = p;
	}
	if (malloc_fn) {
		void *d = NULL;
		printf("GPU path: cudaMalloc rc=%d\n", ((int (*)(void **, size_t))malloc_fn)(&d, 64));
	} else {
		printf("CPU path\n");
	}
	return 0;
}
