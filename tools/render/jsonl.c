/* SPDX-License-Identifier: MIT */
/*
 * `gpuspy dump`: a trace as JSON Lines. The first line describes the
 * process, then one line per event in start-time order; a call stack is
 * written once, symbolized, as a "stack" line before the first event that
 * refers to it ("stack": id). Integers that can
 * exceed 2^53 (timestamps, addresses, handles) are written as exact
 * integers, not through doubles.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "render/jsonl.h"
#include "read/reader.h"
#include "read/symbolize.h"
#include "util/escape.h"

static void add_u64(cJSON *o, const char *k, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cJSON_AddItemToObject(o, k, cJSON_CreateRaw(buf));
}

static void add_i64(cJSON *o, const char *k, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	cJSON_AddItemToObject(o, k, cJSON_CreateRaw(buf));
}

static int emit(FILE *out, cJSON *o)
{
	char *s = gs_json_print(o, 0);
	cJSON_Delete(o);
	if (!s)
		return -1;
	int rc = fprintf(out, "%s\n", s) < 0 ? -1 : 0;
	free(s);
	return rc;
}

static void add_dims(cJSON *o, const char *k, uint32_t x, uint32_t y, uint32_t z)
{
	cJSON *a = cJSON_AddArrayToObject(o, k);
	cJSON_AddItemToArray(a, cJSON_CreateNumber(x));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(y));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(z));
}

/* Long (about 85 lines): one header field a line, in the order of
 * docs/format.md's process line. */
cJSON *gs_dump_process(const struct gs_trace *t)
{
	const struct gspy_header *h = t->h;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "process");
	cJSON_AddNumberToObject(o, "format_version", h->version);
	cJSON_AddNumberToObject(o, "pid", h->pid);
	cJSON_AddNumberToObject(o, "ppid", h->ppid);
	char host[sizeof(h->host) + 1] = { 0 };
	memcpy(host, h->host, sizeof(h->host));
	cJSON_AddStringToObject(o, "host", host);
	cJSON_AddNumberToObject(o, "rank", h->rank);
	cJSON_AddNumberToObject(o, "local_rank", h->local_rank);
	char cmd[sizeof(h->command) + 1] = { 0 };
	memcpy(cmd, h->command, sizeof(h->command));
	cJSON_AddStringToObject(o, "command", cmd);
	add_u64(o, "events", t->events);
	add_u64(o, "dropped", t->dropped);
	cJSON_AddStringToObject(o, "mode", h->ring ? "ring" : "drop");
	add_u64(o, "overwritten", h->overwritten);
	if (h->dropped_after_exit)
		add_u64(o, "dropped_after_exit", h->dropped_after_exit);
	if (h->chunks_reused)
		add_u64(o, "chunks_reused", h->chunks_reused);
	if (h->nvtx_too_deep)
		add_u64(o, "nvtx_too_deep", h->nvtx_too_deep);
	if (h->host_unwritten)
		add_u64(o, "host_unwritten", h->host_unwritten);
	if (h->cpus)
		add_u64(o, "cpus", h->cpus);
	cJSON_AddBoolToObject(o, "clean_exit", h->state == GSPY_STATE_EXITED);
	cJSON_AddStringToObject(o, "state", gs_state_name(h->state));
	if (h->state == GSPY_STATE_EXITED && h->version >= 3 && h->exit_code >= 0 && h->exit_code <= 255)
		cJSON_AddNumberToObject(o, "exit_code", h->exit_code); /* by _exit */
	if (h->state == GSPY_STATE_SIGNALED)
		cJSON_AddNumberToObject(o, "exit_signal", h->exit_signal);
	else if (h->exit_signal)
		cJSON_AddNumberToObject(o, "signal_seen", h->exit_signal);
	cJSON_AddBoolToObject(o, "truncated", t->truncated);
	/* What the trace occupies: committed records, and the chunks claimed
	 * to hold them (the file itself is sized up front). */
	add_u64(o, "record_bytes", t->packed_bytes);
	add_u64(o, "used_bytes", GSPY_HEADER_SIZE + h->strtab_used +
				     (uint64_t)(h->chunks_claimed < h->chunk_count ? h->chunks_claimed : h->chunk_count) *
					     h->chunk_size);
	add_u64(o, "strings_bytes", h->strtab_used);
	add_u64(o, "buffer_bytes", h->buffer_bytes);
	add_u64(o, "file_bytes", h->file_size);
	cJSON_AddNumberToObject(o, "threads", h->threads_seen ? h->threads_seen : t->nthreads);
	add_u64(o, "stacks_taken", h->stacks_taken);
	add_u64(o, "stacks_ns", gs_trace_stack_ns(t));
	add_u64(o, "stack_min_ns", h->stack_min_ns);
	add_u64(o, "wait_stack_min_ns", h->wait_stack_min_ns);
	/* Telemetry: the period (0 off), how it went, per device the pid
	 * that sampled it (one process per device does). */
#define GSPY_X(n) #n,
	static const char *const nvml_states[] = { GSPY_NVML_STATE_LIST(GSPY_X) };
#undef GSPY_X
	cJSON_AddNumberToObject(o, "nvml_ms", h->nvml_ms);
	cJSON_AddStringToObject(o, "nvml", h->nvml_state < 3 ? nvml_states[h->nvml_state] : "off");
	cJSON *smp = cJSON_AddArrayToObject(o, "nvml_sampler");
	for (int d = 0; d < GSPY_DEVICES; d++)
		cJSON_AddItemToArray(smp, cJSON_CreateNumber(h->nvml_sampler[d]));
	/* GPUSPY_HOST_ALLOC_MIN as the library took it: 0 when host
	 * allocations were not recorded. */
	add_u64(o, "host_alloc_min", h->host_alloc_min);
	/* GPUSPY_STACKS: which calls could carry a stack. */
	cJSON_AddStringToObject(o, "stacks", !(h->stacks & GSPY_STACKS_NATIVE) ? "off"
					     : (h->stacks & GSPY_STACKS_ALL) ? "all" : "on");
	/* On demand: GPUSPY_START, whether it records now (its last word,
	 * once it exited), how many times recording resumed. */
	cJSON_AddStringToObject(o, "start", h->start_paused ? "paused" : "on");
	cJSON_AddBoolToObject(o, "recording", !h->ctl_paused);
	cJSON_AddNumberToObject(o, "windows", h->windows);
	add_u64(o, "start_realtime_ns", h->real_start_ns);
	add_u64(o, "start_ns", h->clock_start.mono);
	cJSON_AddStringToObject(o, "gpu_timing", gs_gpu_timing_name(h->gpu_timing));
	cJSON *dm = cJSON_AddArrayToObject(o, "device_mem");
	int ndev = GSPY_DEVICES;
	while (ndev > 0 && !h->device_mem[ndev - 1])
		ndev--;
	for (int i = 0; i < ndev; i++)
		cJSON_AddItemToArray(dm, cJSON_CreateNumber((double)h->device_mem[i]));
	cJSON_AddStringToObject(o, "clock", h->clock == GSPY_CLOCK_TSC ? "tsc" : "monotonic");
	char notes[GSPY_NOTES_SIZE + 1];
	gs_header_notes(h, notes, sizeof(notes));
	gs_notes_json(o, notes, h->notes_lost);
	return o;
}

void gs_notes_json(cJSON *o, const char *notes, uint64_t lost)
{
	if (*notes) {
		cJSON *a = cJSON_AddArrayToObject(o, "notes");
		for (const char *s = notes, *nl; (nl = strchr(s, '\n')); s = nl + 1) {
			char line[GSPY_NOTES_SIZE + 1];
			size_t n = (size_t)(nl - s) < sizeof(line) - 1 ? (size_t)(nl - s) : sizeof(line) - 1;
			memcpy(line, s, n);
			line[n] = 0;
			cJSON_AddItemToArray(a, cJSON_CreateString(line));
		}
	}
	if (lost)
		add_u64(o, "notes_lost", lost);
}

/* A kernel's name and dimensions: a launch, or a graph's kernel node. */
static void add_kernel(cJSON *o, const struct gs_trace *t, const struct gspy_record *r)
{
	const char *n = gs_trace_string(t, r->name_id);
	cJSON_AddStringToObject(o, "name", *n ? n : "(unknown)");
	add_dims(o, "grid", r->u.launch.grid_x, r->u.launch.grid_yz[0], r->u.launch.grid_yz[1]);
	add_dims(o, "block", r->u.launch.block[0], r->u.launch.block[1], r->u.launch.block[2]);
}

/* A copy's direction, and its host side's memory where it has one. */
static void add_dir(cJSON *o, const struct gspy_record *r)
{
	cJSON_AddStringToObject(o, "dir", gs_dir_name(r->dir));
	if (r->dir == GSPY_DIR_h2d || r->dir == GSPY_DIR_d2h || r->dir == GSPY_DIR_h2h)
		cJSON_AddStringToObject(o, "host_mem", gs_mem_name(r->mem));
}

/* Long (about 125 lines): one field of the record a line, by kind, in the
 * order of docs/format.md's event line. */
cJSON *gs_dump_event(const struct gs_trace *t, const struct gs_event *ev)
{
	const struct gspy_record *r = ev->rec;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "event");
	cJSON_AddStringToObject(o, "kind", gs_kind_name(r->kind));
	cJSON_AddStringToObject(o, "api", gs_api_name(r->api));
	cJSON_AddNumberToObject(o, "tid", ev->tid);
	add_u64(o, "start_ns", ev->start_ns);
	add_u64(o, "end_ns", ev->end_ns);
	if (r->kind != GSPY_KIND_nvml) /* its result field holds the sample */
		add_i64(o, "result", r->result);
	if (r->stack_id)
		cJSON_AddNumberToObject(o, "stack", r->stack_id);
	if (ev->own_ns)
		add_u64(o, "own_ns", ev->own_ns);
	switch (r->kind) {
	case GSPY_KIND_alloc:
	case GSPY_KIND_free:
	case GSPY_KIND_map:
	case GSPY_KIND_unmap:
		add_u64(o, "bytes", r->u.mem.bytes);
		cJSON_AddStringToObject(o, "mem", gs_mem_name(r->mem));
		add_u64(o, "addr", r->u.mem.addr);
		break;
	case GSPY_KIND_copy:
		add_u64(o, "bytes", r->u.mem.bytes);
		add_dir(o, r);
		add_u64(o, "addr", r->u.mem.addr);
		break;
	case GSPY_KIND_memset:
	case GSPY_KIND_node_memset:
		add_u64(o, "bytes", r->u.mem.bytes);
		break;
	case GSPY_KIND_launch:
		if (gspy_api_host_func(r->api)) {
			cJSON_AddStringToObject(o, "name", "(host function)");
		} else if (gspy_api_graph_launch(r->api)) {
			cJSON_AddStringToObject(o, "name", "(graph)");
			add_u64(o, "graph", r->u.mem.addr);
		} else {
			add_kernel(o, t, r);
		}
		break;
	case GSPY_KIND_graph:
		add_u64(o, "nodes", r->u.mem.bytes);
		add_u64(o, "cugraph", r->u.mem.addr);
		break;
	case GSPY_KIND_node_kernel:
		add_kernel(o, t, r);
		break;
	case GSPY_KIND_node_copy:
		add_u64(o, "bytes", r->u.mem.bytes);
		add_dir(o, r);
		break;
	case GSPY_KIND_node_alloc:
	case GSPY_KIND_node_free:
		add_u64(o, "bytes", r->u.mem.bytes);
		add_u64(o, "addr", r->u.mem.addr);
		break;
	case GSPY_KIND_gpu_kernel:
	case GSPY_KIND_gpu_copy:
	case GSPY_KIND_gpu_memset:
		if (r->kind == GSPY_KIND_gpu_kernel) {
			const char *n = gs_trace_string(t, r->name_id);
			cJSON_AddStringToObject(o, "name", *n ? n : "(unknown)");
		} else {
			add_u64(o, "bytes", r->u.gpu.bytes);
		}
		if (r->kind == GSPY_KIND_gpu_copy)
			add_dir(o, r);
		cJSON_AddNumberToObject(o, "device", r->device);
		add_u64(o, "stream", r->stream);
		if (ev->corr)
			add_u64(o, "corr", ev->corr);
		if (r->u.gpu.graph_id)
			cJSON_AddNumberToObject(o, "graph_id", r->u.gpu.graph_id);
		return o;
	case GSPY_KIND_nvml: {
		struct gspy_nvml s;
		gspy_nvml_get(r, &s);
		cJSON_AddNumberToObject(o, "device", r->device);
		cJSON_AddStringToObject(o, "uuid", gs_trace_string(t, r->name_id));
#define GSPY_X(f)                                    \
	if (s.f == GSPY_NVML_NA)                     \
		cJSON_AddNullToObject(o, #f);        \
	else                                         \
		cJSON_AddNumberToObject(o, #f, s.f);
		GSPY_NVML_FIELDS(GSPY_X)
#undef GSPY_X
		return o;
	}
	case GSPY_KIND_gpu_span: {
		const char *n = gs_trace_string(t, r->name_id);
		cJSON_AddStringToObject(o, "name", *n ? n : "(no phase)");
		add_u64(o, "gpu_ns", r->u.span.gpu_ns);
		cJSON_AddNumberToObject(o, "device", r->device);
		add_u64(o, "stream", r->stream);
		return o;
	}
	case GSPY_KIND_phase_begin:
	case GSPY_KIND_phase_end:
	case GSPY_KIND_mark:
		cJSON_AddStringToObject(o, "name", gs_trace_string(t, r->name_id));
		if (r->flags & GSPY_FLAG_STEP)
			add_u64(o, "step", r->u.mem.bytes);
		if (r->flags & GSPY_FLAG_WINDOW) /* written as recording resumed */
			cJSON_AddBoolToObject(o, "window", 1);
		return o;
	default:
		break;
	}
	cJSON_AddNumberToObject(o, "device", r->device);
	if (r->stream || (r->flags & GSPY_FLAG_ASYNC) || r->kind == GSPY_KIND_sync ||
	    r->kind == GSPY_KIND_map || gspy_kind_graph(r->kind))
		add_u64(o, gspy_stream_name(r->kind), r->stream);
	if (r->flags & GSPY_FLAG_ASYNC)
		cJSON_AddBoolToObject(o, "async", 1);
	if (r->flags & GSPY_FLAG_CAPTURED)
		cJSON_AddBoolToObject(o, "captured", 1);
	if (ev->corr)
		add_u64(o, "corr", ev->corr);
	if (gs_api_is_ptds(r->api))
		cJSON_AddBoolToObject(o, "per_thread_stream", 1);
	return o;
}

static cJSON *dump_stack(uint32_t id, const struct gs_stack *st)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "stack");
	cJSON_AddNumberToObject(o, "id", id);
	cJSON *a = cJSON_AddArrayToObject(o, "frames");
	for (uint32_t i = 0; i < st->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(st->frames[i]));
	return o;
}

int gs_dump(struct gs_trace *t, FILE *out)
{
	if (emit(out, gs_dump_process(t)) != 0)
		return -1;
	struct gs_symbolizer *sym = NULL;
	/* Stack ids are string-table offsets + 1: one bit each says "written". */
	uint64_t nbits = t->h->strtab_size + 2;
	unsigned char *done = NULL;
	struct gs_event ev;
	int rc = 0;
	gs_trace_rewind(t);
	while (!rc && gs_trace_next(t, &ev)) {
		uint32_t id = ev.rec->stack_id;
		if (id && id < nbits) {
			if (!done && !(done = calloc((size_t)(nbits + 7) / 8, 1)))
				return -1;
			if (!(done[id / 8] & (1u << (id % 8)))) {
				done[id / 8] |= (unsigned char)(1u << (id % 8));
				if (!sym)
					sym = gs_sym_open(t);
				const struct gs_stack *st = gs_sym_stack(sym, id);
				if (st && emit(out, dump_stack(id, st)) != 0)
					rc = -1;
			}
		}
		if (!rc && emit(out, gs_dump_event(t, &ev)) != 0)
			rc = -1;
	}
	gs_sym_close(sym);
	free(done);
	return rc;
}
