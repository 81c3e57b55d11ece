/* SPDX-License-Identifier: MIT */
/*
 * The report's pass (pass.h): one streaming pass over a process's events.
 * It cuts out the time recording was paused, follows the phases
 * (timeline.c), finds the phase each event belongs to, and hands the
 * event to the sections fed its class (section.h), in the table's order;
 * at the end it finishes the sections, then has them diagnose. Memory
 * grows with the number of distinct phase and kernel names, never with
 * the number of events.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "report/pass.h"
#include "report/section.h"
#include "report/series.h"
#include "util/xalloc.h"

#define CORR_SLOTS (1u << 20)

/*
 * Recording paused and resumed (gpuspy_pause, `gpuspy stop`/`start`): the
 * time between is left out of every figure, as if the windows were one
 * run. Timestamps after a resume move back by all that was paused; what
 * the trace holds from inside a pause (GPU work CUPTI delivered meanwhile;
 * a process started paused starts CUPTI just before its first window) is
 * skipped: its host calls were not recorded. 0: skip the event.
 */
struct window_cut {
	int paused, before_first; /* before_first: started paused, no window yet */
	uint64_t since, total;    /* the open pause's start; the time cut so far */
};

static int window_cut(struct window_cut *c, struct gs_report *r, struct gs_ev *ev)
{
	int mark = ev->kind == GSPY_KIND_mark;
	if (mark && ev->api == GSPY_API_gpuspy_resume) {
		if (c->paused && !c->before_first)
			c->total += ev->start_ns > c->since ? ev->start_ns - c->since : 0;
		c->paused = c->before_first = 0;
		r->windows++;
	} else if (!r->windows && !c->paused && ev->kind < GSPY_KIND_gpu_kernel) {
		r->windows = 1; /* a host call before any pause: recording from the start */
	}
	if (c->before_first)
		return 0;
	if (c->paused) {
		if (ev->start_ns > c->since)
			return 0;
		if (ev->end_ns > c->since)
			ev->end_ns = c->since; /* a call the pause came in the middle of */
	}
	if (mark && ev->api == GSPY_API_gpuspy_pause && !c->paused) {
		c->paused = 1;
		c->since = ev->start_ns;
	}
	ev->start_ns = ev->start_ns > c->total ? ev->start_ns - c->total : 0;
	ev->end_ns = ev->end_ns > c->total ? ev->end_ns - c->total : 0;
	r->paused_ns = c->total;
	return 1;
}

/* The event to every section fed its class, in the table's order. */
static void feed(struct gs_pass *p, unsigned feed, const struct gs_ev *ev, size_t phase)
{
	for (size_t i = 0; i < gs_nsections; i++)
		if (gs_sections[i].event && (gs_sections[i].feeds & feed))
			gs_sections[i].event(p, feed, ev, phase);
}

static struct gs_corr_slot *corr_slot(struct gs_pass *p, uint64_t id)
{
	if (!p->corr) {
		p->corr = calloc(CORR_SLOTS, sizeof(*p->corr));
		if (!p->corr)
			return NULL;
	}
	return &p->corr[(id ^ (id >> 29)) * 0x9E3779B97F4A7C15ull >> 46];
}

/* A GPU record belongs to the phase that launched it, found through its
 * correlation id with the launching call's start; else to the phase open
 * now (cur). */
static size_t launching_phase(struct gs_pass *p, const struct gs_ev *ev, size_t cur)
{
	struct gs_report *r = p->r;
	struct gs_corr_slot *s = ev->corr ? corr_slot(p, ev->corr) : NULL;
	size_t ph = cur;
	p->launched_at = 0;
	r->gpu_records++;
	if (s && s->id == ev->corr) {
		ph = s->phase < r->nphases ? s->phase : cur;
		p->launched_at = s->host_start;
		r->gpu_matched++;
	}
	return ph;
}

/* The PyTorch helper's mark of a pass over a DataLoader: "DataLoader
 * num_workers=N", then " made at FUNC (FILE:LINE)" where it knew. */
static void loader_mark(struct gs_report *r, const struct gs_ev *ev)
{
	static const char pre[] = "DataLoader num_workers=", made[] = " made at ";
	const char *name = ev->name;
	if (!name || strncmp(name, pre, sizeof(pre) - 1) || !isdigit((unsigned char)name[sizeof(pre) - 1]))
		return;
	char *end;
	unsigned long n = strtoul(name + sizeof(pre) - 1, &end, 10);
	if (*end != '\0' && strncmp(end, made, sizeof(made) - 1))
		return;
	if (n > 4096)
		return;
	if (n > r->loader_workers)
		r->loader_workers = (unsigned)n; /* until the loop's own is known (gs_loader_at) */
	const char *at = *end ? end + sizeof(made) - 1 : NULL;
	if (!at || !*at || strlen(at) >= sizeof(r->loader[0].at))
		return;
	size_t i = 0;
	while (i < r->nloaders && (strcmp(r->loader[i].at, at) || r->loader[i].workers != n))
		i++;
	if (i == r->nloaders) {
		if (i == GS_LOADERS)
			return; /* the first made are kept */
		if (!r->loader)
			r->loader = xcalloc(GS_LOADERS, sizeof(*r->loader));
		snprintf(r->loader[i].at, sizeof(r->loader[i].at), "%s", at);
		r->loader[r->nloaders++].workers = (unsigned)n;
	}
	if (r->nloader_pass == r->loader_pass_cap) {
		r->loader_pass_cap = r->loader_pass_cap ? 2 * r->loader_pass_cap : 16;
		r->loader_pass = xrealloc(r->loader_pass, r->loader_pass_cap * sizeof(*r->loader_pass));
	}
	r->loader_pass[r->nloader_pass++] = (struct gs_loader_pass){ .ns = ev->start_ns, .loader = i };
}

/* An event that is not a phase's: its class and its phase. */
static void hand_out(struct gs_pass *p, const struct gs_ev *ev)
{
	size_t cur = gs_timeline_current(p);
	if (ev->kind == GSPY_KIND_mark) {
		loader_mark(p->r, ev);
		gs_fault_mark(p, ev);
		return;
	}
	if (ev->kind == GSPY_KIND_nvml) {
		feed(p, GS_FEED_NVML, ev, cur);
		return;
	}
	if (ev->kind == GSPY_KIND_gpu_span) { /* named by the phase its interval belonged to */
		feed(p, GS_FEED_SPAN, ev, ev->name && *ev->name ? gs_report_phase(p->r, ev->name) : 0);
		return;
	}
	if (ev->kind >= GSPY_KIND_gpu_kernel && ev->kind <= GSPY_KIND_gpu_memset) {
		feed(p, GS_FEED_GPU, ev, launching_phase(p, ev, cur));
		return;
	}
	if (ev->corr) {
		struct gs_corr_slot *cs = corr_slot(p, ev->corr);
		if (cs)
			*cs = (struct gs_corr_slot){ ev->corr, ev->start_ns, (uint32_t)cur };
	}
	if (ev->captured && ev->result == 0) {
		feed(p, GS_FEED_CAPTURED, ev, cur);
		return; /* it did not run: the graph's launches will */
	}
	if (ev->result != 0 && ((ev->kind >= GSPY_KIND_alloc && ev->kind <= GSPY_KIND_unmap) ||
				ev->kind == GSPY_KIND_graph)) {
		feed(p, GS_FEED_FAILED, ev, cur);
		return; /* not done: in no total, bandwidth, site or memory */
	}
	if (gspy_kind_graph(ev->kind)) {
		feed(p, GS_FEED_GRAPH, ev, cur);
		return;
	}
	if (ev->kind == GSPY_KIND_launch && gspy_api_graph_launch(ev->api))
		feed(p, GS_FEED_GRAPH, ev, cur);
	feed(p, GS_FEED_HOST, ev, cur);
}

int gs_report_file(const char *path, int nofollow, struct gs_report *r, char *err, size_t errlen)
{
	struct gs_input in;
	memset(r, 0, sizeof(*r));
	int rc = gs_input_open(path, nofollow, &in, err, errlen);
	if (rc)
		return rc;
	r->path = path;
	r->proc = in.proc;
	r->nprocs = 1;
	r->gpu_timing = in.proc.gpu_timing;
	if (r->proc.rank >= 0)
		snprintf(r->label, sizeof(r->label), "rank %d (pid %u)", r->proc.rank, r->proc.pid);
	else
		snprintf(r->label, sizeof(r->label), "pid %u", r->proc.pid);
	gs_report_phase(r, "(no phase)");
	struct gs_pass p = { .r = r, .in = &in };
	struct gs_ev ev;
	struct window_cut cut = { .paused = in.proc.start_paused, .before_first = in.proc.start_paused };
	int got;
	while ((got = gs_input_next(&in, &ev)) == 1) {
		if (!window_cut(&cut, r, &ev))
			continue;
		if (!r->nevents++) {
			r->t_first = ev.start_ns;
			r->series = gs_series_on ? gs_series_new(ev.start_ns) : NULL;
		}
		if (ev.end_ns > r->t_last)
			r->t_last = ev.end_ns;
		feed(&p, GS_FEED_EVENT, &ev, gs_timeline_current(&p));
		size_t began;
		if (!gs_timeline_event(&p, &ev, &began))
			hand_out(&p, &ev);
		else if (began != SIZE_MAX)
			feed(&p, GS_FEED_PHASE, &ev, began);
	}
	gs_series_end(r->series, r, r->t_last);
	for (size_t i = 0; i < gs_nsections; i++)
		if (gs_sections[i].finish)
			gs_sections[i].finish(&p);
	if (got < 0)
		snprintf(r->input_error, sizeof(r->input_error), "%s", in.err);
	gs_timeline_end(&p);
	free(p.corr);
	gs_input_close(&in);
	gs_framework_detect(r);
	for (size_t i = 0; i < gs_nsections; i++)
		if (gs_sections[i].diagnose)
			gs_sections[i].diagnose(r);
	return 0;
}
