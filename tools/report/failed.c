/* SPDX-License-Identifier: MIT */
/*
 * The failed calls: counted here, per entry point and error code, and
 * nowhere else (no totals, bandwidths, sites or memory); printed below
 * the memory section, and --json's "failed".
 */
#include <stdio.h>

#include "report/report.h"
#include "report/section.h"
#include "util/cuda_errors.h"
#include "util/units.h"

/* Calls that returned an error, apart: no total above counts them. */
void gs_failed_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	if (!r->nfailed && !r->failed_other)
		return;
	uint64_t n = r->failed_other;
	for (size_t i = 0; i < r->nfailed; i++)
		n += r->failed[i].count;
	fprintf(f, "\n  %s%llu failed %s%s (in no total above)\n", st->bold, (unsigned long long)n,
		gs_pl(n, "call", "calls"), st->reset);
	for (size_t i = 0; i < r->nfailed; i++) {
		const struct gs_failed *x = &r->failed[i];
		char e[32], a[32], b[32];
		fprintf(f, "  %-26s %s (%d): %llu %s, the first at %s", x->api, gs_cuda_error(x->api, x->result, e, sizeof(e)),
			x->result, (unsigned long long)x->count, gs_pl(x->count, "time", "times"),
			gs_fmt_ns(a, x->first_ns - r->t_first));
		if (x->first_bytes)
			fprintf(f, " for %s", gs_fmt_bytes(b, x->first_bytes));
		fprintf(f, "\n");
	}
	if (r->failed_other)
		fprintf(f, "  and %llu more of other kinds\n", (unsigned long long)r->failed_other);
}

void gs_failed_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	(void)st;
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
}
