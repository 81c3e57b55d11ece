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
#include "util/units.h"
#include "util/xalloc.h"

const char *const gs_alloc_names[GS_ALLOC_KINDS] = { "device", "pinned", "managed", "host" };

/* The slot of name in the phases' index: its phase's, or the empty one
 * where it would go. */
static uint32_t *phase_slot(const struct gs_report *r, const char *name)
{
	size_t i = (size_t)gs_str_hash(name) & (r->phase_ix_cap - 1);
	while (r->phase_ix[i] && strcmp(r->phases[r->phase_ix[i] - 1].name, name))
		i = (i + 1) & (r->phase_ix_cap - 1);
	return &r->phase_ix[i];
}

/* A phase's index by name, made at its first sight. Indexed: a trace of
 * 100,000 phase names (an NVTX range a step, named by its number) took
 * 72 s to report by a scan of the names for each event. */
size_t gs_report_phase(struct gs_report *r, const char *name)
{
	if (2 * (r->nphases + 1) > r->phase_ix_cap) {
		free(r->phase_ix);
		r->phase_ix_cap = r->phase_ix_cap ? 2 * r->phase_ix_cap : 64;
		r->phase_ix = xcalloc(r->phase_ix_cap, sizeof(*r->phase_ix));
		for (size_t i = 0; i < r->nphases; i++)
			*phase_slot(r, r->phases[i].name) = (uint32_t)i + 1;
	}
	uint32_t *slot = phase_slot(r, name);
	if (*slot)
		return *slot - 1;
	*slot = (uint32_t)r->nphases + 1;
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

const struct gs_loader *gs_loader_at(const struct gs_report *r, uint64_t before)
{
	const struct gs_loader_pass *best = NULL;
	for (size_t i = 0; i < r->nloader_pass; i++)
		if (r->loader_pass[i].ns <= before && (!best || r->loader_pass[i].ns >= best->ns))
			best = &r->loader_pass[i];
	return best ? &r->loader[best->loader] : r->nloaders ? &r->loader[0] : NULL;
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
	free(r->loader);
	free(r->loader_pass);
	gs_series_free(r->series);
	memset(r, 0, sizeof(*r));
}
