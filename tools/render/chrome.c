/* SPDX-License-Identifier: MIT */
/*
 * `gpuspy export --format chrome`: Chrome Trace Event Format (the JSON that
 * Perfetto and chrome://tracing open). Per process: host API slices per
 * thread ("X", named by kernel for launches), GPU work per device and
 * stream with flow arrows from the launching call (traces with CUPTI),
 * phases on their own track, and a counter track of reserved device memory
 * ("C"). Written as a stream, one event at a time: memory does not grow
 * with the trace. Times are microseconds on CLOCK_MONOTONIC, as the format
 * wants.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "read/demangle.h"
#include "render/chrome.h"
#include "read/input.h"
#include "util/xalloc.h"
#include "util/escape.h"
#include "util/units.h"

#define PHASE_TID 0x7ffffff0u /* the phases track of each process */
#define GPU_TID_BASE 0x40000000u /* + device * 65536 + stream: GPU tracks */
#define STACK_MAX 64

struct out {
	FILE *f;
	int first;
};

static void emit(struct out *o, cJSON *e)
{
	char *s = gs_json_print(e, 0);
	cJSON_Delete(e);
	if (!s)
		return;
	fprintf(o->f, "%s\n%s", o->first ? "" : ",", s);
	o->first = 0;
	free(s);
}

/* Microseconds with ns precision, as a raw number (no double rounding). */
static void add_us(cJSON *e, const char *k, uint64_t ns)
{
	char b[40];
	snprintf(b, sizeof(b), "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
	cJSON_AddItemToObject(e, k, cJSON_CreateRaw(b));
}

static cJSON *event(const char *ph, const char *name, uint32_t pid, uint32_t tid)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "ph", ph);
	cJSON_AddStringToObject(e, "name", name);
	cJSON_AddNumberToObject(e, "pid", pid);
	cJSON_AddNumberToObject(e, "tid", tid);
	return e;
}

static void meta(struct out *o, const char *what, uint32_t pid, uint32_t tid, const char *name,
		 int sort)
{
	cJSON *e = event("M", what, pid, tid);
	cJSON_AddNumberToObject(e, "ts", 0);
	cJSON *a = cJSON_AddObjectToObject(e, "args");
	if (name)
		cJSON_AddStringToObject(a, "name", name);
	else
		cJSON_AddNumberToObject(a, "sort_index", sort);
	emit(o, e);
}

static const char *slice_name(const struct gs_ev *ev)
{
	if ((ev->kind == GSPY_KIND_launch || ev->kind == GSPY_KIND_gpu_kernel) && ev->name && *ev->name)
		return gs_demangle(ev->name);
	return gs_api_name(ev->api);
}

static void slice(struct out *o, const struct gs_ev *ev, uint32_t pid, const struct gs_stack *st)
{
	cJSON *e = event("X", slice_name(ev), pid, ev->tid);
	cJSON_AddStringToObject(e, "cat", gs_kind_name(ev->kind));
	add_us(e, "ts", ev->start_ns);
	add_us(e, "dur", ev->end_ns - ev->start_ns);
	cJSON *a = cJSON_AddObjectToObject(e, "args");
	cJSON_AddStringToObject(a, "api", gs_api_name(ev->api));
	cJSON_AddNumberToObject(a, "result", ev->result);
	if (ev->kind == GSPY_KIND_launch) {
		if (ev->grid[0]) {
			cJSON_AddItemToObject(a, "grid", cJSON_CreateIntArray((const int[]){ (int)ev->grid[0], (int)ev->grid[1], (int)ev->grid[2] }, 3));
			cJSON_AddItemToObject(a, "block", cJSON_CreateIntArray((const int[]){ (int)ev->block[0], (int)ev->block[1], (int)ev->block[2] }, 3));
		}
	} else if (ev->kind != GSPY_KIND_sync) {
		cJSON_AddNumberToObject(a, "bytes", (double)ev->bytes);
	}
	if (ev->kind == GSPY_KIND_copy) {
		cJSON_AddStringToObject(a, "dir", gs_dir_name(ev->dir));
		if (ev->dir == GSPY_DIR_h2d || ev->dir == GSPY_DIR_d2h || ev->dir == GSPY_DIR_h2h)
			cJSON_AddStringToObject(a, "host_mem", gs_mem_name(ev->mem));
	} else if (ev->kind == GSPY_KIND_alloc || ev->kind == GSPY_KIND_free) {
		cJSON_AddStringToObject(a, "mem", gs_mem_name(ev->mem));
	}
	if (ev->device >= 0)
		cJSON_AddNumberToObject(a, "device", ev->device);
	if (ev->async || ev->stream || ev->kind == GSPY_KIND_map)
		cJSON_AddNumberToObject(a, gspy_stream_name(ev->kind), (double)ev->stream);
	if (st) { /* the call stack, innermost frame first, symbolized */
		cJSON *f = cJSON_AddArrayToObject(a, "stack");
		for (uint32_t i = 0; i < st->n; i++)
			cJSON_AddItemToArray(f, cJSON_CreateString(st->frames[i]));
	}
	emit(o, e);
	if (ev->own_ns && ev->end_ns + ev->own_ns > ev->end_ns) {
		/* gpuspy's own time after the call, on its thread: the walk of
		 * that stack (the gap the replay takes it off), not the program's. */
		e = event("X", "gpuspy: call stack", pid, ev->tid);
		cJSON_AddStringToObject(e, "cat", "gpuspy");
		add_us(e, "ts", ev->end_ns);
		add_us(e, "dur", ev->own_ns);
		emit(o, e);
	}
}

static void counter(struct out *o, uint32_t pid, uint64_t ns, int64_t bytes)
{
	cJSON *e = event("C", "reserved device memory", pid, 0);
	add_us(e, "ts", ns);
	cJSON *a = cJSON_AddObjectToObject(e, "args");
	cJSON_AddNumberToObject(a, "bytes", (double)(bytes > 0 ? bytes : 0));
	emit(o, e);
}

/* An NVML sample: counter tracks per device, NVML's values as they came. */
static void nvml_counters(struct out *o, uint32_t pid, const struct gs_ev *ev)
{
	const struct gspy_nvml *s = &ev->nvml;
	struct { const char *track, *arg; uint32_t v; double scale; } c[] = {
		{ "GPU-Util %", "gpu", s->util_gpu, 1 },     { "memory util %", "memory", s->util_mem, 1 },
		{ "power W", "watts", s->power_dw, 0.1 },     { "SM clock MHz", "mhz", s->sm_mhz ? s->sm_mhz : GSPY_NVML_NA, 1 },
		{ "temperature C", "celsius", s->temp_c, 1 }, { "PCIe TX MB/s", "mbs", s->tx_mbs, 1 },
		{ "PCIe RX MB/s", "mbs", s->rx_mbs, 1 },      { "throttle reasons", "bits", s->reasons, 1 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (c[i].v == GSPY_NVML_NA)
			continue;
		char name[64];
		snprintf(name, sizeof(name), "GPU %d %s", ev->device, c[i].track);
		cJSON *e = event("C", name, pid, 0);
		add_us(e, "ts", ev->start_ns);
		cJSON *a = cJSON_AddObjectToObject(e, "args");
		cJSON_AddNumberToObject(a, c[i].arg, c[i].v * c[i].scale);
		emit(o, e);
	}
}

struct open_phase {
	char name[128];
	uint64_t begin;
};

static void phase_slice(struct out *o, uint32_t pid, const struct open_phase *p, uint64_t end)
{
	cJSON *e = event("X", p->name, pid, PHASE_TID);
	cJSON_AddStringToObject(e, "cat", "phase");
	add_us(e, "ts", p->begin);
	add_us(e, "dur", end - p->begin);
	emit(o, e);
}

/* One process into the stream; 0, or -1 with err set. pid: its Perfetto
 * process id; hosts: the export has several, so the name says which. */
/* Long (about 110 lines): one case per kind of slice (host call, GPU record,
 * phase, counter) written as its event, in the format's terms. */
static int export_one(struct out *o, const char *path, int nofollow, uint32_t pid, int hosts, char *err,
		      size_t errlen)
{
	struct gs_input in;
	if (gs_input_open(path, nofollow, &in, err, errlen) != 0)
		return -1;
	char pname[1200], on[80] = "";
	if (hosts)
		snprintf(on, sizeof(on), " on %s", in.proc.host);
	snprintf(pname, sizeof(pname), "%s %u%s: %.1000s", in.proc.rank >= 0 ? "rank" : "pid",
		 in.proc.rank >= 0 ? (uint32_t)in.proc.rank : in.proc.pid, on, in.proc.command);
	meta(o, "process_name", pid, 0, pname, 0);
	meta(o, "thread_name", pid, PHASE_TID, "phases", 0);
	meta(o, "thread_sort_index", pid, PHASE_TID, NULL, -1);
	uint32_t tids[256];
	size_t ntids = 0;
	struct open_phase stack[STACK_MAX];
	int depth = 0;
	int64_t reserved = 0;
	uint64_t last = 0;
	struct gs_ev ev;
	int got;
	while ((got = gs_input_next(&in, &ev)) == 1) {
		if (ev.end_ns > last)
			last = ev.end_ns;
		if (ev.kind == GSPY_KIND_phase_begin) {
			if (depth < STACK_MAX) {
				snprintf(stack[depth].name, sizeof(stack[depth].name), "%s",
					 ev.name && *ev.name ? ev.name : "(unnamed)");
				stack[depth++].begin = ev.start_ns;
			}
			continue;
		}
		if (ev.kind == GSPY_KIND_phase_end) {
			int i = depth - 1;
			while (i >= 0 && ev.name && *ev.name && strcmp(stack[i].name, ev.name))
				i--;
			if (i < 0)
				continue;
			/* Phases opened inside it end with it: slices must nest. */
			while (depth > i)
				phase_slice(o, pid, &stack[--depth], ev.start_ns);
			continue;
		}
		if (ev.kind == GSPY_KIND_mark) {
			cJSON *e = event("i", ev.name && *ev.name ? ev.name : "mark", pid, PHASE_TID);
			add_us(e, "ts", ev.start_ns);
			cJSON_AddStringToObject(e, "s", "p");
			emit(o, e);
			continue;
		}
		/* A phase's GPU time from CUDA events has host times only: it
		 * is in the report, not on the timeline. */
		if (ev.kind == GSPY_KIND_gpu_span)
			continue;
		if (ev.kind == GSPY_KIND_nvml) {
			nvml_counters(o, pid, &ev);
			continue;
		}
		/* A graph's nodes are what its launches run, not calls. */
		if (gspy_kind_graph(ev.kind) && ev.kind != GSPY_KIND_graph)
			continue;
		/* GPU work goes on a track per device and stream; host calls on
		 * their thread's track. */
		int gpu = ev.kind >= GSPY_KIND_gpu_kernel && ev.kind <= GSPY_KIND_gpu_memset;
		uint32_t track = gpu ? GPU_TID_BASE + (uint32_t)(ev.device & 0xff) * 65536u +
					       (uint32_t)(ev.stream & 0xffff)
				     : ev.tid;
		size_t t = 0;
		while (t < ntids && tids[t] != track)
			t++;
		if (t == ntids && ntids < 256) {
			char tn[48];
			if (gpu)
				snprintf(tn, sizeof(tn), "GPU %d stream %llu", ev.device,
					 (unsigned long long)ev.stream);
			else
				snprintf(tn, sizeof(tn), "thread %u", ev.tid);
			meta(o, "thread_name", pid, track, tn, 0);
			if (gpu)
				meta(o, "thread_sort_index", pid, track, NULL, 1000 + (int)t);
			tids[ntids++] = track;
		}
		struct gs_ev shown = ev;
		shown.tid = track;
		slice(o, &shown, pid, ev.stack_id ? gs_input_stack(&in, ev.stack_id) : NULL);
		/* Flow arrows from the launching call to the GPU work (by CUPTI's
		 * correlation id). */
		if (ev.corr && (gpu || ev.kind == GSPY_KIND_launch || ev.kind == GSPY_KIND_copy ||
				ev.kind == GSPY_KIND_memset)) {
			cJSON *f = event(gpu ? "f" : "s", "launch", pid, track);
			cJSON_AddStringToObject(f, "cat", "flow");
			add_us(f, "ts", gpu ? ev.start_ns : ev.start_ns);
			cJSON_AddNumberToObject(f, "id", (double)ev.corr);
			if (gpu)
				cJSON_AddStringToObject(f, "bp", "e");
			emit(o, f);
		}
		if (ev.result == 0 && (ev.kind == GSPY_KIND_alloc || ev.kind == GSPY_KIND_free) &&
		    (ev.mem == GSPY_MEM_device || ev.mem == GSPY_MEM_managed)) {
			reserved = gs_add_bytes(reserved, ev.bytes, ev.kind == GSPY_KIND_alloc);
			counter(o, pid, ev.end_ns, reserved);
		}
	}
	while (depth > 0)
		phase_slice(o, pid, &stack[--depth], last);
	if (got < 0)
		snprintf(err, errlen, "%s", in.err);
	gs_input_close(&in);
	return got < 0 ? -1 : 0;
}

/* Perfetto merges the events of one pid into one process: the same pid on
 * two hosts (ranks on two nodes) must not. Each (host, pid) gets its own
 * id: the pid where no other host has it, else one past Linux's largest
 * pid (2^22), which no process has. The traces of one (host, pid), an
 * image and the one it exec'd, stay one process. 0, or the index of the
 * trace that could not be read. */
struct who {
	char host[65];
	uint32_t pid, id;
};

static size_t assign_pids(const struct gs_paths *paths, struct who *w, int *hosts, char *err, size_t errlen)
{
	size_t n = paths->n;
	uint32_t next = 1u << 22;
	*hosts = 0;
	for (size_t i = 0; i < n; i++) {
		struct gs_input in;
		if (gs_input_open(paths->v[i], paths->listed[i], &in, err, errlen) != 0)
			return i;
		snprintf(w[i].host, sizeof(w[i].host), "%s", in.proc.host);
		w[i].pid = w[i].id = in.proc.pid;
		gs_input_close(&in);
		*hosts |= strcmp(w[0].host, w[i].host) != 0;
		for (size_t j = 0; j < i; j++) {
			if (w[j].pid == w[i].pid && !strcmp(w[j].host, w[i].host)) {
				w[i].id = w[j].id;
				break;
			}
			if (w[j].id == w[i].id)
				w[i].id = next++; /* taken by another host's process */
		}
	}
	return SIZE_MAX;
}

int gs_export_chrome(FILE *f, const struct gs_paths *paths, char *err, size_t errlen, size_t *bad)
{
	size_t n = paths->n;
	struct out o = { f, 1 };
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"gpuspy\",\"timing\":\"host\"},"
		   "\"traceEvents\":[");
	struct who *w = xcalloc(n ? n : 1, sizeof(*w));
	int hosts, rc = 0;
	*bad = assign_pids(paths, w, &hosts, err, errlen);
	if (*bad != SIZE_MAX)
		rc = -1;
	for (size_t i = 0; !rc && i < n; i++)
		if (export_one(&o, paths->v[i], paths->listed[i], w[i].id, hosts, err, errlen) != 0) {
			*bad = i;
			rc = -1;
			break;
		}
	free(w);
	fprintf(f, "\n]}\n");
	return rc;
}
