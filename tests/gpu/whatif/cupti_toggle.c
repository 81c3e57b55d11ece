/* SPDX-License-Identifier: MIT */
/*
 * What CUPTI's activity records cost a host-bound program outside the
 * calls the replay already prices, measured inside one process: loaded
 * with CUDA_INJECTION64_PATH (no gpuspy), it times every driver-API call
 * of every thread (a driver-API callback, on all the time) and turns the
 * activity kinds gpuspy enables (concurrent kernels, memcpys, memsets,
 * with its TSC timestamp callback) on and off every TOGGLE_MS (default
 * 200) from a thread of its own. A process's own speed, which moves a
 * host-bound step by 40% from one process to the next
 * (tests/gpu/results/round3/jax-spread-h100.md), is then the same on
 * both sides; cupti_toggle.py compares the windows with records on and
 * off: each call's time, and the host's time between calls.
 * At exit it writes $TOGGLE_OUT (binary, struct call below, the switches
 * as calls with cbid 0 and the new state in t1) and $TOGGLE_OUT.names
 * (cbid name, one a line). Shares no code with gpuspy.
 * Build: gcc -O2 -shared -fPIC -I/usr/local/cuda/include cupti_toggle.c \
 *          -o libcupti_toggle.so -L/usr/local/cuda/lib64 -lcupti -lpthread
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>
#include <x86intrin.h>

struct call {
	uint32_t cbid, tid;
	uint64_t t0, t1;
};

#define MAX_CALLS (8u << 20)
static struct call *calls;
static uint32_t ncalls;
static CUpti_SubscriberHandle sub;
static unsigned toggle_ms = 200;
static const CUpti_ActivityKind kinds[] = { CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
					    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET };

static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void add(uint32_t cbid, uint32_t tid, uint64_t t0, uint64_t t1)
{
	uint32_t i = __atomic_fetch_add(&ncalls, 1, __ATOMIC_RELAXED);
	if (i < MAX_CALLS)
		calls[i] = (struct call){ cbid, tid, t0, t1 };
}

static __thread uint32_t my_tid;

static void CUPTIAPI on_api(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
	(void)u;
	if (d != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	const CUpti_CallbackData *cb = data;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		*cb->correlationData = now();
		return;
	}
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	add(id, my_tid, *cb->correlationData, now());
}

static void CUPTIAPI buf_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*size = 8 << 20;
	*buffer = aligned_alloc(8, *size);
	*max_records = 0;
}

static unsigned long long records;

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				  size_t valid)
{
	(void)ctx; (void)stream; (void)size;
	CUpti_Activity *rec = NULL;
	while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
		records++;
	free(buffer);
}

static uint64_t CUPTIAPI tsc(void)
{
	return __rdtsc();
}

static void set_records(int on)
{
	for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		on ? cuptiActivityEnable(kinds[k]) : cuptiActivityDisable(kinds[k]);
	add(0, 0, now(), (uint64_t)on);
}

/* Flips the records every toggle_ms, and asks for completed buffers
 * every second, as gpuspy does. */
static void *toggler(void *arg)
{
	(void)arg;
	int on = 1;
	uint64_t flushed = now();
	for (;;) {
		struct timespec w = { toggle_ms / 1000, (long)(toggle_ms % 1000) * 1000000L };
		while (nanosleep(&w, &w) != 0)
			;
		on = !on;
		set_records(on);
		if (now() - flushed >= 1000000000u) {
			cuptiActivityFlushAll(0);
			flushed = now();
		}
	}
	return NULL;
}

static void finish(void)
{
	cuptiActivityFlushAll(1);
	const char *path = getenv("TOGGLE_OUT");
	if (!path)
		return;
	uint32_t n = __atomic_load_n(&ncalls, __ATOMIC_RELAXED);
	if (n > MAX_CALLS)
		n = MAX_CALLS;
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(calls, sizeof(*calls), n, f);
		fclose(f);
	}
	char names[4096];
	snprintf(names, sizeof(names), "%s.names", path);
	f = fopen(names, "w");
	if (!f)
		return;
	for (CUpti_CallbackId id = 1; id < 4096; id++) {
		const char *name = NULL;
		if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) != CUPTI_SUCCESS || !name)
			break;
		fprintf(f, "%u %s\n", id, name);
	}
	fprintf(f, "0 records=%llu calls=%u\n", records, n);
	fclose(f);
}

int InitializeInjection(void);
int InitializeInjection(void)
{
	calls = malloc((size_t)MAX_CALLS * sizeof(*calls));
	const char *ms = getenv("TOGGLE_MS");
	if (ms && atoi(ms) > 0)
		toggle_ms = (unsigned)atoi(ms);
	if (!calls || cuptiActivityRegisterCallbacks(buf_request, buf_complete) != CUPTI_SUCCESS ||
	    cuptiSubscribe(&sub, on_api, NULL) != CUPTI_SUCCESS)
		return 0;
	cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
	cuptiActivityRegisterTimestampCallback(tsc);
	cuptiActivityFlushPeriod(1000);
	set_records(1);
	atexit(finish);
	pthread_t t;
	pthread_create(&t, NULL, toggler, NULL);
	pthread_detach(t);
	return 1;
}
