/* SPDX-License-Identifier: MIT */
/*
 * The copies section: copies and memsets by phase, direction and host
 * memory (pageable or pinned), their bytes, time and bandwidth, from the
 * categories the phases section counts (phases.c); --json has them there.
 */
#include <stdio.h>

#include "report/report.h"
#include "report/section.h"
#include "util/escape.h"
#include "util/units.h"

void gs_copies_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	int header = 0;
	for (size_t i = 0; i <= r->nphases; i++) {
		const struct gs_cats *c = i < r->nphases ? &r->phases[i].c : &r->total;
		char nm[4 * 14 + 1]; /* one line: a newline in a phase's name would pass for a row */
		const char *name = i < r->nphases ? gs_term_line(nm, sizeof(nm), r->phases[i].name, 14) : "total";
		if (i == r->nphases && r->nphases == 1)
			break; /* only "(no phase)": its rows are the totals */
		for (int d = 1; d <= GSPY_DIR_COUNT; d++)
			for (int p = 0; p < 2; p++) {
				/* d == GSPY_DIR_COUNT is the memset row */
				int ms = d == GSPY_DIR_COUNT;
				if (ms && p)
					continue;
				const struct gs_agg *a = ms ? &c->memset : &c->copy[d][p];
				const struct gs_agg *s = ms ? &c->memset : &c->copy_sync[d][p];
				if (!a->count && !a->gpu_count)
					continue;
				if (!header++)
					fprintf(f, "\n  %sCopies and memsets%s %9s %7s %10s %10s %10s %9s\n", st->bold,
						st->reset, "", "count", "bytes", st->gpu_mode ? "GPU time" : "time",
						st->gpu_mode ? "GPU GB/s" : "sync GB/s", "async");
				char kind[32], b1[32], b2[32], b3[32], b4[32];
				int host = d == GSPY_DIR_h2d || d == GSPY_DIR_d2h || d == GSPY_DIR_h2h;
				snprintf(kind, sizeof(kind), "%s %s", ms ? "memset" : gs_dir_name((unsigned)d),
					 host ? (p ? "pinned" : "pageable") : "");
				if (st->gpu_mode)
					fprintf(f, "  %-14s %-14s %7s %10s %10s %10s %9s\n", name, kind,
						gs_fmt_count(b1, a->count ? a->count : a->gpu_count),
						gs_fmt_bytes(b2, a->bytes ? a->bytes : a->gpu_bytes),
						gs_fmt_ns(b3, a->gpu_ns), gs_fmt_rate(b4, a->gpu_bytes, a->gpu_ns),
						ms ? "-" : gs_fmt_count((char[32]){ 0 }, a->count - s->count));
				else
					fprintf(f, "  %-14s %-14s %7s %10s %10s %10s %9s\n", name, kind,
						gs_fmt_count(b1, a->count), gs_fmt_bytes(b2, a->bytes),
						gs_fmt_ns(b3, a->host_ns),
						ms ? "-" : gs_fmt_rate(b4, s->bytes, s->host_ns),
						ms ? "-" : gs_fmt_count((char[32]){ 0 }, a->count - s->count));
			}
	}
	if (header && !st->gpu_mode)
		fprintf(f, "  (GB/s over synchronous copies only: an asynchronous copy returns before it is done)\n");
}
