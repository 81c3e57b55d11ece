/* SPDX-License-Identifier: MIT */
/*
 * Advice you can bet on (the step section's diagnose, section.h): once the
 * step is found (steps.c), each change a diagnosis proposes is replayed
 * (replay.c) and the diagnosis says what that replay saved a step, "about",
 * with the model named. A change the replay shows saves nothing a step (a
 * copy made once before the loop) is no diagnosis of the loop; a change
 * the replay shows saves time that no other diagnosis names (a wait every
 * step, a decode loop's launches) gets a diagnosis of its own, at its
 * line. They come in the order of what they save. Telemetry's
 * observations stay context, nothing to change there, but for clocks held
 * back in a loop the GPU's work holds (gs_tele_loop).
 */
#include <stdlib.h>
#include <string.h>

#include "report/diag.h"
#include "report/section.h"
#include "report/steps.h"
#include "util/units.h"
#include "util/xalloc.h"

/* Which change each diagnosis of the loop proposes. A step of many small
 * launches folds into a graph; a JAX step the host dispatches more slowly
 * than the GPU runs it gives the GPU more per dispatch (lax.scan). Any
 * other host-bound step has no change the replay can make (the host's own
 * work stays): its diagnosis keeps its bound from the totals. */
static int change_of(const char *id, int jax, int graph)
{
	/* A copy back of 1 MiB or more is pinned too; a smaller one is a wait
	 * (its cost is the work before it), which step_waits says. */
	if (!strcmp(id, "pageable_copies") || !strcmp(id, "pageable_copies_d2h"))
		return GS_CH_PIN;
	if (!strcmp(id, "data_starvation"))
		return GS_CH_WORKERS;
	if (!strcmp(id, "sync_stalls") || !strcmp(id, "step_waits"))
		return GS_CH_NOWAIT;
	if (!strcmp(id, "launch_bound") || !strcmp(id, "host_bound"))
		return !jax && graph ? GS_CH_GRAPH : jax ? GS_CH_FUSE : GS_CH_NONE;
	if (!strcmp(id, "allocation_churn"))
		return GS_CH_POOL;
	return GS_CH_NONE;
}

/* 1: d is of the copies back (pageable_copies_d2h), 0: of the uploads. */
static int copy_back(const struct gs_diag *d)
{
	return !strcmp(d->id, "pageable_copies_d2h");
}

/* Telemetry's observations: context, not changes to make. */
static int observation(const char *id)
{
	static const char *const ids[] = { "gpu_util_vs_busy", "power_below_limit", "pcie_link_below_max",
					   "gpu_hot", "clocks_throttled", "other_process_memory" };
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (!strcmp(id, ids[i]))
			return 1;
	return 0;
}

static const char *const model[GS_CH_COUNT] = {
	[GS_CH_PIN] = "the copies replayed as asynchronous copies from pinned memory at %s GB/s (%s)",
	[GS_CH_NOWAIT] = "the waits replayed as not waiting but in one step of " GS_STR(GS_WAIT_EVERY)
			 ", so the host's work after them overlaps the GPU's",
	[GS_CH_GRAPH] = "each step's launches replayed as one graph launch, the kernels back to back",
	[GS_CH_WORKERS] = "the data phase's host work replayed in loader workers, alongside the step",
	[GS_CH_POOL] = "the allocations and frees replayed from a pool: no calls, no synchronization",
	[GS_CH_FUSE] = "the step's host work replayed once every 10 steps (10 steps a dispatch)",
};

/* a * b, or UINT64_MAX past it (a forged trace's times). */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	uint64_t p;
	return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

static void set_saving(struct gs_report *r, struct gs_diag *d, int ch)
{
	const struct gs_steps *s = r->steps;
	char m[512], bw[32], step[32], buf[800];
	snprintf(bw, sizeof(bw), "%.1f", s->pinned_bps / 1e9);
	snprintf(m, sizeof(m), model[ch], bw, s->pinned_from);
	size_t k = strlen(m);
	if (ch == GS_CH_PIN && s->pinnable[0] && s->pinnable[1]) /* the fix, a pinned buffer, serves both */
		snprintf(m + k, sizeof(m) - k, ", the uploads and the copies back alike");
	k = strlen(m);
	if (ch == GS_CH_PIN && s->pinnable[1]) /* replay.c: the host reads what it copies back */
		snprintf(m + k, sizeof(m) - k, " (a copy back that blocked still waits for its bytes)");
	k = strlen(m);
	char handoff[32];
	if (ch == GS_CH_WORKERS && s->handoff_ns) /* replay.h: GS_LOADER_HANDOFF_NS */
		snprintf(m + k, sizeof(m) - k, ", less %s a batch that reaches the main process",
			 gs_fmt_ns(handoff, s->handoff_ns));
	if (ch == GS_CH_WORKERS && s->change[ch].workers) {
		/* How many workers the saving takes: the user's num_workers. */
		const struct gs_step_change *c = &s->change[ch];
		char load[96], to[32];
		k = strlen(m);
		unsigned long long n = (unsigned long long)c->workers;
		int64_t left = (int64_t)s->model_ns - c->save_ns; /* the step replayed with the workers */
		uint64_t after = left > 0 ? (uint64_t)left : 0;
		gs_fmt_ns(load, c->after_ns);
		size_t l = strlen(load);
		snprintf(load + l, sizeof(load) - l, " to load");
		if (s->handoff_ns) { /* steps.c counts a worker's own part of the handoff too */
			char own[32];
			l = strlen(load);
			snprintf(load + l, sizeof(load) - l, " and a worker %s more to hand it over",
				 gs_fmt_ns(own, GS_LOADER_WORKER_NS));
		}
		gs_fmt_ns(to, after);
		if (r->proc.cpus > 1 && c->workers > r->proc.cpus - 1)
			snprintf(m + k, sizeof(m) - k, " (%llu workers would keep up, a batch taking %s; this "
				 "process may use %u CPUs: with %u worker%s the step is %s)", n, load, r->proc.cpus,
				 r->proc.cpus - 1, r->proc.cpus == 2 ? "" : "s", to);
		else
			snprintf(m + k, sizeof(m) - k, " (%llu worker%s keep%s up: a batch takes %s, the step then %s)",
				 n, n == 1 ? "" : "s", n == 1 ? "s" : "", load, to);
	}
	char among[48]; /* evaluation steps in the window: replayed, in no figure a step */
	const char *last = gs_steps_among(s, among, sizeof(among));
	snprintf(buf, sizeof(buf), "%s; replayed over %s%llu steady steps of %s%s", m, last,
		 (unsigned long long)s->window, gs_fmt_ns(step, s->step_ns), among);
	free(d->how);
	d->how = xstrdup(buf);
	d->save_ns = s->change[ch].save_ns > 0 ? mul_sat((uint64_t)s->change[ch].save_ns, s->steps) : 0;
	d->steps = s->steps;
	d->about = !s->change[ch].bound; /* the CPUs' floor: "up to" */
}

static const char *wait_advice(unsigned fw)
{
	switch (fw) {
	case GS_FW_PYTORCH:
		return "Keep values on the device: accumulate the loss in a tensor and call .item() every "
		       GS_STR(GS_WAIT_EVERY) " steps (or log asynchronously), so the host's work runs while the GPU "
		       "computes.";
	case GS_FW_JAX:
		return "Keep values on the device and fetch them every " GS_STR(GS_WAIT_EVERY) " steps (jax.device_get "
		       "of a batch of them); drop block_until_ready() from the step.";
	case GS_FW_CUPY:
		return "Keep values on the device and fetch them every " GS_STR(GS_WAIT_EVERY) " steps; drop per-step "
		       "synchronize.";
	}
	return "Drop the per-step synchronize (or synchronous copy back): order work with events, and read "
	       "results back every " GS_STR(GS_WAIT_EVERY) " steps.";
}

static const char *graph_advice(unsigned fw, int inference)
{
	if (fw == GS_FW_PYTORCH && inference)
		return "Launch once a step: capture the decode step in a CUDA graph (torch.cuda.graphs with a "
		       "static KV cache, torch.compile(mode=\"reduce-overhead\"), generate(..., "
		       "cache_implementation=\"static\")), or decode a larger batch.";
	if (fw == GS_FW_PYTORCH)
		return "Launch once a step: capture the step in a CUDA graph (torch.cuda.graphs, "
		       "torch.compile(mode=\"reduce-overhead\")), or give the GPU more per launch (a larger batch).";
	return "Launch once a step: capture the step in a CUDA graph (cudaStreamBeginCapture, "
	       "cudaGraphLaunch), or fuse its kernels.";
}

/* "once", "3 times", "1.5 times": count over steps. */
static const char *times(char *buf, size_t cap, uint64_t count, uint64_t steps)
{
	if (count == steps)
		snprintf(buf, cap, "once");
	else if (count % steps == 0)
		snprintf(buf, cap, "%llu times", (unsigned long long)(count / steps));
	else
		snprintf(buf, cap, "%.1f times", (double)count / (double)steps);
	return buf;
}

/* A loop of forwards: no backward nor optimizer phase ran (the PyTorch
 * helper's), and forwards did or no phase repeats (a batched generate's
 * data and forward phases repeat: inference still). */
static int inferring(const struct gs_report *r)
{
	int forward = 0;
	for (size_t i = 1; i < r->nphases; i++) {
		if (!r->phases[i].count)
			continue;
		if (!strcmp(r->phases[i].name, "backward") || !strcmp(r->phases[i].name, "optimizer"))
			return 0;
		forward |= !strcmp(r->phases[i].name, "forward");
	}
	return forward || !r->phases_repeat;
}

/* The diagnosis of change ch that no other names, said (its saving not
 * set); 1 where one was added. */
static int add_said(struct gs_report *r, int ch)
{
	const struct gs_steps *s = r->steps;
	size_t before = r->ndiag;
	char a[32], b[32], c[32];
	int inference = inferring(r);
	if (ch == GS_CH_NOWAIT) {
		const struct gs_step_change *w = &s->change[ch];
		/* With little host work after the waits, what the change gives
		 * back is each wait's round trip: the wait's return, then the
		 * next launch's way to the GPU, while the GPU idles. */
		int little = w->after_ns < s->step_ns / 100;
		gs_diag_add(r, "step_waits", "Each step waits for the GPU %s%s%s, %s%s%s\n%s",
			    times(c, sizeof(c), w->count, s->window), *w->where ? " at " : "", w->where,
			    little ? "and the GPU idles from the end of its work until the wait returns and the host's "
				     "next launch reaches it (the host works only "
				   : "then works ",
			    gs_fmt_ns(a, w->after_ns),
			    little ? " after the waits)."
				   : " on the host while the GPU idles: that work could have run while the GPU computed.",
			    wait_advice(r->framework));
	} else if (ch == GS_CH_GRAPH) {
		gs_diag_add(r, "launch_bound",
			    "Each step launches %llu kernels one by one%s%s and the GPU works %s of its %s (%.0f%%): it "
			    "waits for the host between small kernels.\n%s",
			    (unsigned long long)s->launches, *s->launch_where ? " from " : "", s->launch_where,
			    gs_fmt_ns(a, s->gpu_ns), gs_fmt_ns(b, s->step_ns),
			    s->step_ns ? 100.0 * (double)s->gpu_ns / (double)s->step_ns : 0.0,
			    graph_advice(r->framework, inference));
	} else if (ch == GS_CH_FUSE) {
		gs_diag_add(r, "host_bound",
			    "Each step is dispatched from the host%s%s, which takes longer than the GPU's %s of work "
			    "a step (%s).\nDispatch several steps at once: lax.scan or lax.fori_loop over the steps "
			    "in one jitted call.", *s->launch_where ? " at " : "", s->launch_where,
			    gs_fmt_ns(a, s->gpu_ns), gs_fmt_ns(b, s->step_ns));
	} else if (ch == GS_CH_PIN) {
		gs_diag_add(r, "pageable_copies",
			    "Each step copies from pageable memory: the driver stages the bytes and the copy cannot "
			    "overlap compute.\nPin the source (pin_memory(), cudaHostAlloc) and copy asynchronously.");
	} else if (ch == GS_CH_POOL) {
		gs_diag_add(r, "allocation_churn",
			    "Each step allocates and frees device memory (%llu calls a step); a free waits for the "
			    "GPU.\nAllocate once and reuse (no torch.cuda.empty_cache() in the loop; a memory pool).",
			    (unsigned long long)(s->change[ch].count / s->window));
	} else if (ch == GS_CH_WORKERS) {
		const struct gs_loader *l = gs_loader_at(r, s->steady_from);
		gs_diag_add(r, "data_starvation", "Each step loads its data on the main thread%s%s%s while the GPU "
			    "waits.\nLoad ahead in workers: DataLoader(num_workers=N, pin_memory=True).",
			    l ? ", from the DataLoader made at " : "", l ? l->at : "", l ? "," : "");
	}
	(void)c;
	return r->ndiag > before;
}

/* The diagnoses the replay found that no other names, with their replayed savings. */
static void add_new(struct gs_report *r, int ch)
{
	if (add_said(r, ch))
		set_saving(r, &r->diag[r->ndiag - 1], ch);
}

/* The evidence each change needs in the steady steps, beyond a saving:
 * a wait every step; a step of many launches that keeps the GPU busy
 * less than half the time, the launches and the dispatch between them
 * half the step or more (else the host does something else); a data
 * phase that is a quarter of the step. */
static int applies(const struct gs_steps *s, int ch, int jax)
{
	const struct gs_step_change *c = &s->change[ch];
	switch (ch) {
	case GS_CH_NOWAIT:
		return c->count >= s->window;
	case GS_CH_GRAPH:
		return !jax && s->launches >= 10 && s->gpu_ns * 2 < s->step_ns && s->launch_path_ns * 2 >= s->step_ns;
	case GS_CH_FUSE: /* the host, not the GPU, sets the pace: JAX's several steps a call */
		return jax && s->gpu_ns * 5 < s->step_ns * 4;
	case GS_CH_WORKERS:
		return c->after_ns * 4 >= s->step_ns;
	case GS_CH_PIN:
	case GS_CH_POOL:
		return c->count >= s->window;
	}
	return 0;
}

/* Cuts bound d to per_step a step over the step's steps (a bound over
 * fewer, 4 occurrences of a phase around or before a loop whose step is
 * 16 launches, or over more, the growth's 161 steps where 160 are the
 * step's after warm-up, counts other units than the step: it is over the
 * step's steps, cut or not, so that its "a step" and its count are the
 * report's step; uncut, 5.1 ms over 4 phases said 1.3 ms a step of a
 * 160 us step), adding
 * "; at most " and why to its how; 1 (drop it) when per_step is under the
 * floor of a change worth making. A replayed saving ("about") is a
 * difference of two replays of the step and needs no cut. */
static int cut_bound(const struct gs_steps *s, struct gs_diag *d, uint64_t per_step, int64_t floor, const char *why)
{
	if (!d->how || d->about || !d->steps)
		return 0;
	if (s->steps)
		d->steps = s->steps;
	/* A bound under the floor a step is no change worth making (a data
	 * phase's waits, 8 us of a 2.3 ms step). Not a starved loop's: its
	 * bound is what overlapping the data phase hides, where workers
	 * shrink the phase itself (a replay says it, with GPU records). */
	if ((int64_t)(d->save_ns / d->steps) < floor && strcmp(d->id, "data_starvation"))
		return 1;
	if (d->save_ns <= mul_sat(per_step, d->steps))
		return 0;
	if ((int64_t)per_step < floor)
		return 1;
	char *how = NULL;
	d->save_ns = mul_sat(per_step, d->steps);
	if (asprintf(&how, "%s; at most %s", d->how, why) > 0) {
		free(d->how);
		d->how = how;
	}
	return 0;
}

/* No bound a step is more than a step can give back: the step, and for
 * the GPU's idle time (host- or launch-bound) the step's time beyond its
 * GPU work, which the change leaves. A bound from the run's totals (the
 * loop's idle time, warm-up included, over its steps) is cut to it, and
 * says so, or goes (1). */
static int cap_to_step(const struct gs_steps *s, struct gs_diag *d, int64_t floor)
{
	int idle = !strcmp(d->id, "host_bound") || !strcmp(d->id, "launch_bound");
	uint64_t cap = !idle ? s->step_ns : s->step_ns > s->gpu_ns ? s->step_ns - s->gpu_ns : 0;
	char a[32], why[96];
	snprintf(why, sizeof(why), "the step's %s%s", gs_fmt_ns(a, cap), idle ? " beyond its GPU work" : "");
	return cut_bound(s, d, cap, floor, why);
}

/* Without GPU records: a bound from the run's totals (warm-up included)
 * claims no more a step than the replayed steps' own host time of its
 * kind (waits, pageable copies, allocations, launches, data phases), and
 * goes (1) when that is under the floor: waits made only while the loop
 * warmed up are no step's. Other bounds are left to cap_to_step. */
static int cap_to_steady(const struct gs_steps *s, struct gs_diag *d, int64_t floor)
{
	uint64_t own;
	if (!strcmp(d->id, "sync_stalls"))
		own = s->wait_host_ns;
	else if (!strcmp(d->id, "pageable_copies") || !strcmp(d->id, "pageable_copies_d2h"))
		own = s->pageable_host_ns[copy_back(d)];
	else if (!strcmp(d->id, "allocation_churn"))
		own = s->alloc_host_ns;
	else if (!strcmp(d->id, "data_starvation"))
		own = s->data_host_ns; /* the data phases' time: the most loading ahead hides */
	else if (!strcmp(d->id, "launch_bound"))
		own = s->launch_path_ns; /* the launches and the dispatch between them */
	else
		return 0;
	char a[32], why[96];
	snprintf(why, sizeof(why), "the steady steps' own, %s a step", gs_fmt_ns(a, own));
	return cut_bound(s, d, own, floor, why);
}

static int by_saving(const void *a, const void *b)
{
	const struct gs_diag *x = a, *y = b;
	uint64_t sx = x->steps ? x->save_ns / x->steps : 0, sy = y->steps ? y->save_ns / y->steps : 0;
	int fx = !x->how, fy = !y->how; /* facts (memory) first, in their order */
	if (fx != fy)
		return fy - fx;
	return sx < sy ? 1 : sx > sy ? -1 : 0;
}

/* pct% of the step, 1 us at least. */
static int64_t step_share(const struct gs_steps *s, unsigned pct)
{
	int64_t f = (int64_t)(s->step_ns / 100 * pct);
	return f < 1000 ? 1000 : f;
}

/* ok[ch]: the change ch applies to the steps and its replayed saving is
 * at least floor. */
static void worth_making(const struct gs_report *r, int64_t floor, int *ok)
{
	const struct gs_steps *s = r->steps;
	for (int ch = 0; ch < GS_CH_COUNT; ch++)
		ok[ch] = applies(s, ch, r->framework == GS_FW_JAX) && s->change[ch].save_ns >= floor;
	/* Workers load already: the data phase is a wait for them, which the
	 * replay of moving its work to workers does not model (loader_behind). */
	if (r->loader_workers)
		ok[GS_CH_WORKERS] = 0;
}

/* A bound over no steps in a run with no phases (none to count) is over
 * the step's, unless it is a one-time cost: gs_steps_diagnose cuts it. (A
 * run whose phases do not repeat keeps its totals: a phase done once, a
 * load before two epochs, is no step's.) */
static void over_the_steps(struct gs_report *r)
{
	if (r->nphases > 1)
		return;
	for (size_t i = 0; i < r->ndiag; i++)
		if (r->diag[i].how && !r->diag[i].steps && !r->diag[i].once)
			r->diag[i].steps = r->steps->steps;
}

/* Without GPU records, waits each step makes (a copy back of a scalar, a
 * synchronize) that no diagnosis names: dropping them overlaps the host's
 * work after them with the GPU's, whose time is not known, so they save
 * at most the shorter of the two, a step. */
static void wait_bound(struct gs_report *r, int64_t floor)
{
	const struct gs_steps *s = r->steps;
	const struct gs_step_change *w = &s->change[GS_CH_NOWAIT];
	for (size_t i = 0; i < r->ndiag; i++)
		if (change_of(r->diag[i].id, 0, 0) == GS_CH_NOWAIT)
			return;
	uint64_t bound = s->wait_host_ns < w->after_ns ? s->wait_host_ns : w->after_ns;
	if (w->count < s->window || (int64_t)bound < floor)
		return;
	if (!add_said(r, GS_CH_NOWAIT))
		return;
	struct gs_diag *d = &r->diag[r->ndiag - 1];
	char a[32], b[32], how[200];
	snprintf(how, sizeof(how), "the waits' host time or the host's work after them, the shorter (%s, %s a step): "
		 "no GPU times to replay", gs_fmt_ns(a, s->wait_host_ns), gs_fmt_ns(b, w->after_ns));
	d->how = xstrdup(how);
	d->steps = s->steps;
	d->save_ns = mul_sat(bound, s->steps);
	d->about = 0;
}

/* Without GPU records (CUPTI off) the replay cannot say what the GPU
 * would do: the diagnoses keep their bounds from the run's totals, cut to
 * the steady steps' own calls of their kind and to the step (waits of a
 * warm-up, or a long first step, over the phases' count said more than a
 * step a step), in the order of what they save. */
static void keep_bounds(struct gs_report *r, int64_t floor)
{
	size_t keep = 0;
	for (size_t i = 0; i < r->ndiag; i++) {
		struct gs_diag *d = &r->diag[i];
		if (cap_to_steady(r->steps, d, floor) || cap_to_step(r->steps, d, floor)) {
			free(d->text);
			free(d->how);
			continue;
		}
		r->diag[keep++] = *d;
	}
	r->ndiag = keep;
	if (r->ndiag > 1)
		qsort(r->diag, r->ndiag, sizeof(*r->diag), by_saving);
}

void gs_steps_diagnose(struct gs_report *r)
{
	struct gs_steps *s = r->steps;
	if (!s)
		return;
	size_t keep = 0;
	for (size_t i = 0; i < r->ndiag; i++)
		r->diag[i].context = observation(r->diag[i].id);
	if (!s->found) { /* totals only: never "a step" */
		for (size_t i = 0; i < r->ndiag; i++)
			r->diag[i].steps = 0;
		return;
	}
	over_the_steps(r);
	/* A bound ("up to", from the run's totals) worth a change is 2% of
	 * the step at least: twice what the what-if suite's steps moved
	 * between processes with nothing changed (healthy, upload_once:
	 * under 1%). A replayed saving ("about"), a difference of two replays
	 * of one process's step, needs 1%: the suite's smallest real fix,
	 * the empty_cache() loop's pool, gave back 1.6% of the step on one
	 * H100 and replayed 5% over it, where the healthy and one-time
	 * upload loops replay no change above 0.1% (docs/measurements.md). */
	int64_t floor = step_share(s, 2), about_floor = step_share(s, 1);
	if (!s->gpu_ns || s->replay_off) { /* (or a replay slower than the run: steps.h) */
		if (!s->gpu_ns)
			wait_bound(r, floor);
		keep_bounds(r, floor);
		return;
	}
	int jax = r->framework == GS_FW_JAX;
	int used[GS_CH_COUNT] = { 0 }, ok[GS_CH_COUNT];
	worth_making(r, about_floor, ok);
	for (size_t i = 0; i < r->ndiag; i++) {
		struct gs_diag *d = &r->diag[i];
		int ch = change_of(d->id, jax, ok[GS_CH_GRAPH]);
		int drop = 0;
		d->context = observation(d->id);
		/* A loop bound by its launches is said in launch terms, a step's
		 * numbers (add_new); the run's totals' wording goes. */
		if (ch == GS_CH_GRAPH)
			drop = 1;
		else if (ch != GS_CH_NONE) {
			/* Pinning replays both directions' copies: its saving is
			 * the diagnosis's whose direction has some in the steps
			 * (not an upload's, of small copies, from a copy back's).
			 * A phase's waits are the step's only where its longest
			 * is (not an evaluation's, outside the replayed steps). */
			if (ok[ch] && !used[ch] && (ch != GS_CH_PIN || s->pinnable[copy_back(d)]) &&
			    (!d->phase || d->phase == s->change[GS_CH_NOWAIT].phase ||
			     d->phase == s->change[GS_CH_NOWAIT].inner)) {
				set_saving(r, d, ch);
				used[ch] = 1;
			} else {
				drop = 1;
			}
		}
		if (drop || cap_to_step(s, d, floor)) {
			free(d->text);
			free(d->how);
			continue;
		}
		r->diag[keep++] = *d;
	}
	r->ndiag = keep;
	for (int ch = GS_CH_PIN; ch < GS_CH_COUNT; ch++)
		if (!used[ch] && ok[ch])
			add_new(r, ch);
	gs_tele_loop(r, s, floor);
	if (r->ndiag > 1)
		qsort(r->diag, r->ndiag, sizeof(*r->diag), by_saving);
}
