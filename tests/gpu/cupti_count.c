/* SPDX-License-Identifier: MIT */
/*
 * Independent ground truth for the GPU checks: a minimal CUPTI activity
 * collector, loaded with CUDA_INJECTION64_PATH, that counts kernels, memcpys
 * (by direction, bytes, pageable source) and memsets, and writes them as
 * JSON to $CUPTI_COUNT_OUT at exit. It shares no code with gpuspy.
 * For the overhead benchmark it can also pay for one of the two ways to tie
 * GPU records to the host calls that caused them, on the driver entry points
 * that launch, copy or set (names cuLaunch*, cuGraphLaunch*, cuMemcpy*,
 * cuMemset*): CUPTI_COUNT_CB=1 subscribes an empty driver-API callback
 * (what gpuspy does), CUPTI_COUNT_API=1 enables CUPTI's driver-API activity
 * records for those entry points only (counted as "api").
 * CUPTI_COUNT_TS=1 registers a timestamp callback on the TSC, as gpuspy
 * does to put GPU records on its own clock (what that costs inside CUPTI).
 * CUPTI_COUNT_FLUSH=1 flushes as gpuspy does: CUPTI's flush period at one
 * second and a thread asking for completed buffers (cuptiActivityFlushAll)
 * every second; =period or =thread does only one of the two;
 * CUPTI_COUNT_FLUSH_S=N makes both every N seconds.
 * cupti_count_switch(0/1) turns that choice off and on again, for paired
 * windows inside one process (tests/gpu/loops.py --toggle).
 * Build: gcc -O2 -shared -fPIC -I/usr/local/cuda/include tests/gpu/cupti_count.c \
 *          -o libcupti_count.so -L/usr/local/cuda/lib64 -lcupti
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>
#include <x86intrin.h>

static unsigned long long kernels, memsets, api, copies[16], bytes[16], pageable_h2d, pinned_h2d;

static void CUPTIAPI buf_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*size = 16 << 20;
	*buffer = aligned_alloc(8, *size);
	*max_records = 0;
}

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				  size_t valid)
{
	(void)ctx; (void)stream; (void)size;
	CUpti_Activity *rec = NULL;
	while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		switch (rec->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			kernels++;
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY: {
			CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
			unsigned k = m->copyKind < 16 ? m->copyKind : 0;
			copies[k]++;
			bytes[k] += m->bytes;
			if (k == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) {
				if (m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
					pageable_h2d++;
				else if (m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED)
					pinned_h2d++;
			}
			break;
		}
		case CUPTI_ACTIVITY_KIND_MEMSET:
			memsets++;
			break;
		case CUPTI_ACTIVITY_KIND_DRIVER:
			api++;
			break;
		default:
			break;
		}
	}
	free(buffer);
}

static void report(void)
{
	cuptiActivityFlushAll(1);
	const char *path = getenv("CUPTI_COUNT_OUT");
	/* "%p" in the path: this process's id (a program of several processes). */
	char buf[4096];
	const char *pp = path ? strstr(path, "%p") : NULL;
	if (pp) {
		snprintf(buf, sizeof(buf), "%.*s%d%s", (int)(pp - path), path, (int)getpid(), pp + 2);
		path = buf;
	}
	FILE *f = path ? fopen(path, "w") : stderr;
	if (!f)
		return;
	fprintf(f, "{\"kernels\": %llu, \"memsets\": %llu, \"h2d\": %llu, \"h2d_bytes\": %llu, "
		   "\"h2d_pageable\": %llu, \"h2d_pinned\": %llu, \"d2h\": %llu, \"d2h_bytes\": %llu, "
		   "\"d2d\": %llu, \"d2d_bytes\": %llu, \"api\": %llu, \"copies_by_kind\": [",
		kernels, memsets, copies[CUPTI_ACTIVITY_MEMCPY_KIND_HTOD],
		bytes[CUPTI_ACTIVITY_MEMCPY_KIND_HTOD], pageable_h2d, pinned_h2d,
		copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOH], bytes[CUPTI_ACTIVITY_MEMCPY_KIND_DTOH],
		copies[CUPTI_ACTIVITY_MEMCPY_KIND_DTOD], bytes[CUPTI_ACTIVITY_MEMCPY_KIND_DTOD], api);
	/* Every CUpti_ActivityMemcpyKind, [count, bytes]: copies to or from
	 * host memory mapped for the device are neither HtoD nor DtoH. */
	for (int k = 0; k < 16; k++)
		fprintf(f, "%s[%llu, %llu]", k ? ", " : "", copies[k], bytes[k]);
	fprintf(f, "]}\n");
	if (f != stderr)
		fclose(f);
}

static void CUPTIAPI on_api(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
	(void)u; (void)d; (void)id; (void)data;
}

static int launch_copy_or_set(const char *name)
{
	static const char *const prefix[] = { "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset" };
	for (int i = 0; i < 4; i++)
		if (!strncmp(name, prefix[i], strlen(prefix[i])))
			return 1;
	return 0;
}

static struct {
	int cb, rec;
	CUpti_SubscriberHandle sub;
	unsigned n;
	CUpti_CallbackId ids[512];
} corr;

/* CUPTI_COUNT_CB / CUPTI_COUNT_API: see the header. */
void cupti_count_switch(int on);
void cupti_count_switch(int on)
{
	for (unsigned i = 0; i < corr.n; i++) {
		if (corr.cb)
			cuptiEnableCallback(on, corr.sub, CUPTI_CB_DOMAIN_DRIVER_API, corr.ids[i]);
		if (corr.rec)
			cuptiActivityEnableDriverApi(corr.ids[i], on);
	}
}

static int flag(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0");
}

static void correlate(void)
{
	corr.cb = flag("CUPTI_COUNT_CB");
	corr.rec = flag("CUPTI_COUNT_API");
	if (corr.cb && cuptiSubscribe(&corr.sub, on_api, NULL) != CUPTI_SUCCESS)
		corr.cb = 0;
	for (CUpti_CallbackId id = 1; id < 4096 && corr.n < 512; id++) {
		const char *name = NULL;
		if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) != CUPTI_SUCCESS || !name)
			break;
		if (launch_copy_or_set(name))
			corr.ids[corr.n++] = id;
	}
	cupti_count_switch(1);
}

static uint64_t CUPTIAPI tsc(void)
{
	return __rdtsc();
}

static unsigned flush_s = 1;

static void *flusher(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec second = { flush_s, 0 };
		while (nanosleep(&second, &second) != 0)
			;
		cuptiActivityFlushAll(0);
	}
	return NULL;
}

int InitializeInjection(void);
int InitializeInjection(void)
{
	if (cuptiActivityRegisterCallbacks(buf_request, buf_complete) != CUPTI_SUCCESS)
		return 0;
	if (flag("CUPTI_COUNT_TS"))
		cuptiActivityRegisterTimestampCallback(tsc);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
	cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
	/* As the overhead benchmark's bare collector: the same kinds as gpuspy. */
	if (getenv("CUPTI_COUNT_EXTCORR"))
		cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
	correlate();
	const char *fl = getenv("CUPTI_COUNT_FLUSH"), *fs = getenv("CUPTI_COUNT_FLUSH_S");
	if (fs && atoi(fs) > 0)
		flush_s = (unsigned)atoi(fs);
	if (flag("CUPTI_COUNT_FLUSH") && strcmp(fl, "thread"))
		cuptiActivityFlushPeriod(1000 * flush_s);
	if (flag("CUPTI_COUNT_FLUSH") && strcmp(fl, "period")) {
		pthread_t t;
		if (pthread_create(&t, NULL, flusher, NULL) == 0)
			pthread_detach(t);
	}
	atexit(report);
	return 1;
}
