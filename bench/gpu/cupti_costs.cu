// SPDX-License-Identifier: MIT
/*
 * What each way of joining CUPTI's GPU records to their calls costs a call,
 * on the GPU machine's driver (issue 37). Shares no code with gpuspy.
 *
 * One process, one stream; windows of 10 batches of 200 calls of one kind
 * (timed on the host, the stream synchronized between batches and outside
 * the timing), modes in a new random order every round:
 *   none      no CUPTI activity, no callback
 *   bare      kernel, memcpy and memset activity records (a bare collector)
 *   callbacks bare + a driver-API callback on the called entry point (what
 *             gpuspy does: CUPTI calls back on entry and exit)
 *   records   bare + driver-API activity records of that entry point only
 *             (cuptiActivityEnableDriverApi)
 *   external  bare + external correlation records, an id pushed and popped
 *             around each call
 * Calls: cuLaunchKernel of an empty kernel, cuGraphLaunch of a 4-kernel
 * graph (CC_GRAPH_NODES kernels where set: a JAX step's is 28),
 * cuMemsetD32Async of 1 KiB, cuMemcpyDtoHAsync of 1 KiB to pinned.
 * Prints, per call and mode, the median ns per call over rounds and the
 * median of (mode - bare) per round.
 *   nvcc -O2 -o cupti_costs bench/gpu/cupti_costs.cu -lcuda -lcupti
 *   ./cupti_costs [ROUNDS]
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

__global__ void empty(int *p)
{
	if (p)
		*p = 0;
}

#define CK(x)                                                                 \
	do {                                                                  \
		if ((x) != 0) {                                               \
			fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #x); \
			exit(1);                                              \
		}                                                             \
	} while (0)

static unsigned long records;
static __thread uint32_t last_corr;

static void CUPTIAPI buf_request(uint8_t **b, size_t *size, size_t *max)
{
	*size = 8u << 20;
	*b = (uint8_t *)aligned_alloc(8, *size);
	*max = 0;
}

static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid)
{
	CUpti_Activity *a = NULL;
	while (cuptiActivityGetNextRecord(b, valid, &a) == CUPTI_SUCCESS)
		records++;
	free(b);
}

static void CUPTIAPI on_api(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *data)
{
	const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
	if (cb->callbackSite == CUPTI_API_ENTER)
		last_corr = cb->correlationId;
}

static uint64_t now_ns()
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

enum { NONE, BARE, CALLBACKS, RECORDS, EXTERNAL, MODES };
enum { LAUNCH, GRAPH, MEMSET, COPY, OPS };
static const char *op_name[OPS] = { "cuLaunchKernel", "cuGraphLaunch", "cuMemsetD32Async",
				    "cuMemcpyDtoHAsync (pinned)" };
static const CUpti_CallbackId op_cbid[OPS] = { CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
					       CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
					       CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
					       CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 };
static const CUpti_ActivityKind work_kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
						 CUPTI_ACTIVITY_KIND_MEMSET };
static CUpti_SubscriberHandle sub;

static void set_mode(int m)
{
	for (CUpti_ActivityKind k : work_kinds)
		CK(m == NONE ? cuptiActivityDisable(k) : cuptiActivityEnable(k));
	CK(cuptiEnableDomain(0, sub, CUPTI_CB_DOMAIN_DRIVER_API));
	for (int o = 0; o < OPS; o++) {
		if (m == CALLBACKS)
			CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, op_cbid[o]));
		CK(cuptiActivityEnableDriverApi(op_cbid[o], m == RECORDS));
	}
	CK(m == EXTERNAL ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)
			 : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
	CK(cuptiActivityFlushAll(1));
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 25;
	CK(cudaFree(0));
	CUstream s;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUfunction f;
	CK(cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)empty));
	int *dp;
	CK(cudaMalloc(&dp, 4096));
	void *hp;
	CK(cudaMallocHost(&hp, 4096));
	int *null_arg = NULL;
	void *args[] = { &null_arg };
	/* The graph: four kernels (or CC_GRAPH_NODES), captured. */
	const char *nodes_env = getenv("CC_GRAPH_NODES");
	int nodes = nodes_env && atoi(nodes_env) > 0 ? atoi(nodes_env) : 4;
	CUgraph g;
	CUgraphExec ge;
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	for (int i = 0; i < nodes; i++)
		CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphInstantiate(&ge, g, 0));

	CK(cuptiSubscribe(&sub, on_api, NULL));
	CK(cuptiActivityRegisterCallbacks(buf_request, buf_done));

	auto call = [&](int op, int mode, uint64_t id) {
		if (mode == EXTERNAL)
			CK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, id));
		switch (op) {
		case LAUNCH: CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL)); break;
		case GRAPH: CK(cuGraphLaunch(ge, s)); break;
		case MEMSET: CK(cuMemsetD32Async((CUdeviceptr)dp, 0, 256, s)); break;
		case COPY: CK(cuMemcpyDtoHAsync(hp, (CUdeviceptr)dp, 1024, s)); break;
		}
		if (mode == EXTERNAL) {
			uint64_t last;
			CK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, &last));
		}
	};
	/* ns[op][mode][round] */
	std::vector<double> ns[OPS][MODES];
	srand(1);
	uint64_t id = 1;
	for (int r = 0; r < rounds; r++) {
		int order[MODES] = { 0, 1, 2, 3, 4 };
		for (int i = MODES - 1; i > 0; i--)
			std::swap(order[i], order[rand() % (i + 1)]);
		for (int mi = 0; mi < MODES; mi++) {
			int m = order[mi];
			set_mode(m);
			for (int op = 0; op < OPS; op++) {
				for (int i = 0; i < 50; i++) /* warm */
					call(op, m, id++);
				CK(cuStreamSynchronize(s));
				uint64_t sum = 0;
				for (int b = 0; b < 10; b++) {
					uint64_t t0 = now_ns();
					for (int i = 0; i < 200; i++)
						call(op, m, id++);
					sum += now_ns() - t0;
					CK(cuStreamSynchronize(s));
				}
				ns[op][m].push_back(sum / 2000.0);
			}
		}
	}
	set_mode(NONE);
	auto median = [](std::vector<double> v) {
		std::sort(v.begin(), v.end());
		size_t n = v.size();
		return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	};
	printf("%d rounds of 2000 calls per call and mode, graphs of %d kernels; CUPTI records seen: %lu\n\n", rounds,
	       nodes, records);
	printf("| call | none | bare | callbacks | records | external | callbacks - bare | records - bare | external - bare |\n");
	printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (int op = 0; op < OPS; op++) {
		printf("| %s |", op_name[op]);
		for (int m = 0; m < MODES; m++)
			printf(" %.0f ns |", median(ns[op][m]));
		for (int m = CALLBACKS; m < MODES; m++) {
			std::vector<double> d;
			for (int r = 0; r < rounds; r++)
				d.push_back(ns[op][m][r] - ns[op][BARE][r]);
			printf(" %+.0f ns |", median(d));
		}
		printf("\n");
	}
	return 0;
}
