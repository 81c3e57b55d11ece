/* SPDX-License-Identifier: MIT */
/*
 * The report's results (report.h) that are no one section's: the phase
 * table, gpuspy's own time, and freeing a report.
 */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/section.h"
#include "report/series.h"
#include "util/xalloc.h"

const char *const gs_alloc_names[GS_ALLOC_KINDS] = { "device", "pinned", "managed", "host" };

size_t gs_report_phase(struct gs_report *r, const char *name)
{
	for (size_t i = 0; i < r->nphases; i++)
		if (!strcmp(r->phases[i].name, name))
			return i;
	if (r->nphases == r->phases_cap) {
		r->phases_cap = r->phases_cap ? 2 * r->phases_cap : 16;
		r->phases = xrealloc(r->phases, r->phases_cap * sizeof(*r->phases));
	}
	struct gs_phase_stat *p = &r->phases[r->nphases];
	memset(p, 0, sizeof(*p));
	p->name = xstrdup(name);
	return r->nphases++;
}

int gs_data_phase(const char *name)
{
	return name && strcasestr(name, "data") != NULL;
}

uint64_t gs_own_ns(const struct gs_report *r, uint64_t *host_records)
{
	uint64_t n = r->nevents > r->gpu_records ? r->nevents - r->gpu_records : 0;
	if (host_records)
		*host_records = n;
	return n * GS_RECORD_COST_NS + r->proc.stacks_ns;
}

void gs_report_free(struct gs_report *r)
{
	for (size_t i = 0; i < gs_nsections; i++)
		if (gs_sections[i].free)
			gs_sections[i].free(r);
	for (size_t i = 0; i < r->ndiag; i++) {
		free(r->diag[i].text);
		free(r->diag[i].how);
	}
	free(r->diag);
	gs_series_free(r->series);
	memset(r, 0, sizeof(*r));
}
