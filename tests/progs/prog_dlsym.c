/* SPDX-License-Identifier: MIT */
/*
 * Routes 2 and 3 used directly by a program: driver entry points fetched with
 * dlsym on a libcuda handle, cuGetProcAddress's self-lookup in the 4- and
 * 5-argument ABIs, per-thread and versioned variants, the runtime's
 * cudaGetDriverEntryPointByVersion, and names gpuspy does not know (which
 * must come back untouched).
 * `prog_dlsym newer` (with FAKECUDA_NEWER_ABI=1): cuLaunchHostFunc asked for
 * at 13.1, where the driver double answers in an ABI of four arguments,
 * called so; then the exported cuLaunchHostFunc of three, and the old ABI
 * through the runtime.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

typedef CUresult (*gpa5_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa4_t)(const char *, void **, int, cuuint64_t);

static const char *lib_of(void *p)
{
	Dl_info di;
	if (!p || !dladdr(p, &di) || !di.dli_fname)
		return "(none)";
	const char *s = strrchr(di.dli_fname, '/');
	return s ? s + 1 : di.dli_fname;
}

static void count(void *n)
{
	++*(int *)n;
}

typedef CUresult (*host_func4_t)(CUstream, CUhostFn, void *, unsigned);

static int newer(void *h)
{
	dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD); /* the names in the global scope */
	gpa5_t gpa = (gpa5_t)dlsym(h, "cuGetProcAddress_v2");
	int (*newer_calls)(void) = (int (*)(void))dlsym(h, "fakecuda_newer_abi_calls");
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
	init(0);
	CUcontext ctx;
	((CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain"))(&ctx, 0);
	((CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent"))(ctx);
	int n = 0;
	void *p = NULL;
	CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	CUresult rc = gpa("cuLaunchHostFunc", &p, 13010, 0, &qs);
	printf("13.1 lookup rc=%d status=%d from %s\n", rc, (int)qs, lib_of(p));
	rc = ((host_func4_t)p)(NULL, count, &n, 1);
	printf("13.1 call rc=%d ran=%d newer=%d\n", rc, n, newer_calls());
	__typeof__(&cuLaunchHostFunc) old = (__typeof__(&cuLaunchHostFunc))dlsym(RTLD_DEFAULT, "cuLaunchHostFunc");
	rc = old(NULL, count, &n);
	printf("exported call rc=%d ran=%d newer=%d\n", rc, n, newer_calls());
	old = (__typeof__(&cuLaunchHostFunc))dlsym(h, "cuLaunchHostFunc");
	rc = old(NULL, count, &n);
	printf("libcuda's by name rc=%d ran=%d newer=%d\n", rc, n, newer_calls());
	gpa("cuLaunchHostFunc", &p, 12000, 0, &qs);
	rc = ((__typeof__(&cuLaunchHostFunc))p)(NULL, count, &n);
	printf("12.0 call rc=%d ran=%d newer=%d\n", rc, n, newer_calls());
	enum cudaDriverEntryPointQueryResult es = cudaDriverEntryPointSymbolNotFound;
	cudaError_t e = cudaGetDriverEntryPointByVersion("cuLaunchHostFunc", &p, 13010, 0, &es);
	printf("runtime 13.1 lookup rc=%d status=%d\n", (int)e, (int)es);
	rc = ((host_func4_t)p)(NULL, count, &n, 0);
	printf("runtime 13.1 call rc=%d ran=%d newer=%d\n", rc, n, newer_calls());
	return 0;
}

int main(int argc, char **argv)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) {
		printf("no libcuda\n");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "newer"))
		return newer(h);
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
	printf("cuInit comes from %s\n", lib_of((void *)init));
	init(0);
	CUcontext ctx;
	((CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain"))(&ctx, 0);
	((CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent"))(ctx);

	CUdeviceptr a = 0;
	CUresult (*al)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
	printf("alloc rc=%d\n", al(&a, 4096));
	CUfunction (*mk)(const char *, fake_kernel_fn) =
		(CUfunction(*)(const char *, fake_kernel_fn))dlsym(h, "fakecuda_function");
	__typeof__(&cuLaunchKernel) lk = (__typeof__(&cuLaunchKernel))dlsym(h, "cuLaunchKernel");
	printf("launch rc=%d\n", lk(mk("dl_kernel", NULL), 2, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	printf("sync rc=%d\n", ((CUresult(*)(CUstream))dlsym(h, "cuStreamSynchronize"))(NULL));

	gpa5_t gpa = (gpa5_t)dlsym(h, "cuGetProcAddress_v2");
	void *p = NULL;
	gpa("cuGetProcAddress", &p, 11030, 0, NULL);
	gpa4_t self4 = (gpa4_t)p;
	gpa("cuGetProcAddress", &p, 12000, 0, NULL);
	gpa5_t self5 = (gpa5_t)p;

	self4("cuMemsetD32", &p, 12000, 0);
	printf("memset rc=%d\n", ((__typeof__(&cuMemsetD32_v2))p)(a, 7, 10));
	char buf[64];
	self5("cuMemcpyDtoH", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL);
	printf("dtoh rc=%d\n", ((__typeof__(&cuMemcpyDtoH_v2))p)(buf, a, 64));
	CUdeviceptr dsts[1] = { a }, srcs[1] = { (CUdeviceptr)buf };
	size_t sizes[1] = { 48 }, fi = 0;
	self5("cuMemcpyBatchAsync", &p, 12080, 0, NULL);
	printf("batch12.8 rc=%d\n", ((__typeof__(&cuMemcpyBatchAsync))p)(dsts, srcs, sizes, 1, NULL, NULL, 0, &fi, NULL));
	self5("cuMemcpyBatchAsync", &p, 13000, 0, NULL);
	printf("batch13.0 rc=%d\n", ((__typeof__(&cuMemcpyBatchAsync_v2))p)(dsts, srcs, sizes, 1, NULL, NULL, 0, NULL));

	CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SUCCESS;
	p = (void *)1;
	CUresult rc = self5("cuDoesNotExist", &p, 12000, 0, &qs);
	printf("unknown rc=%d ptr=%s status=%d\n", rc, p ? "set" : "NULL", (int)qs);
	self5("cuModuleGetFunction", &p, 12000, 0, NULL);
	printf("cuModuleGetFunction comes from %s\n", lib_of(p));

	enum cudaDriverEntryPointQueryResult es;
	cudaGetDriverEntryPointByVersion("cuMemFree", &p, 12000, 0, &es);
	printf("free rc=%d status=%d\n", ((__typeof__(&cuMemFree_v2))p)(a), (int)es);
	for (int i = 0; i < 3; i++)
		cudaGetDriverEntryPoint("cuModuleGetFunction", &p, 0, &es);
	printf("cuModuleGetFunction by the runtime comes from %s\n", lib_of(p));
	return 0;
}
