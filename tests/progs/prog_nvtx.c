/* SPDX-License-Identifier: MIT */
/*
 * NVTX v3 ranges, header-only from the CUDA toolkit (no libnvToolsExt), as
 * phases: push/pop (nested), a mark, a domain range, a registered string,
 * and a start/end range that ends on another thread. One launch inside each.
 * "strings": 70000 distinct registered strings after "dom_range" (past
 * gpuspy's 65536), "dom_range" registered again, and a range named by
 * each of x0, x65534 and x65535.
 * "xla": a module range as XLA opens it ("XlaModule:..."), three thunk
 * ranges inside it ("Thunk:..."), one launch in each, then a thunk inside
 * a thunk; after it the user's "step", holding a cuBLAS range with a
 * launch.
 * "deep N R": R times, ranges d0..d(N-1) nested in one another (d0
 * outermost; d1 and every third after it in a domain of its own, "deepdom"),
 * a launch inside the innermost, then each popped; then a range "after".
 * "repeat N": N times a range named by a registered string and one named
 * by its text, both of XLA's length (over 100 characters), one launch in
 * each; then a range "after".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

static CUfunction f;

static void launch(void)
{
	cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
}

static void *ender(void *arg)
{
	nvtxRangeEnd(*(nvtxRangeId_t *)arg);
	return NULL;
}

/* An event named by the registered string h. */
static nvtxEventAttributes_t registered(nvtxStringHandle_t h)
{
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = h;
	return a;
}

static void strings(void)
{
	nvtxDomainHandle_t d = nvtxDomainCreateA("strings");
	nvtxStringHandle_t first = nvtxDomainRegisterStringA(d, "dom_range"), h[3] = { 0 };
	char b[32];
	for (int i = 0; i < 70000; i++) {
		snprintf(b, sizeof(b), "x%d", i);
		nvtxStringHandle_t x = nvtxDomainRegisterStringA(d, b);
		if (i == 0 || i == 65534 || i == 65535)
			h[i == 0 ? 0 : i == 65534 ? 1 : 2] = x;
	}
	nvtxEventAttributes_t a = registered(NULL);
	for (int i = 0; i < 3; i++) {
		a.message.registered = h[i];
		nvtxDomainRangePushEx(d, &a);
		launch();
		nvtxDomainRangePop(d);
	}
	printf("same %d\n", nvtxDomainRegisterStringA(d, "dom_range") == first);
}

#define LONG_NAME "Thunk:#name=jit(step)/jvp()/dot_general,hlo_op=gemm_fusion_dot.2,unique_hlo_op_id=4294967311,program_id=3977#"

static void repeat(long n)
{
	nvtxDomainHandle_t d = nvtxDomainCreateA("XLA");
	nvtxEventAttributes_t a = registered(nvtxDomainRegisterStringA(d, LONG_NAME));
	for (long i = 0; i < n; i++) {
		nvtxDomainRangePushEx(d, &a);
		launch();
		nvtxDomainRangePop(d);
		nvtxRangePushA("text:" LONG_NAME);
		launch();
		nvtxRangePop();
	}
	nvtxRangePushA("after");
	launch();
	nvtxRangePop();
}

static void deep(int n, int rounds)
{
	nvtxDomainHandle_t d = nvtxDomainCreateA("deepdom");
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	char name[32];
	int bad = 0;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "d%d", i);
			a.message.ascii = name;
			int level = i % 3 == 1 ? nvtxDomainRangePushEx(d, &a) : nvtxRangePushA(name);
			bad += level != i;
		}
		launch();
		for (int i = n - 1; i >= 0; i--) {
			int level = i % 3 == 1 ? nvtxDomainRangePop(d) : nvtxRangePop();
			bad += level != i;
		}
	}
	nvtxRangePushA("after");
	launch();
	nvtxRangePop();
	printf("deep %d x %d: %d levels wrong\n", n, rounds, bad);
}

static void xla(void)
{
	nvtxDomainHandle_t d = nvtxDomainCreateA("XLA");
	nvtxEventAttributes_t a = registered(NULL);
	nvtxStringHandle_t module = nvtxDomainRegisterStringA(d, "XlaModule:#hlo_module=jit_step,program_id=7#");
	nvtxStringHandle_t thunk = nvtxDomainRegisterStringA(d, "Thunk:#hlo_op=gemm_fusion_dot#");
	a.message.registered = module;
	nvtxDomainRangePushEx(d, &a);
	for (int i = 0; i < 3; i++) {
		a.message.registered = thunk;
		nvtxDomainRangePushEx(d, &a);
		launch();
		if (i == 2) {
			nvtxDomainRangePushEx(d, &a);
			nvtxDomainRangePop(d);
		}
		nvtxDomainRangePop(d);
	}
	nvtxDomainRangePop(d);
	nvtxRangePushA("step");
	nvtxRangePushA("cublasSgemm");
	launch();
	nvtxRangePop();
	nvtxRangePop();
}

int main(int argc, char **argv)
{
	f = fakecuda_function("nvtx_kernel", NULL);
	if (argc > 1 && !strcmp(argv[1], "xla")) {
		xla();
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "repeat")) {
		repeat(atol(argv[2]));
		return 0;
	}
	if (argc > 3 && !strcmp(argv[1], "deep")) {
		deep(atoi(argv[2]), atoi(argv[3]));
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "strings")) {
		strings();
		return 0;
	}
	int l0 = nvtxRangePushA("outer");
	launch();
	int l1 = nvtxRangePushA("inner");
	launch();
	nvtxRangePop();
	nvtxRangePop();
	nvtxMarkA("checkpoint");

	nvtxDomainHandle_t d = nvtxDomainCreateA("mydomain");
	nvtxEventAttributes_t a = registered(nvtxDomainRegisterStringA(d, "dom_range"));
	nvtxDomainRangePushEx(d, &a);
	launch();
	nvtxDomainRangePop(d);

	nvtxRangeId_t id = nvtxRangeStartA("async_range");
	launch();
	pthread_t t;
	pthread_create(&t, NULL, ender, &id);
	pthread_join(t, NULL);
	launch();
	printf("levels %d %d\n", l0, l1);
	return 0;
}
