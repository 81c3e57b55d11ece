/* SPDX-License-Identifier: MIT */
/*
 * The step section's text and JSON (steps.h): what was taken as the step,
 * its steady state and warm-up, the step beside its replay, and the
 * one-time costs before the loop. steps.c finds the step and replays it.
 */
#include <stdio.h>

#include "report/section.h"
#include "report/steps.h"
#include "util/escape.h"
#include "util/units.h"
/* t from the run's first event, never wrapped (JSON Lines: any order). */
static uint64_t since_first(const struct gs_report *r, uint64_t t)
{
	return t > r->t_first ? t - r->t_first : 0;
}

/* A framework's compilations: once a run, never a step's. Their time; *n: how many. */
static uint64_t compilations(const struct gs_report *r, uint64_t *n)
{
	uint64_t ns = 0;
	*n = 0;
	for (size_t i = 1; i < r->nphases; i++)
		if (r->phases[i].compile) {
			ns += r->phases[i].wall_ns;
			*n += r->phases[i].count;
		}
	return ns;
}

const char *gs_steps_among(const struct gs_steps *s, char *among, size_t cap)
{
	among[0] = 0;
	if (!s->odd_replayed)
		return "the last ";
	snprintf(among, cap, " among the last %llu", (unsigned long long)(s->window + s->odd_replayed));
	return "";
}

void gs_steps_print(FILE *f, const struct gs_report *r, const struct gs_style *st)
{
	const struct gs_steps *s = r->steps;
	char a[32], b[32], c[32], d[32];
	if (!s)
		return;
	fprintf(f, "\n  %sStep%s\n", st->bold, st->reset);
	if (!s->found) {
		fprintf(f, "  none found: no phase, range or sequence of calls repeats, so the figures are the "
			   "run's totals\n");
		return;
	}
	fprintf(f, "  %s\n", s->what);
	if (s->kept_last)
		fprintf(f, "  searched from %s on (a long run's step is found in its last %u events)\n",
			gs_fmt_ns(a, since_first(r, s->searched_from)), GS_STEPS_RING);
	fprintf(f, "  %llu steps%s, steady from %s\n", (unsigned long long)s->steps, s->kept_last ? ", the run's last" : "",
		s->warmup_ns ? gs_fmt_ns(a, since_first(r, s->steady_from)) : s->kept_last ? "there" : "the start");
	if (s->odd_steps)
		fprintf(f, "  %llu of them with other phases too (an evaluation?) are left out of %s\n",
			(unsigned long long)s->odd_steps, s->gpu_ns ? "the replay" : "the step's time");
	if (s->odd_replayed)
		fprintf(f, "  %llu more steps among them hold other phases too (an evaluation every few steps?): replayed,\n"
			   "  but left out of every figure a step\n", (unsigned long long)s->odd_replayed);
	/* A window recorded on demand (the process started paused) may begin
	 * inside a running loop: what comes before its first step is then the
	 * step it began in, no warm-up. */
	if (s->warmup_ns)
		fprintf(f, "  (the %s before%s left out of %s)\n", gs_fmt_ns(b, s->warmup_ns),
			r->proc.start_paused ? ", warm-up or the step the window began in, is" : " is warm-up:",
			s->gpu_ns ? "every figure a step" : "the step's time");
	if (!s->gpu_ns) { /* no GPU records: nothing to replay the GPU's side with */
		fprintf(f, "  a step: %s; %llu kernel %s\n  no GPU times: the savings below are bounds from the "
			   "run's totals, warm-up included, not replays\n", gs_fmt_ns(a, s->step_ns), (unsigned long long)s->launches,
			gs_pl(s->launches, "launch", "launches"));
	} else {
		fprintf(f, "  a step: %s; GPU work %s (%.0f%%); %llu kernel %s\n", gs_fmt_ns(a, s->step_ns),
			gs_fmt_ns(b, s->gpu_ns), s->step_ns ? 100.0 * (double)s->gpu_ns / (double)s->step_ns : 0.0,
			(unsigned long long)s->launches, gs_pl(s->launches, "launch", "launches"));
		char among[48];
		const char *last = gs_steps_among(s, among, sizeof(among));
		fprintf(f, "  replayed: %s a step over %s%llu%s (the run: %s)%s\n", gs_fmt_ns(c, s->model_ns),
			last, (unsigned long long)s->window, among, gs_fmt_ns(d, s->step_ns),
			s->replay_off ?
			",\n  slower than the run: the model does not fit it (threads that call CUDA at once?), and the\n"
			"  savings below are bounds from the run's totals, not replays" : "; the savings below are replays");
	}
	uint64_t compiles, compile_ns = compilations(r, &compiles);
	if (compiles)
		fprintf(f, "  one-time costs: compilation %s (%llu %s), left out of every figure a step\n",
			gs_fmt_ns(c, compile_ns), (unsigned long long)compiles, gs_pl(compiles, "time", "times"));
	if (s->once_copies)
		fprintf(f, "  one-time costs before the steady state: %llu host-to-device %s, %s, %s%s%s\n",
			(unsigned long long)s->once_copies, s->once_copies == 1 ? "copy" : "copies",
			gs_fmt_bytes(a, s->once_copy_bytes), gs_fmt_ns(b, s->once_copy_ns),
			*s->once_where ? "\n    the largest at " : "", gs_tail_of(s->once_where, 78));
}

static const char *const change_names[GS_CH_COUNT] = { "none", "pin", "no_wait", "graph", "workers", "pool",
						      "fuse" };

void gs_steps_json(cJSON *o, const struct gs_report *r, const struct gs_style *st)
{
	(void)st;
	const struct gs_steps *s = r->steps;
	if (!s)
		return;
	cJSON *j = cJSON_AddObjectToObject(o, "step");
	cJSON_AddBoolToObject(j, "found", s->found);
	if (!s->found)
		return;
	cJSON_AddStringToObject(j, "what", s->what);
	cJSON_AddNumberToObject(j, "steps", (double)s->steps);
	cJSON_AddNumberToObject(j, "steady_from_ns", (double)since_first(r, s->steady_from));
	cJSON_AddNumberToObject(j, "warmup_ns", (double)s->warmup_ns);
	cJSON_AddNumberToObject(j, "searched_from_ns", (double)since_first(r, s->searched_from));
	cJSON_AddNumberToObject(j, "step_ns", (double)s->step_ns);
	cJSON_AddNumberToObject(j, "replayed_step_ns", (double)s->model_ns);
	cJSON_AddNumberToObject(j, "replayed_steps", (double)s->window);
	cJSON_AddNumberToObject(j, "steps_with_other_phases", (double)s->odd_steps);
	cJSON_AddNumberToObject(j, "replayed_steps_with_other_phases", (double)s->odd_replayed);
	if (s->gpu_ns) /* (without GPU records nothing is replayed) */
		cJSON_AddBoolToObject(j, "replay_is_the_run", !s->replay_off);
	cJSON_AddNumberToObject(j, "gpu_ns", (double)s->gpu_ns);
	cJSON_AddNumberToObject(j, "launches", (double)s->launches);
	cJSON_AddNumberToObject(j, "graph_launches", (double)s->graph_launches);
	if (*s->launch_where)
		cJSON_AddStringToObject(j, "launches_from", s->launch_where);
	cJSON_AddNumberToObject(j, "pinned_bytes_per_s", s->pinned_bps);
	cJSON *own = cJSON_AddObjectToObject(j, "steady_host_ns"); /* a step's, what a bound may claim */
	cJSON_AddNumberToObject(own, "waits", (double)s->wait_host_ns);
	cJSON_AddNumberToObject(own, "pageable_h2d", (double)s->pageable_host_ns[0]);
	cJSON_AddNumberToObject(own, "pageable_d2h", (double)s->pageable_host_ns[1]);
	cJSON_AddNumberToObject(own, "allocs", (double)s->alloc_host_ns);
	cJSON_AddNumberToObject(own, "data", (double)s->data_host_ns);
	cJSON_AddNumberToObject(own, "launches", (double)s->launch_path_ns);
	if (s->gpu_ns && !s->replay_off) { /* nothing replayed without GPU records, nor from a replay not the run */
		cJSON *c = cJSON_AddObjectToObject(j, "replayed_savings_ns");
		for (int ch = GS_CH_PIN; ch < GS_CH_COUNT; ch++)
			cJSON_AddNumberToObject(c, change_names[ch], (double)s->change[ch].save_ns);
		if (s->change[GS_CH_WORKERS].workers)
			cJSON_AddNumberToObject(j, "loader_workers", (double)s->change[GS_CH_WORKERS].workers);
	}
	cJSON *once = cJSON_AddObjectToObject(j, "one_time");
	cJSON_AddNumberToObject(once, "h2d_copies", (double)s->once_copies);
	cJSON_AddNumberToObject(once, "h2d_bytes", (double)s->once_copy_bytes);
	cJSON_AddNumberToObject(once, "h2d_ns", (double)s->once_copy_ns);
	uint64_t compiles;
	cJSON_AddNumberToObject(once, "compile_ns", (double)compilations(r, &compiles));
	if (*s->once_where)
		cJSON_AddStringToObject(once, "h2d_largest_at", s->once_where);
}
