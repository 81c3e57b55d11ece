/* SPDX-License-Identifier: MIT */
/*
 * The phase timeline of the pass (pass.h). Phases form one process-wide
 * timeline: an event belongs to the innermost phase open when it started.
 * A phase's wall time is the sum of its occurrences (nested phases count
 * inside their parents); "(no phase)" gets the traced span not covered by
 * any phase. Libraries' ranges (read/ranges.h) are counted apart and take
 * nothing; XLA's runs and compilations of the user's jitted functions are
 * the user's phases, under the function's name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/ranges.h"
#include "report/pass.h"
#include "report/series.h"

#define CHANGES (1u << 16)

/* The index of the ring's last phase change at or before t, or UINT64_MAX
 * when t precedes every change the ring still holds. */
static uint64_t change_at(const struct gs_timeline *tl, uint64_t t)
{
	uint64_t lo = tl->nchanges > CHANGES ? tl->nchanges - CHANGES : 0, hi = tl->nchanges;
	if (t < tl->changes[lo % CHANGES].t)
		return UINT64_MAX;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (tl->changes[mid % CHANGES].t <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

size_t gs_timeline_at(const struct gs_pass *p, uint64_t t, size_t cur)
{
	const struct gs_timeline *tl = &p->tl;
	if (!tl->nchanges)
		return cur;
	uint64_t k = change_at(tl, t);
	if (k == UINT64_MAX)
		return tl->nchanges <= CHANGES ? 0 : cur;
	size_t ph = tl->changes[k % CHANGES].phase;
	return ph < p->r->nphases ? ph : cur;
}

static void note_phase_change(struct gs_timeline *tl, uint64_t t, size_t phase)
{
	if (!tl->changes) {
		tl->changes = calloc(CHANGES, sizeof(*tl->changes));
		if (!tl->changes)
			return;
	}
	tl->changes[tl->nchanges % CHANGES] = (struct gs_phase_change){ t, (uint32_t)phase };
	tl->nchanges++;
}

/* What began before the ring's oldest change takes its phase. */
uint64_t gs_timeline_in_phases(const struct gs_pass *p, uint64_t s, uint64_t e)
{
	const struct gs_timeline *tl = &p->tl;
	if (!tl->nchanges || e <= s)
		return 0;
	uint64_t lo = tl->nchanges > CHANGES ? tl->nchanges - CHANGES : 0, k = change_at(tl, s);
	size_t ph;
	if (k == UINT64_MAX) { /* before the ring's oldest change: take its phase */
		ph = lo == 0 ? 0 : tl->changes[lo % CHANGES].phase;
		k = lo;
	} else {
		ph = tl->changes[k % CHANGES].phase;
		k++;
	}
	uint64_t sum = 0, t = s;
	for (; k < tl->nchanges && tl->changes[k % CHANGES].t < e; k++) {
		uint64_t c = tl->changes[k % CHANGES].t;
		if (ph != 0 && c > t)
			sum += c - t;
		if (c > t)
			t = c;
		ph = tl->changes[k % CHANGES].phase;
	}
	if (ph != 0)
		sum += e - t;
	return sum;
}

size_t gs_timeline_current(const struct gs_pass *p)
{
	return p->tl.depth ? p->tl.stack[p->tl.depth - 1].idx : 0;
}

/* XLA's runs and compilations of the user's jitted functions are the
 * user's phases, under the function's name: ev->name renamed (into
 * buf, which outlives the event's handling). */
static void rename_framework_phase(struct gs_pass *p, struct gs_ev *ev, char *buf, size_t cap, int *compile)
{
	struct gs_timeline *tl = &p->tl;
	*compile = 0;
	if (!ev->name || !gs_framework_phase(ev->name, buf, cap, compile))
		return;
	int compiling = 0;
	for (int k = 0; k < tl->depth && k < GS_PHASE_DEPTH && !*compile; k++)
		compiling |= p->r->phases[tl->stack[k].idx].compile;
	if (!compiling) { /* else a module XLA runs while it compiles: its own range */
		ev->name = buf;
		p->r->fw_seen |= 1u << GS_FW_JAX;
	}
}

/* A library's range begins or ends: counted, attributed nothing. */
static void library_range(struct gs_pass *p, const struct gs_ev *ev, const char *nm)
{
	struct gs_report *r = p->r;
	struct gs_timeline *tl = &p->tl;
	if (ev->kind == GSPY_KIND_phase_begin) {
		size_t ph = gs_report_phase(r, nm);
		r->phases[ph].library = 1;
		r->phases[ph].count++;
		if (tl->ldepth < GS_PHASE_DEPTH)
			tl->lib[tl->ldepth++] = (struct gs_open_phase){ ph, ev->start_ns };
		return;
	}
	int i = tl->ldepth - 1;
	while (i >= 0 && strcmp(r->phases[tl->lib[i].idx].name, nm))
		i--;
	if (i >= 0) {
		r->phases[tl->lib[i].idx].wall_ns += ev->start_ns - tl->lib[i].begin;
		memmove(&tl->lib[i], &tl->lib[i + 1], (size_t)(tl->ldepth - i - 1) * sizeof(tl->lib[0]));
		tl->ldepth--;
	}
}

static size_t phase_begin(struct gs_pass *p, const struct gs_ev *ev, int compile)
{
	struct gs_report *r = p->r;
	struct gs_timeline *tl = &p->tl;
	size_t ph = gs_report_phase(r, ev->name && *ev->name ? ev->name : "(unnamed)");
	if (ev->has_step) /* the PyTorch helper's phases */
		r->fw_seen |= 1u << GS_FW_PYTORCH;
	r->phases[ph].compile |= compile;
	if (!r->phases[ph].count)
		r->phases[ph].first_ns = ev->start_ns;
	/* The loop is under way at a phase's second run; a framework's
	 * second compilation is not the loop. */
	if (++r->phases[ph].count == 2 && !r->phases_repeat && !r->phases[ph].compile)
		r->phases_repeat = 1;
	if (tl->depth == 0)
		tl->top_begin = ev->start_ns;
	if (tl->depth < GS_PHASE_DEPTH)
		tl->stack[tl->depth++] = (struct gs_open_phase){ ph, ev->start_ns };
	note_phase_change(tl, ev->start_ns, tl->stack[tl->depth - 1].idx);
	p->phase_depth = tl->depth - 1;
	return ph;
}

/* Close the innermost open phase of this name (or the innermost one when
 * the name is unknown). */
static void phase_end(struct gs_pass *p, const struct gs_ev *ev)
{
	struct gs_report *r = p->r;
	struct gs_timeline *tl = &p->tl;
	int i = tl->depth - 1;
	while (i >= 0 && ev->name && *ev->name && strcmp(r->phases[tl->stack[i].idx].name, ev->name))
		i--;
	if (i < 0)
		return;
	struct gs_phase_stat *ph = &r->phases[tl->stack[i].idx];
	ph->wall_ns += ev->start_ns - tl->stack[i].begin;
	if (ev->start_ns > ph->last_ns)
		ph->last_ns = ev->start_ns;
	memmove(&tl->stack[i], &tl->stack[i + 1], (size_t)(tl->depth - i - 1) * sizeof(tl->stack[0]));
	if (--tl->depth == 0) {
		tl->covered += ev->start_ns - tl->top_begin;
		gs_series_top_end(r->series, ev->start_ns);
	}
	note_phase_change(tl, ev->start_ns, tl->depth ? tl->stack[tl->depth - 1].idx : 0);
}

int gs_timeline_event(struct gs_pass *p, struct gs_ev *ev, size_t *began)
{
	*began = SIZE_MAX;
	if (ev->kind != GSPY_KIND_phase_begin && ev->kind != GSPY_KIND_phase_end)
		return 0;
	int compile;
	rename_framework_phase(p, ev, p->tl.fw_name, sizeof(p->tl.fw_name), &compile);
	const char *nm = ev->name && *ev->name ? ev->name : "(unnamed)";
	if (gs_library_range(nm) && (ev->kind == GSPY_KIND_phase_begin || p->tl.ldepth))
		library_range(p, ev, nm);
	else if (ev->kind == GSPY_KIND_phase_begin)
		*began = phase_begin(p, ev, compile);
	else
		phase_end(p, ev);
	return 1;
}

void gs_timeline_end(struct gs_pass *p)
{
	struct gs_report *r = p->r;
	struct gs_timeline *tl = &p->tl;
	for (int i = 0; i < tl->depth; i++)
		r->phases[tl->stack[i].idx].wall_ns += r->t_last - tl->stack[i].begin;
	for (int i = 0; i < tl->ldepth; i++)
		r->phases[tl->lib[i].idx].wall_ns += r->t_last - tl->lib[i].begin;
	if (tl->depth)
		tl->covered += r->t_last - tl->top_begin;
	uint64_t span = r->t_last - r->t_first;
	r->phases[0].wall_ns = span > tl->covered ? span - tl->covered : 0;
	r->phases[0].count = 1;
	free(tl->changes);
	tl->changes = NULL;
}
