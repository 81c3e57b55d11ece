/* SPDX-License-Identifier: MIT */
/*
 * The post-mortem's first fact: a GPU kernel that never ended (a
 * device-side assert or fault: CUPTI gives it a start and no end), where
 * it was launched, and the calls that failed after it. The step section
 * (steps.c) finds it in its ring, which also holds the launch it joins;
 * this says it, in the process's header lines and as --json's `fault`.
 */
#include <stdio.h>

#include "report/section.h"
#include "report/steps.h"
#include "util/cuda_errors.h"
#include "util/units.h"

void gs_steps_fault_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	const struct gs_fault *x = r->steps ? &r->steps->fault : NULL;
	char a[32], e[64];
	if (!x || !x->seen)
		return;
	/* Calls that failed after it make it a fault (a device-side assert's
	 * error is sticky); with none, the program most likely exited with
	 * it queued or running, which is said without alarm. */
	if (x->failed_after)
		fprintf(f, "   %sGPU kernel %.60s started at %s and never ended%s\n     (a device-side assert or "
			   "fault: the calls after it failed)\n", st->yellow, x->name,
			gs_fmt_ns(a, x->start - r->t_first), st->reset);
	else
		fprintf(f, "   GPU kernel %.60s, started at %s, was still running at exit (no end recorded)\n",
			x->name, gs_fmt_ns(a, x->start - r->t_first));
	if (*x->where)
		fprintf(f, "     launched at %s\n", gs_tail_of(x->where, 85));
	if (x->failed_after)
		fprintf(f, "     then %llu %s failed, the first %.40s with %s\n", (unsigned long long)x->failed_after,
			gs_pl(x->failed_after, "call", "calls"), x->first_api,
			gs_cuda_error(x->first_api, x->first_code, e, sizeof(e)));
}

void gs_steps_fault_json(cJSON *o, const struct gs_report *r)
{
	const struct gs_steps *s = r->steps;
	if (s && s->fault.seen) {
		cJSON *x = cJSON_AddObjectToObject(o, "fault");
		cJSON_AddStringToObject(x, "kernel", s->fault.name);
		cJSON_AddStringToObject(x, "what", s->fault.failed_after ? "fault" : "running at exit");
		cJSON_AddNumberToObject(x, "start_ns", (double)(s->fault.start - r->t_first));
		if (*s->fault.where)
			cJSON_AddStringToObject(x, "launched_at", s->fault.where);
		cJSON_AddNumberToObject(x, "failed_after", (double)s->fault.failed_after);
		if (s->fault.failed_after) {
			cJSON_AddStringToObject(x, "first_failed_api", s->fault.first_api);
			cJSON_AddNumberToObject(x, "first_failed_code", s->fault.first_code);
		}
	}
}
