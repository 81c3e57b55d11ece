/* SPDX-License-Identifier: MIT */
/*
 * Cost of one intercepted call against the driver double: T threads each
 * make N calls of one kind; prints the mean thread-CPU ns per call (immune
 * to the oversubscription of 8 threads on a small machine).
 * Usage: bench_call launch|copy|malloc|launch-cold|mixed-cold|torch-cold|nvtx|nvtx-text T N
 * (run by bench/run.py)
 * malloc: a malloc(1 MiB) + free pair per call.
 * launch-cold: before each launch, run 256 KiB of other code
 * (BENCH_EVICT_CODE_KB) and read 2 MiB of other data (BENCH_EVICT_KB), as a
 * real program does between two launches, so that the call finds its code
 * and data out of the L1 and L2 caches (the stack below the caller stays
 * warm, as a real program's does); only the call itself is timed (rdtsc
 * around it, scaled to ns by the wall clock over the whole loop).
 * BENCH_WARMUP: calls (steps) before the measured ones, 1000.
 * mixed-cold: the same, but the calls cycle through cuLaunchKernel,
 * cuLaunchKernelEx, cuMemsetD32Async and cuMemcpyHtoDAsync, as a PyTorch
 * step alternates between entry points (each its own wrapper); ns per call.
 * torch-cold: the same, through the runtime as PyTorch calls it (each call
 * a runtime wrapper with a driver wrapper nested in it): of every 32 calls,
 * 22 __cudaLaunchKernel, 5 cudaLaunchKernelExC, 4 cudaMemsetAsync and one
 * pageable cudaMemcpyAsync (the MLP step, docs/design.md#the-mlp-loop: ~76 calls, 2 copies).
 * jax-cold: one "call" is a JAX step as XLA makes it on the H200
 * (tests/gpu/loops.py jax): its context made current, the module's NVTX
 * range opened, 20 thunk ranges inside it, a stream's wait on an event, a
 * graph launch and a host function, the module's range closed; the other
 * work runs before each of those calls, and ns per step are printed.
 * nvtx: an NVTX range (nvtxDomainRangePushEx + nvtxDomainRangePop) named
 * by a registered string of 110 characters, as XLA names each thunk (ten
 * to twenty a JAX step); nvtx-text: the same name as text
 * (nvtxRangePushA + nvtxRangePop). Untraced, NVTX has no tool attached and
 * its calls return at once.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <x86intrin.h>

#include <nvtx3/nvToolsExt.h>

#include "../lib/cuda_api.h"
#include "doubles/fakecuda.h"

static long calls;
static int copy_mode, malloc_mode, cold_mode, mixed_mode, torch_mode, jax_mode, nvtx_mode, nvtx_text_mode;
static nvtxDomainHandle_t nvtx_dom;
static nvtxEventAttributes_t nvtx_attr, nvtx_module;
static CUgraphExec graph;
static CUevent event;
#define NVTX_MODULE "XlaModule:#hlo_module=jit_jstep,program_id=12#"
#define NVTX_NAME "Thunk:#name=jit(step)/jvp()/dot_general,hlo_op=gemm_fusion_dot.2,unique_hlo_op_id=4294967311,program_id=3977#"
static unsigned char *evict_data;
static size_t evict_bytes;
static void (*evict_code)(void);
static size_t evict_code_bytes;
/* Through a volatile pointer: the compiler may not drop the pair. */
static void *(*volatile do_malloc)(size_t) = malloc;
static CUfunction fn;
static CUcontext ctx;
static CUdeviceptr dev;
static char host[64];
static double ns_per_call[256];
static long faults[256];

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Other work between two calls: code and data that push the call's own
 * out of the L1 and L2 caches. */
static unsigned evict(void)
{
	unsigned sum = 0;
	if (!evict_bytes)
		return 0; /* BENCH_EVICT_KB=0: counting instructions, not timing */
	evict_code();
	for (size_t i = 0; i < evict_bytes; i += 64)
		sum += evict_data[i];
	/* The stack below the caller stays hot in a real program, which calls
	 * at about the same depth all the time. */
	volatile unsigned char frames[8192];
	for (size_t i = 0; i < sizeof(frames); i += 64)
		frames[i] = 0;
	return sum;
}

static int evict_setup(void)
{
	const char *kb = getenv("BENCH_EVICT_KB"), *code_kb = getenv("BENCH_EVICT_CODE_KB");
	evict_bytes = (size_t)(kb ? atol(kb) : 2048) << 10;
	evict_code_bytes = (size_t)(code_kb && atol(code_kb) > 0 ? atol(code_kb) : 256) << 10;
	evict_data = malloc(evict_bytes + 1);
	unsigned char *code = mmap(NULL, evict_code_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!evict_data || code == MAP_FAILED)
		return -1;
	memset(evict_data, 1, evict_bytes + 1);
	memset(code, 0x90, evict_code_bytes); /* nop ... ret */
	code[evict_code_bytes - 1] = 0xc3;
	if (mprotect(code, evict_code_bytes, PROT_READ | PROT_EXEC) != 0)
		return -1;
	evict_code = (void (*)(void))(void *)code;
	return 0;
}

/* The call of round i: a launch, or with mixed-cold one of four entry
 * points in turn. */
static void one_call(long i)
{
	static const CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
					    .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1 };
	if (torch_mode) {
		static const cudaLaunchConfig_t rcfg = { .gridDim = { 1, 1, 1 }, .blockDim = { 1, 1, 1 } };
		const dim3 one = { 1, 1, 1 };
		long k = i % 32;
		if (k < 22)
			__cudaLaunchKernel((cudaKernel_t)(void *)fn, one, one, NULL, 0, NULL);
		else if (k < 27)
			cudaLaunchKernelExC(&rcfg, (const void *)fn, NULL);
		else if (k < 31)
			cudaMemsetAsync((void *)dev, 0, 4, NULL);
		else
			cudaMemcpyAsync((void *)dev, host, 1, cudaMemcpyHostToDevice, NULL);
		return;
	}
	switch (mixed_mode ? i % 4 : 0) {
	case 0: cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL); break;
	case 1: cuLaunchKernelEx(&cfg, fn, NULL, NULL); break;
	case 2: cuMemsetD32Async(dev, 0, 4, NULL); break;
	default: cuMemcpyHtoDAsync_v2(dev, host, 1, NULL); break;
	}
}

static void host_fn(void *p)
{
	(void)p;
}

/* A JAX step's calls, the other work before each; ticks in them alone,
 * and by call in jax_part (BENCH_PARTS=1 prints them). */
static const char *const jax_names[] = { "cuCtxSetCurrent", "module range push", "20 nested ranges",
					  "cuStreamWaitEvent", "cuGraphLaunch", "cuLaunchHostFunc",
					  "module range pop" };
static uint64_t jax_part[7];

static uint64_t jax_step(volatile unsigned *sink)
{
	uint64_t ticks = 0;
	int part = 0;
#define TIMED(call)                          \
	do {                                 \
		*sink += evict();            \
		_mm_lfence();                \
		uint64_t t0 = __rdtsc();     \
		_mm_lfence();                \
		call;                        \
		_mm_lfence();                \
		uint64_t dt = __rdtsc() - t0;  \
		ticks += dt;                   \
		jax_part[part] += dt;          \
	} while (0)
	TIMED(cuCtxSetCurrent(ctx));
	part++;
	TIMED(nvtxDomainRangePushEx(nvtx_dom, &nvtx_module));
	part++;
	for (int k = 0; k < 20; k++)
		TIMED(nvtxDomainRangePushEx(nvtx_dom, &nvtx_attr); nvtxDomainRangePop(nvtx_dom));
	part++;
	TIMED(cuStreamWaitEvent(NULL, event, 0));
	part++;
	TIMED(cuGraphLaunch(graph, NULL));
	part++;
	TIMED(cuLaunchHostFunc(NULL, host_fn, NULL));
	part++;
	TIMED(nvtxDomainRangePop(nvtx_dom));
#undef TIMED
	return ticks;
}

/* ns spent in the n calls alone, the other work between them left out
 * (rdtsc ticks, scaled by the wall clock over the whole loop). */
static double cold_launches_ns(long n)
{
	volatile unsigned sink = 0;
	uint64_t ticks = 0, k0 = __rdtsc();
	double w0 = wall_ns();
	memset(jax_part, 0, sizeof(jax_part));
	for (long i = 0; i < n && jax_mode; i++)
		ticks += jax_step(&sink);
	double scale = (wall_ns() - w0) / (double)(__rdtsc() - k0);
	for (int p = 0; jax_mode && getenv("BENCH_PARTS") && p < 7; p++)
		fprintf(stderr, "%-20s %8.1f ns\n", jax_names[p], (double)jax_part[p] * scale / (double)n);
	for (long i = 0; i < n && !jax_mode; i++) {
		sink += evict();
		_mm_lfence();
		uint64_t t0 = __rdtsc();
		_mm_lfence();
		one_call(i);
		_mm_lfence();
		ticks += __rdtsc() - t0;
	}
	(void)sink;
	return (double)ticks * (wall_ns() - w0) / (double)(__rdtsc() - k0);
}

static void *work(void *arg)
{
	long id = (long)arg;
	cuCtxSetCurrent(ctx); /* as in a real program: a context is current */
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	double t0 = cpu_ns(), ns = 0;
	if (cold_mode)
		ns = cold_launches_ns(calls); /* the calls' own time only */
	else if (malloc_mode)
		for (long i = 0; i < calls; i++)
			free(do_malloc(1u << 20));
	else if (copy_mode)
		for (long i = 0; i < calls; i++)
			cuMemcpyHtoDAsync_v2(dev, host, 1, NULL);
	else if (nvtx_mode)
		for (long i = 0; i < calls; i++) {
			nvtxDomainRangePushEx(nvtx_dom, &nvtx_attr);
			nvtxDomainRangePop(nvtx_dom);
		}
	else if (nvtx_text_mode)
		for (long i = 0; i < calls; i++) {
			nvtxRangePushA(NVTX_NAME);
			nvtxRangePop();
		}
	else
		for (long i = 0; i < calls; i++)
			cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	ns_per_call[id] = (cold_mode ? ns : cpu_ns() - t0) / (double)calls;
	getrusage(RUSAGE_THREAD, &r1);
	faults[id] = (r1.ru_minflt - r0.ru_minflt) + (r1.ru_majflt - r0.ru_majflt);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	copy_mode = !strcmp(argv[1], "copy");
	malloc_mode = !strcmp(argv[1], "malloc");
	mixed_mode = !strcmp(argv[1], "mixed-cold");
	torch_mode = !strcmp(argv[1], "torch-cold");
	jax_mode = !strcmp(argv[1], "jax-cold");
	nvtx_mode = !strcmp(argv[1], "nvtx");
	nvtx_text_mode = !strcmp(argv[1], "nvtx-text");
	cold_mode = mixed_mode || torch_mode || jax_mode || !strcmp(argv[1], "launch-cold");
	if (cold_mode && evict_setup() != 0)
		return 2;
	int t = atoi(argv[2]);
	calls = atol(argv[3]);
	if (t < 1 || t > 256 || calls < 1)
		return 2;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	fn = fakecuda_function("bench_kernel", NULL);
	cuMemAlloc_v2(&dev, 64);
	nvtx_dom = nvtxDomainCreateA("XLA");
	nvtx_attr.version = NVTX_VERSION;
	nvtx_attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	nvtx_attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	nvtx_attr.message.registered = nvtxDomainRegisterStringA(nvtx_dom, NVTX_NAME);
	nvtx_module = nvtx_attr;
	nvtx_module.message.registered = nvtxDomainRegisterStringA(nvtx_dom, NVTX_MODULE);
	if (jax_mode) { /* a graph of one kernel, as XLA's command buffer */
		CUgraph g;
		CUgraphNode node;
		CUDA_KERNEL_NODE_PARAMS kp = { .func = fn, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
					       .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1 };
		if (cuGraphCreate(&g, 0) || cuGraphAddKernelNode_v2(&node, g, NULL, 0, &kp) ||
		    cuGraphInstantiateWithFlags(&graph, g, 0) || cuEventCreate(&event, 0))
			return 2;
	}
	/* Warm up: first-call work (file creation, name lookup) is not the
	 * per-call cost. */
	const char *warm = getenv("BENCH_WARMUP");
	for (int i = 0, nwarm = warm ? atoi(warm) : 1000; i < nwarm; i++) {
		if (jax_mode) {
			volatile unsigned sink = 0;
			jax_step(&sink);
			continue;
		}
		one_call(i);
		cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		cuMemcpyHtoDAsync_v2(dev, host, 1, NULL);
		if (malloc_mode)
			free(do_malloc(1u << 20));
		nvtxDomainRangePushEx(nvtx_dom, &nvtx_attr);
		nvtxDomainRangePop(nvtx_dom);
		nvtxRangePushA(NVTX_NAME);
		nvtxRangePop();
	}
	pthread_t th[256];
	for (long i = 0; i < t; i++)
		pthread_create(&th[i], NULL, work, (void *)i);
	double sum = 0;
	long nf = 0;
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		sum += ns_per_call[i];
		nf += faults[i];
	}
	printf("%.2f\n", sum / t);
	if (getenv("BENCH_FAULTS"))
		fprintf(stderr, "page faults in the calling threads: %ld\n", nf);
	return 0;
}
