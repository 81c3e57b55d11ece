/* SPDX-License-Identifier: MIT */
/*
 * gpuspy diff BASE NEW [--fail-if LIMITS] [--json]: a regression gate for
 * CI. Two runs of one program are compared step by step: the time a step
 * takes and each top-level phase's share of it, against the noise of the
 * steps themselves; and what a step does (launches, GPU time, copies,
 * pageable copies, allocations), against a limit. Exit 1 when one is over
 * its limit, 0 when none is, 2 when the runs cannot be compared.
 *
 * The noise: each side's mean step time has a standard error s/sqrt(N)
 * from its steps' spread (the first step, the warm-up, left out; the
 * report's step points, which hold 1, 2, 4... steps in a long run, weighed
 * by the steps each holds). A time regresses when it grew by more than its
 * limit (5% by default; a phase's 10%) and by more than 3 standard errors
 * of the difference: a noisy machine widens the band, and what is left is
 * the change. A phase must also have grown by 1% of the step: a phase of
 * microseconds may double without costing a step anything.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util/cli.h"
#include "cmd/cmd.h"
#include "util/paths.h"
#include "report/report.h"
#include "report/series.h"
#include "util/units.h"
#include "util/escape.h"

enum { D_STEP, D_PHASE, D_LAUNCHES, D_GPU, D_COPY, D_PAGEABLE, D_ALLOCS, D_N };
static const char *const names[D_N] = { "step_time", "phase_time", "launches", "gpu_time", "copy_bytes",
					 "pageable_bytes", "allocs" };
static const double defaults[D_N] = { 5, 10, 10, 10, 10, 10, 10 }; /* % */

/* One side: the process with the most steps, its report, its step times. */
struct side {
	const char *arg;
	struct gs_report **procs;
	size_t nprocs;
	struct gs_report *r;      /* the one compared */
	uint64_t steps;           /* all of its steps */
	double mean, se;          /* step time past the first step, ns */
	uint64_t n;               /* steps in that */
	double per_step[D_N];     /* what a step does (D_LAUNCHES..): loop phases' sums / steps */
};

/* Mean and standard error of slot (-1: the whole step) over the points
 * past the first step. */
static void step_stats(const struct gs_series *s, int slot, double *mean, double *se, uint64_t *steps)
{
	double sum = 0, n = 0;
	size_t k = 0;
	for (size_t i = 0; i < s->nsteps; i++) {
		const struct gs_step_point *p = &s->step[i];
		if (i == 0 && p->n == 1)
			continue; /* the first step: start-up, compilation */
		sum += (double)(slot < 0 ? p->total_ns : p->ph[slot]);
		n += (double)p->n;
		k++;
	}
	*mean = n ? sum / n : 0;
	double ss = 0;
	for (size_t i = 0; i < s->nsteps; i++) {
		const struct gs_step_point *p = &s->step[i];
		if (i == 0 && p->n == 1)
			continue;
		double x = (double)(slot < 0 ? p->total_ns : p->ph[slot]) / (double)p->n - *mean;
		ss += (double)p->n * x * x;
	}
	*se = k > 1 && n > 0 ? sqrt(ss / (double)(k - 1)) / sqrt(n) : 0;
	*steps = (uint64_t)n;
}

static int load(const char *arg, struct side *d)
{
	struct gs_paths in = { 0 };
	d->arg = arg;
	if (gs_paths_collect(arg, &in))
		return 2;
	d->procs = calloc(in.n + 1, sizeof(*d->procs));
	for (size_t i = 0; i < in.n; i++) {
		char err[300];
		struct gs_report *r = calloc(1, sizeof(*r));
		if (!d->procs || !r || gs_report_file(in.v[i], in.listed[i], r, err, sizeof(err)) != 0) {
			fprintf(stderr, "gpuspy: error: diff: %s: %s\n", in.v[i], r ? err : "out of memory");
			free(r);
			gs_paths_free(&in);
			return 2;
		}
		d->procs[d->nprocs++] = r;
		if (r->input_error[0]) { /* a gate compares whole runs: a broken one is no run */
			fprintf(stderr, "gpuspy: error: diff: %s: %s\n", in.v[i], r->input_error);
			gs_paths_free(&in);
			return 2;
		}
		uint64_t steps = r->series ? r->series->nsteps : 0;
		if (!d->r || steps > (d->r->series ? d->r->series->nsteps : 0))
			d->r = r;
	}
	gs_paths_free(&in);
	const struct gs_series *s = d->r->series;
	for (size_t i = 0; s && i < s->nsteps; i++)
		d->steps += s->step[i].n;
	if (!s) {
		fprintf(stderr, "gpuspy: error: diff: %s: no events to compare\n", arg);
		return 2;
	}
	step_stats(s, -1, &d->mean, &d->se, &d->n);
	if (d->n < 3) {
		fprintf(stderr, "gpuspy: error: diff: %s: %llu steps past the first; comparing needs 3 or more (a "
				"repeated phase: see gpuspy report)\n", arg, (unsigned long long)d->n);
		return 2;
	}
	/* What a step does: the sums over the phases that repeat. */
	double v[D_N] = { 0 };
	for (size_t p = 1; p < d->r->nphases; p++) {
		const struct gs_phase_stat *ph = &d->r->phases[p];
		if (ph->library || ph->count < 2)
			continue;
		v[D_LAUNCHES] += (double)ph->c.launch.count;
		v[D_GPU] += (double)ph->gpu_busy_ns;
		for (int dir = GSPY_DIR_h2d; dir <= GSPY_DIR_d2h; dir++)
			for (int m = 0; m < 2; m++) {
				v[D_COPY] += (double)ph->c.copy[dir][m].bytes;
				if (m == GS_PAGEABLE)
					v[D_PAGEABLE] += (double)ph->c.copy[dir][m].bytes;
			}
		v[D_ALLOCS] += (double)ph->c.alloc[GS_ALLOC_DEVICE].count;
	}
	/* Steps: the occurrences of the step's first top-level phase (the
	 * series tells steps apart only from the step phase's third). */
	uint64_t steps = s->nslots ? d->r->phases[s->slot_phase[0]].count : d->steps;
	for (int i = D_LAUNCHES; i < D_N; i++)
		d->per_step[i] = steps ? v[i] / (double)steps : 0;
	d->steps = steps;
	return 0;
}

/* A limit's text: plain decimal digits with at most one point, then '%'.
 * strtod alone took "nan%" (no step is over NaN: the gate passed
 * everything), "inf%", hex floats and exponents. At most 10,000,000%. */
#define LIMIT_MAX 1e7

static int parse_limit(const char *s, double *v)
{
	size_t digits = 0, points = 0, i = 0;
	for (;; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			digits++;
		else if (s[i] == '.')
			points++;
		else
			break;
	}
	if (!digits || points > 1 || strcmp(s + i, "%"))
		return -1;
	*v = strtod(s, NULL);
	return isfinite(*v) && *v >= 0 && *v <= LIMIT_MAX ? 0 : -1;
}

/* --fail-if step_time>3%,allocs>0%: the limits, in %. */
static int parse_limits(const char *arg, double *lim)
{
	char buf[512];
	int bad = snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf) || !*arg || *arg == ',' ||
		  arg[strlen(arg) - 1] == ',' || strstr(arg, ",,");
	for (char *save = NULL, *t = bad ? NULL : strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *gt = strchr(t, '>');
		int i = 0;
		if (gt) {
			*gt = 0;
			while (i < D_N && strcmp(names[i], t))
				i++;
		}
		double v;
		if (!gt || i == D_N || parse_limit(gt + 1, &v) != 0) {
			bad = 1;
			break;
		}
		lim[i] = v;
	}
	if (bad) {
		fprintf(stderr, "gpuspy: error: diff: --fail-if %.40s%s: use NAME>N%% with NAME one of step_time, "
				"phase_time, launches, gpu_time, copy_bytes, pageable_bytes, allocs and N from 0 to %.0f\n",
			arg, strlen(arg) > 40 ? "..." : "", LIMIT_MAX);
		return 2;
	}
	return 0;
}

struct row {
	const char *what;
	char name[80];            /* the table's: escaped, cut between characters */
	double base, new_, noise; /* noise: 3 SE of the difference, ns; 0 for counts */
	double floor;             /* phases: a growth under 1% of the step is no regression */
	double limit;             /* % */
	int time, over;
	const char *phase;        /* phase_time: the phase's whole name, the trace's bytes */
};

static void judge(struct row *w)
{
	double grew = w->new_ - w->base;
	if (w->base > 0)
		w->over = grew > w->base * w->limit / 100 && grew > w->noise && grew > w->floor;
	else
		w->over = w->new_ > 0 && w->limit < INFINITY; /* from nothing */
}

static void show(char *b, size_t n, const struct row *w, double v)
{
	char t[32];
	if (w->time)
		snprintf(b, n, "%s", gs_fmt_ns(t, (uint64_t)(v + 0.5)));
	else if (strstr(w->what, "bytes"))
		snprintf(b, n, "%s", gs_fmt_bytes(t, (uint64_t)(v + 0.5)));
	else
		snprintf(b, n, "%.1f", v);
}

/* Long (about 120 lines): options, both runs read, then the table and the
 * verdict, in the order the user reads them; each part is a loop over the
 * same few arrays. */
int gs_cmd_diff(int argc, char **argv)
{
	double lim[D_N];
	memcpy(lim, defaults, sizeof(lim));
	const char *arg[2] = { NULL, NULL };
	int json = 0, k = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--fail-if") && i + 1 < argc) {
			if (parse_limits(argv[++i], lim))
				return 2;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return gs_bad_option("diff", argv[i], "--fail-if");
		} else if (k < 2) {
			arg[k++] = argv[i];
		} else {
			fprintf(stderr, "gpuspy: error: diff: two runs, BASE and NEW, not '%s' too\n", argv[i]);
			return 2;
		}
	}
	if (k < 2)
		return gs_missing("diff", k ? "NEW run" : "BASE and NEW runs");
	gs_series_on = 1;
	struct side s[2] = { { 0 }, { 0 } };
	int rc = load(arg[0], &s[0]);
	if (!rc)
		rc = load(arg[1], &s[1]);
	struct row rows[D_N + GS_SERIES_PHASES];
	int nr = 0;
	if (!rc) {
		struct row *w = &rows[nr++];
		*w = (struct row){ "step_time", "time per step", s[0].mean, s[1].mean,
				   3 * sqrt(s[0].se * s[0].se + s[1].se * s[1].se), 0, lim[D_STEP], 1, 0, NULL };
		judge(w);
		/* Each top-level phase the two share, by name. */
		const struct gs_series *a = s[0].r->series, *b = s[1].r->series;
		for (size_t i = 0; i < a->nslots && nr < D_N + GS_SERIES_PHASES - 5; i++) {
			const char *nm = s[0].r->phases[a->slot_phase[i]].name;
			size_t j = 0;
			while (j < b->nslots && strcmp(s[1].r->phases[b->slot_phase[j]].name, nm))
				j++;
			if (j == b->nslots)
				continue;
			double ma, sa, mb, sb;
			uint64_t na, nb;
			step_stats(a, (int)i, &ma, &sa, &na);
			step_stats(b, (int)j, &mb, &sb, &nb);
			w = &rows[nr++];
			*w = (struct row){ "phase_time", "", ma, mb, 3 * sqrt(sa * sa + sb * sb), 0.01 * s[0].mean,
					   lim[D_PHASE], 1, 0, nm };
			/* The table's name: escaped for the terminal and cut to
			 * 60 bytes between characters, never inside one. Each
			 * byte escapes to one or more, so those 60 come from the
			 * name's first 60 bytes and the character that may start
			 * at the 60th: the copy's 127 bytes hold them all. */
			char cut[128];
			snprintf(cut, sizeof(cut), "%s", nm);
			gs_term_clean(cut, 61);
			snprintf(w->name, sizeof(w->name), "  %.60s", cut); /* 60 already */
			judge(w);
		}
		static const char *const what[D_N] = { [D_LAUNCHES] = "launches per step", [D_GPU] = "GPU time per step",
							[D_COPY] = "copy bytes per step", [D_PAGEABLE] = "pageable bytes per step",
							[D_ALLOCS] = "allocations per step" };
		for (int i = D_LAUNCHES; i < D_N; i++) {
			if (i == D_GPU && !s[0].r->gpu_records && !s[1].r->gpu_records)
				continue; /* no GPU timing on either side */
			w = &rows[nr++];
			*w = (struct row){ names[i], "", s[0].per_step[i], s[1].per_step[i], 0, 0, lim[i], i == D_GPU, 0, NULL };
			snprintf(w->name, sizeof(w->name), "%s", what[i]);
			judge(w);
		}
	}
	int over = 0;
	for (int i = 0; i < nr; i++)
		over += rows[i].over;
	if (!rc && json) {
		cJSON *o = cJSON_CreateObject(), *m = cJSON_AddArrayToObject(o, "metrics");
		for (int i = 0; i < nr; i++) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "metric", rows[i].what);
			if (!strcmp(rows[i].what, "phase_time"))
				cJSON_AddStringToObject(x, "phase", rows[i].phase);
			cJSON_AddNumberToObject(x, "base", rows[i].base);
			cJSON_AddNumberToObject(x, "new", rows[i].new_);
			cJSON_AddNumberToObject(x, "noise", rows[i].noise);
			cJSON_AddNumberToObject(x, "limit_pct", rows[i].limit);
			cJSON_AddBoolToObject(x, "regression", rows[i].over);
			cJSON_AddItemToArray(m, x);
		}
		cJSON_AddNumberToObject(o, "base_steps", (double)s[0].n);
		cJSON_AddNumberToObject(o, "new_steps", (double)s[1].n);
		cJSON_AddBoolToObject(o, "regression", over > 0);
		char *t = gs_json_print(o, 1);
		if (t)
			printf("%s\n", t);
		free(t);
		cJSON_Delete(o);
	} else if (!rc) {
		/* Phase and file names are the trace's and the user's bytes: escaped. */
		FILE *out = gs_term_open(stdout, 0);
		if (!out)
			out = stdout;
		fprintf(out, "gpuspy diff: %s (%llu steps) against %s (%llu steps), the first step of each left out\n",
			arg[1], (unsigned long long)s[1].n, arg[0], (unsigned long long)s[0].n);
		fprintf(out, "  %-28s %11s %11s %8s %9s %9s\n", "", "base", "new", "change", "noise", "limit");
		for (int i = 0; i < nr; i++) {
			const struct row *w = &rows[i];
			char b[32], n[32], c[16], z[32] = "", l[16];
			show(b, sizeof(b), w, w->base);
			show(n, sizeof(n), w, w->new_);
			if (w->base > 0)
				snprintf(c, sizeof(c), "%+.1f%%", 100 * (w->new_ - w->base) / w->base);
			else
				snprintf(c, sizeof(c), "%s", w->new_ > 0 ? "new" : "-");
			if (w->time && w->noise > 0 && w->base > 0)
				snprintf(z, sizeof(z), "±%.1f%%", 100 * w->noise / w->base);
			snprintf(l, sizeof(l), "+%g%%", w->limit);
			fprintf(out, "  %-28s %11s %11s %8s %9s %9s%s\n", w->name, b, n, c, z, l,
				w->over ? "  REGRESSION" : "");
		}
		if (over)
			fprintf(out, "%d %s over %s limit\n", over, gs_pl((uint64_t)over, "metric", "metrics"),
				over == 1 ? "its" : "their");
		else
			fprintf(out, "no regression\n");
		if (out != stdout)
			fclose(out);
	}
	for (int j = 0; j < 2; j++) {
		for (size_t i = 0; i < s[j].nprocs; i++) {
			gs_report_free(s[j].procs[i]);
			free(s[j].procs[i]);
		}
		free(s[j].procs);
	}
	return rc ? rc : over ? 1 : 0;
}
