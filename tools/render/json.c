/* SPDX-License-Identifier: MIT */
/*
 * `gpuspy report --json`: the same numbers as the text report
 * (render/text.c), as one JSON object: the whole, then each process.
 */
#include <stdlib.h>
#include <string.h>

#include "read/demangle.h"
#include "report/report.h"
#include "util/cuda_errors.h"

static int gpu_mode;    /* GPU times from CUPTI */
static int events_mode; /* GPU time per phase from CUDA events (GPUSPY_CUPTI=events) */

/* ---- JSON ------------------------------------------------------------------------ */

static cJSON *agg_json(const struct gs_agg *a, int with_bytes)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", (double)a->count);
	if (with_bytes)
		cJSON_AddNumberToObject(o, "bytes", (double)a->bytes);
	cJSON_AddNumberToObject(o, "host_ns", (double)a->host_ns);
	if (gpu_mode) {
		cJSON_AddNumberToObject(o, "gpu_ns", (double)a->gpu_ns);
		cJSON_AddNumberToObject(o, "gpu_count", (double)a->gpu_count);
		if (with_bytes)
			cJSON_AddNumberToObject(o, "gpu_bytes", (double)a->gpu_bytes);
	} else {
		cJSON_AddNullToObject(o, "gpu_ns");
	}
	return o;
}

static void cats_json(cJSON *o, const struct gs_cats *c)
{
	cJSON_AddItemToObject(o, "launch", agg_json(&c->launch, 0));
	cJSON *copy = cJSON_AddObjectToObject(o, "copy");
	for (int d = 1; d < GSPY_DIR_COUNT; d++) {
		cJSON *dir = cJSON_AddObjectToObject(copy, gs_dir_name((unsigned)d));
		if (d == GSPY_DIR_d2d || d == GSPY_DIR_p2p) { /* no host memory: one row */
			cJSON_AddItemToObject(dir, "device", agg_json(&c->copy[d][GS_PAGEABLE], 1));
			continue;
		}
		cJSON_AddItemToObject(dir, "pageable", agg_json(&c->copy[d][GS_PAGEABLE], 1));
		cJSON_AddItemToObject(dir, "pinned", agg_json(&c->copy[d][GS_PINNED], 1));
	}
	cJSON_AddItemToObject(o, "memset", agg_json(&c->memset, 1));
	cJSON *alloc = cJSON_AddObjectToObject(o, "alloc");
	for (int i = 0; i < GS_ALLOC_KINDS; i++)
		cJSON_AddItemToObject(alloc, gs_alloc_names[i], agg_json(&c->alloc[i], 1));
	cJSON_AddItemToObject(o, "free", agg_json(&c->free, 1));
	cJSON_AddItemToObject(o, "sync", agg_json(&c->sync, 0));
	cJSON_AddItemToObject(o, "sync_after_pageable", agg_json(&c->sync_after_pageable, 0));
	gs_graphs_json(o, c);
}

static cJSON *phases_json(const struct gs_report *r)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->nphases; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "name", r->phases[i].name);
		if (r->phases[i].library)
			cJSON_AddTrueToObject(p, "library");
		cJSON_AddNumberToObject(p, "count", (double)r->phases[i].count);
		cJSON_AddNumberToObject(p, "wall_ns", (double)r->phases[i].wall_ns);
		if (gpu_mode) {
			uint64_t w = r->phases[i].wall_ns, b = r->phases[i].gpu_busy_ns;
			cJSON_AddNumberToObject(p, "gpu_busy_ns", (double)b);
			cJSON_AddNumberToObject(p, "gpu_idle_ns", (double)(w > b ? w - b : 0));
		} else {
			cJSON_AddNullToObject(p, "gpu_idle_ns");
		}
		if (events_mode) {
			cJSON_AddNumberToObject(p, "gpu_span_ns", (double)r->phases[i].span_ns);
			cJSON_AddNumberToObject(p, "gpu_span_intervals", (double)r->phases[i].span_n);
		}
		if (r->phases[i].nvml_n) {
			const struct gs_phase_stat *ph = &r->phases[i];
			double n = (double)ph->nvml_n;
			cJSON *t = cJSON_AddObjectToObject(p, "nvml");
			cJSON_AddNumberToObject(t, "samples", n);
			cJSON_AddNumberToObject(t, "util_gpu_mean", ph->util_sum / n);
			cJSON_AddNumberToObject(t, "power_w_mean", ph->power_sum / n);
			cJSON_AddNumberToObject(t, "sm_mhz_mean", ph->sm_sum / n);
		}
		cats_json(p, &r->phases[i].c);
		cJSON_AddItemToArray(a, p);
	}
	return a;
}

static cJSON *kernels_json(const struct gs_report *r)
{
	cJSON *a = cJSON_CreateArray();
	const struct gs_kernel_stat **v = gs_sorted_kernels(r);
	for (size_t i = 0; v && i < r->nkernels; i++) {
		cJSON *k = cJSON_CreateObject();
		cJSON_AddStringToObject(k, "name", gs_demangle(v[i]->name));
		if (gs_demangle(v[i]->name) != v[i]->name)
			cJSON_AddStringToObject(k, "mangled", v[i]->name);
		cJSON_AddNumberToObject(k, "count", (double)v[i]->count);
		cJSON_AddNumberToObject(k, "host_ns", (double)v[i]->total_ns);
		if (v[i]->count) {
			cJSON_AddNumberToObject(k, "host_min_ns", (double)v[i]->min_ns);
			cJSON_AddNumberToObject(k, "host_max_ns", (double)v[i]->max_ns);
		} else { /* seen on the GPU only (a graph's kernels): no launch call */
			cJSON_AddNullToObject(k, "host_min_ns");
			cJSON_AddNullToObject(k, "host_max_ns");
		}
		if (gpu_mode) {
			cJSON_AddNumberToObject(k, "gpu_count", (double)v[i]->gpu_count);
			cJSON_AddNumberToObject(k, "gpu_ns", (double)v[i]->gpu_total_ns);
			cJSON_AddNumberToObject(k, "gpu_min_ns", (double)(v[i]->gpu_count ? v[i]->gpu_min_ns : 0));
			cJSON_AddNumberToObject(k, "gpu_max_ns", (double)v[i]->gpu_max_ns);
		} else {
			cJSON_AddNullToObject(k, "gpu_ns");
		}
		cJSON_AddItemToArray(a, k);
	}
	free(v);
	return a;
}

static cJSON *diag_json(struct gs_report *const *procs, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i]->ndiag; j++) {
			cJSON *d = cJSON_CreateObject();
			cJSON_AddStringToObject(d, "id", procs[i]->diag[j].id);
			cJSON_AddNumberToObject(d, "pid", procs[i]->proc.pid);
			cJSON_AddStringToObject(d, "text", procs[i]->diag[j].text);
			const struct gs_diag *g = &procs[i]->diag[j];
			if (g->how) { /* what the change would save, and how that was computed */
				cJSON *s = cJSON_AddObjectToObject(d, "saving");
				cJSON_AddNumberToObject(s, "ns", (double)g->save_ns);
				cJSON_AddNumberToObject(s, "steps", (double)g->steps);
				cJSON_AddNumberToObject(s, "per_step_ns", g->steps ? (double)(g->save_ns / g->steps) : 0);
				cJSON_AddStringToObject(s, "bound", g->about ? "estimate" : "upper");
				cJSON_AddStringToObject(s, "how", g->how);
			}
			cJSON_AddItemToArray(a, d);
		}
	return a;
}

static void summary_json(cJSON *o, const struct gs_report *r)
{
	cJSON_AddNumberToObject(o, "duration_ns", (double)(r->t_last - r->t_first));
	cJSON_AddNumberToObject(o, "windows", r->windows);
	cJSON_AddNumberToObject(o, "paused_ns", (double)r->paused_ns);
	cJSON_AddNumberToObject(o, "events", (double)r->nevents);
	cJSON_AddNumberToObject(o, "dropped", (double)r->proc.dropped);
	cJSON_AddNumberToObject(o, "stacks_taken", (double)r->proc.stacks_taken);
	cJSON_AddNumberToObject(o, "stacks_ns", (double)r->proc.stacks_ns);
	uint64_t records, own = gs_own_ns(r, &records);
	cJSON *w = cJSON_AddObjectToObject(o, "own_time");
	cJSON_AddNumberToObject(w, "estimate_ns", (double)own);
	cJSON_AddNumberToObject(w, "host_records", (double)records);
	cJSON_AddNumberToObject(w, "record_ns", GS_RECORD_COST_NS);
	cJSON *t = cJSON_AddObjectToObject(o, "totals");
	cats_json(t, &r->total);
	cJSON_AddItemToObject(o, "phases", phases_json(r));
	cJSON_AddItemToObject(o, "kernels", kernels_json(r));
	gs_tele_json(o, r);
	gs_captured_json(o, r);
	cJSON *fl = cJSON_AddArrayToObject(o, "failed");
	for (size_t i = 0; i < r->nfailed; i++) {
		const struct gs_failed *x = &r->failed[i];
		char e[32];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "api", x->api);
		cJSON_AddNumberToObject(j, "result", x->result);
		cJSON_AddStringToObject(j, "error", gs_cuda_error(x->api, x->result, e, sizeof(e)));
		cJSON_AddNumberToObject(j, "count", (double)x->count);
		cJSON_AddNumberToObject(j, "first_ns", (double)(x->first_ns - r->t_first));
		cJSON_AddNumberToObject(j, "first_bytes", (double)x->first_bytes);
		cJSON_AddNumberToObject(j, "bytes", (double)x->bytes);
		cJSON_AddItemToArray(fl, j);
	}
	if (gpu_mode || events_mode) {
		cJSON *g = cJSON_AddObjectToObject(o, "gpu");
		cJSON *devs = cJSON_AddArrayToObject(g, "devices");
		for (int i = 0; i < GSPY_DEVICES; i++) {
			const struct gs_device_gpu *x = &r->dev[i];
			if (!(gpu_mode ? x->ops : x->spans))
				continue;
			cJSON *d = cJSON_CreateObject();
			cJSON_AddNumberToObject(d, "device", i);
			if (gpu_mode) {
				cJSON_AddNumberToObject(d, "busy_ns", (double)x->busy_ns);
				cJSON_AddNumberToObject(d, "busy_in_phases_ns", (double)x->phase_busy_ns);
				cJSON_AddNumberToObject(d, "idle_host_bound_ns", (double)x->idle_host_ns);
				cJSON_AddNumberToObject(d, "idle_other_ns", (double)x->idle_other_ns);
			} else {
				cJSON_AddNumberToObject(d, "span_ns", (double)x->span_ns);
				cJSON_AddNumberToObject(d, "spans", (double)x->spans);
				cJSON_AddNumberToObject(d, "phases_span_ns", (double)x->phase_span_ns);
				cJSON_AddNumberToObject(d, "phases_spans", (double)x->phase_spans);
			}
			cJSON_AddItemToArray(devs, d);
		}
		if (gpu_mode) {
			cJSON_AddNumberToObject(g, "records", (double)r->gpu_records);
			cJSON_AddNumberToObject(g, "matched", (double)r->gpu_matched);
			cJSON_AddNumberToObject(g, "queue_delay_mean_ns",
						r->queue_n ? (double)(r->queue_sum_ns / r->queue_n) : 0);
			cJSON_AddNumberToObject(g, "queue_delay_max_ns", (double)r->queue_max_ns);
			cJSON_AddNumberToObject(g, "graph_kernels", (double)r->graph_kernels);
			cJSON_AddNumberToObject(g, "graph_kernel_ns", (double)r->graph_kernel_ns);
		}
	}
	gs_sites_json(o, &r->sites);
	cJSON *m = cJSON_AddObjectToObject(o, "memory");
	cJSON_AddNumberToObject(m, "peak_reserved_bytes", (double)(r->peak_reserved > 0 ? r->peak_reserved : 0));
	if (r->device_total)
		cJSON_AddNumberToObject(m, "device_total_bytes", (double)r->device_total);
	else
		cJSON_AddNullToObject(m, "device_total_bytes");
}

cJSON *gs_report_json(struct gs_report *const *procs, size_t n, const struct gs_report *whole)
{
	cJSON *o = cJSON_CreateObject();
	gpu_mode = whole->gpu_timing == GSPY_GPU_TIMING_cupti;
	events_mode = whole->gpu_timing == GSPY_GPU_TIMING_events;
	cJSON_AddStringToObject(o, "timing", gpu_mode ? "gpu" : events_mode ? "events" : "host");
	summary_json(o, whole);
	cJSON_AddItemToObject(o, "diagnoses", diag_json(procs, n));
	cJSON *rk = gs_ranks_json(procs, n);
	if (cJSON_IsNull(rk))
		cJSON_Delete(rk);
	else
		cJSON_AddItemToObject(o, "ranks", rk);
	cJSON *ps = cJSON_AddArrayToObject(o, "processes");
	for (size_t i = 0; i < n; i++) {
		const struct gs_report *r = procs[i];
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "file", r->path);
		cJSON_AddNumberToObject(p, "pid", r->proc.pid);
		cJSON_AddNumberToObject(p, "ppid", r->proc.ppid);
		cJSON_AddStringToObject(p, "host", r->proc.host);
		cJSON_AddNumberToObject(p, "rank", r->proc.rank);
		cJSON_AddStringToObject(p, "label", r->label);
		cJSON_AddStringToObject(p, "command", r->proc.command);
		cJSON_AddStringToObject(p, "state", gs_state_name(r->proc.state));
		cJSON_AddStringToObject(p, "gpu_timing", gs_gpu_timing_name(r->gpu_timing));
		cJSON_AddStringToObject(p, "framework", gs_framework_names[r->framework]);
		cJSON_AddBoolToObject(p, "clean_exit", r->proc.state == GSPY_STATE_EXITED);
		cJSON_AddNumberToObject(p, "overwritten", (double)r->proc.overwritten);
		cJSON_AddNumberToObject(p, "stack_min_ns", (double)r->proc.stack_min_ns);
		cJSON_AddNumberToObject(p, "wait_stack_min_ns", (double)r->proc.wait_stack_min_ns);
		cJSON_AddBoolToObject(p, "incomplete", r->proc.state != GSPY_STATE_EXITED ||
							 r->proc.truncated || r->input_error[0]);
		summary_json(p, r);
		cJSON_AddItemToObject(p, "diagnoses", diag_json(&procs[i], 1));
		cJSON_AddItemToArray(ps, p);
	}
	return o;
}
