/* SPDX-License-Identifier: MIT */
/*
 * `gpuspy report --json`: the same numbers as the text report
 * (render/text.c), as one JSON object: the whole, then each process. The
 * frame: the run's own figures, then the sections' keys
 * (report/section.h), the diagnoses, and the sections of all processes
 * at once (the ranks).
 */
#include <string.h>

#include "render/jsonl.h"
#include "render/render.h"
#include "report/report.h"
#include "report/section.h"

/* The sections whose keys come first in the summary, in this order: the
 * order --json has written them in since its first version (readers diff
 * it; tests/golden holds it). The others' come after them, in the table's
 * order. */
static const char *const json_order[] = {
	"phases", "kernels", "telemetry", "graphs", "failed", "gpu", "sites", "memory",
};
#define NJSON_ORDER (sizeof(json_order) / sizeof(json_order[0]))

static size_t json_rank(const char *name)
{
	size_t k = 0;
	while (k < NJSON_ORDER && strcmp(json_order[k], name))
		k++;
	return k;
}

/* The diagnoses (context 0), or the observations shown as context (1). */
static cJSON *diag_json(struct gs_report *const *procs, size_t n, int context)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i]->ndiag; j++) {
			if (procs[i]->diag[j].context != context)
				continue;
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

static void summary_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
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
	for (size_t k = 0; k <= NJSON_ORDER; k++)
		for (size_t i = 0; i < gs_nsections; i++)
			if (gs_sections[i].json && json_rank(gs_sections[i].name) == k)
				gs_sections[i].json(o, r, st);
}

cJSON *gs_report_json(struct gs_report *const *procs, size_t n, const struct gs_report *whole)
{
	cJSON *o = cJSON_CreateObject();
	const struct gs_style st = {
		.bold = "", .yellow = "", .reset = "",
		.gpu_mode = whole->gpu_timing == GSPY_GPU_TIMING_cupti,
		.events_mode = whole->gpu_timing == GSPY_GPU_TIMING_events,
	};
	cJSON_AddStringToObject(o, "timing", st.gpu_mode ? "gpu" : st.events_mode ? "events" : "host");
	summary_json(o, whole, &st);
	cJSON_AddItemToObject(o, "diagnoses", diag_json(procs, n, 0));
	cJSON_AddItemToObject(o, "context", diag_json(procs, n, 1));
	for (size_t i = 0; i < gs_nsections; i++) {
		if (!gs_sections[i].json_procs)
			continue;
		cJSON *x = gs_sections[i].json_procs(procs, n);
		if (!x || cJSON_IsNull(x))
			cJSON_Delete(x);
		else
			cJSON_AddItemToObject(o, gs_sections[i].name, x);
	}
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
		if (r->proc.exit_code >= 0)
			cJSON_AddNumberToObject(p, "exit_code", r->proc.exit_code);
		if (r->proc.exit_signal) /* died of it, or passed it to the program's handler */
			cJSON_AddNumberToObject(p, r->proc.state == GSPY_STATE_SIGNALED ? "exit_signal" : "signal_seen",
						r->proc.exit_signal);
		cJSON_AddNumberToObject(p, "overwritten", (double)r->proc.overwritten);
		cJSON_AddNumberToObject(p, "stack_min_ns", (double)r->proc.stack_min_ns);
		cJSON_AddNumberToObject(p, "wait_stack_min_ns", (double)r->proc.wait_stack_min_ns);
		cJSON_AddBoolToObject(p, "incomplete", r->proc.state != GSPY_STATE_EXITED ||
							 r->proc.truncated || r->input_error[0]);
		gs_notes_json(p, r->proc.notes, r->proc.notes_lost);
		summary_json(p, r, &st);
		cJSON_AddItemToObject(p, "diagnoses", diag_json(&procs[i], 1, 0));
		cJSON_AddItemToObject(p, "context", diag_json(&procs[i], 1, 1));
		cJSON_AddItemToArray(ps, p);
	}
	return o;
}
