/* SPDX-License-Identifier: MIT */
/*
 * What belongs to libraries and frameworks rather than to the program: the
 * NVTX ranges libraries open (which nest inside the user's phases), and the
 * framework a process runs on (whose terms the diagnoses advise in).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "util/escape.h"

const char *const gs_framework_names[GS_FW_COUNT] = { "CUDA", "PyTorch", "JAX", "CuPy" };

/* The framework, from the evidence: XLA's ranges or frames, PyTorch's
 * phases or frames or kernels, CuPy's frames or kernels. */
void gs_framework_detect(struct gs_report *r)
{
	unsigned seen = r->fw_seen;
	seen |= (r->sites.owners & 1 ? 1u << GS_FW_PYTORCH : 0) | (r->sites.owners & 2 ? 1u << GS_FW_JAX : 0) |
		(r->sites.owners & 4 ? 1u << GS_FW_CUPY : 0);
	for (size_t i = 0; i < r->nphases; i++)
		if (r->phases[i].library && !strncmp(r->phases[i].name, "Xla", 3))
			seen |= 1u << GS_FW_JAX;
	for (size_t i = 0; i < r->kernels_cap; i++) {
		const char *k = r->kernels[i].name;
		if (!k)
			continue;
		if (!strncmp(k, "cupy", 4))
			seen |= 1u << GS_FW_CUPY;
		else if (strstr(k, "at::native::") || strstr(k, "c10::"))
			seen |= 1u << GS_FW_PYTORCH;
	}
	r->fw_seen = seen;
	r->framework = seen & 1u << GS_FW_JAX ? GS_FW_JAX : seen & 1u << GS_FW_PYTORCH ? GS_FW_PYTORCH
		       : seen & 1u << GS_FW_CUPY ? GS_FW_CUPY : GS_FW_CUDA;
}

/* The libraries' own ranges (CUB, XLA, ...): inside the user's phases, which
 * keep their calls and GPU work. Grouped by the name before its ":#"
 * arguments (XLA's "XlaPass:#name=...,module=...#"); the longest three
 * groups by wall time (all with --all), and how many in all. */
struct lib_group {
	char name[64];
	uint64_t names, count, wall_ns;
};

static int cmp_group(const void *a, const void *b)
{
	const struct lib_group *x = a, *y = b;
	return x->wall_ns < y->wall_ns ? 1 : x->wall_ns > y->wall_ns ? -1 : strcmp(x->name, y->name);
}

void gs_library_ranges_print(FILE *f, const struct gs_report *r, int all)
{
	struct lib_group *g = NULL;
	size_t ng = 0, cap = 0;
	uint64_t count = 0;
	for (size_t i = 0; i < r->nphases; i++) {
		const struct gs_phase_stat *p = &r->phases[i];
		if (!p->library)
			continue;
		count += p->count;
		const char *cut = strstr(p->name, ":#");
		int len = cut ? (int)(cut - p->name) : (int)strlen(p->name);
		char key[64];
		snprintf(key, sizeof(key), "%.*s", len, p->name);
		size_t j = 0;
		while (j < ng && strcmp(g[j].name, key))
			j++;
		if (j == ng) {
			if (ng == cap) {
				cap = cap ? cap * 2 : 16;
				g = xrealloc(g, cap * sizeof(*g));
			}
			memset(&g[ng], 0, sizeof(g[ng]));
			snprintf(g[ng].name, sizeof(g[ng].name), "%s", key);
			ng++;
		}
		g[j].names++;
		g[j].count += p->count;
		g[j].wall_ns += p->wall_ns;
	}
	if (!ng)
		return;
	qsort(g, ng, sizeof(*g), cmp_group);
	size_t show = all || ng <= 4 ? ng : 3;
	fprintf(f, "  Libraries' own ranges, inside the phases above (which keep their time): %llu range%s\n",
		(unsigned long long)count, count == 1 ? "" : "s");
	for (size_t i = 0; i < show; i++) {
		char w[32], names[32] = "", nm[4 * 40 + 1]; /* the trace's bytes, on one line */
		if (g[i].names > 1)
			snprintf(names, sizeof(names), "  (%llu names)", (unsigned long long)g[i].names);
		fprintf(f, "    %-40s %7llu %9s%s\n", gs_term_line(nm, sizeof(nm), g[i].name, 40), (unsigned long long)g[i].count,
			gs_fmt_ns(w, g[i].wall_ns), names);
	}
	if (show < ng)
		fprintf(f, "    ... and %zu more (gpuspy report --all lists them)\n", ng - show);
	free(g);
}
