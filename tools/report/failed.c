/* SPDX-License-Identifier: MIT */
/*
 * The failed calls: counted here, per entry point and error code, and
 * nowhere else (no totals, bandwidths, sites or memory); printed below
 * the memory section, and --json's "failed".
 */
#include <stdio.h>

#include "report/pass.h"
#include "report/report.h"
#include "report/section.h"
#include "util/cuda_errors.h"
#include "util/units.h"

/* count failed calls of api with result, the first at t asking for
 * first_bytes, bytes in all. */
static void count_failed(struct gs_report *r, const char *api, int result, uint64_t t, uint64_t first_bytes,
			 uint64_t count, uint64_t bytes)
{
	size_t i = 0;
	while (i < r->nfailed && !(r->failed[i].api == api && r->failed[i].result == result))
		i++;
	if (i == r->nfailed) {
		if (i == sizeof(r->failed) / sizeof(r->failed[0])) {
			r->failed_other += count;
			return;
		}
		r->failed[r->nfailed++] = (struct gs_failed){ api, result, 0, t, first_bytes, 0 };
	}
	struct gs_failed *f = &r->failed[i];
	if (t < f->first_ns) {
		f->first_ns = t;
		f->first_bytes = first_bytes;
	}
	f->count += count;
	f->bytes += bytes;
}

void gs_failed_event(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t cur)
{
	(void)feed;
	(void)cur;
	count_failed(p->r, gs_api_name(ev->api), ev->result, ev->start_ns, ev->bytes, 1, ev->bytes);
}

void gs_failed_merge(struct gs_report *d, const struct gs_report *s)
{
	for (size_t i = 0; i < s->nfailed; i++) {
		const struct gs_failed *f = &s->failed[i];
		count_failed(d, f->api, f->result, f->first_ns, f->first_bytes, f->count, f->bytes);
	}
	d->failed_other += s->failed_other;
}

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
