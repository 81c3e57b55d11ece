/* SPDX-License-Identifier: MIT */
/*
 * The ranks of one job side by side (gpuspy report over the rank files a
 * torchrun-style launch writes): each rank's steps, step time, collective
 * time and GPU busy, and the straggler. In a synchronous step every rank
 * leaves each collective together, so the step times match; what differs
 * is when each rank comes to it. The rank that comes last waits least:
 * its collectives take only the transfer, the others' that and the wait
 * for it. So the straggler of a step is the rank with the least time in
 * collectives (NCCL's kernels with CUPTI, or gloo's host-side all-reduces:
 * collectives.c), its lead is the others' mean less its own, and the
 * others waited, in all, what their collectives took beyond its. This
 * holds when collectives overlap the backward pass, where "step less
 * collectives" would not. Steps are matched by their order on each rank
 * (the series' points, series.c), so no clock is compared across hosts.
 * The clocks themselves are measured the same way: the k-th collective
 * ends together on every rank, so the median difference of those ends is
 * a rank's clock offset from rank 0's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "report/report.h"
#include "report/section.h"
#include "report/series.h"
#include "report/steps.h"
#include "util/units.h"
#include "util/escape.h"

/* A rank is named (the straggler a step, the slowest) only where it leads
 * the others by a fiftieth of the step or more: ranks within that are
 * alike (a lead of 1.5 us of 10 ms named one, and with collectives of
 * equal times every step's tie went to the first rank, "0 ns after"). */
#define LEAD_MARGIN 50

struct rank_stat {
	const struct gs_report *r;
	uint64_t steps, step_ns, coll_ns; /* past the first step: sums */
	uint64_t straggler_steps;        /* steps in which it was the straggler */
	uint64_t lead_ns, caused_ns;     /* in those: by how much over the others' mean, and their wait */
	uint64_t waited_ns;              /* its collectives beyond the step's straggler's: its wait */
	uint64_t nccl_launches;          /* own_steps: NCCL's kernels it launched (its collectives, CUPTI or not) */
};

struct ranks {
	struct rank_stat *v;
	size_t n;
	uint64_t steps;      /* steps compared (past the first, on every rank) */
	int collectives;     /* some rank ran collective kernels */
	int own_steps;       /* no phase series: each rank's step (steps.h), its median, unmatched */
	int coll_unmatched;  /* own_steps, and some rank ran collectives: no rank can be named */
	int unlike;          /* own_steps with unlike launches a step: none named */
};

static int first_point(const struct gs_series *s)
{
	return s->nsteps && s->step[0].n == 1; /* the first step: start-up, compilation */
}

static int by_rank_path(const void *a, const void *b)
{
	const struct gs_report *x = *(struct gs_report *const *)a, *y = *(struct gs_report *const *)b;
	if (x->proc.rank != y->proc.rank)
		return x->proc.rank < y->proc.rank ? -1 : 1;
	return strcmp(x->path ? x->path : "", y->path ? y->path : "");
}

/* Two traces of one rank mean several runs (or jobs) read together: set
 * side by side they would make a wrong table ("3 ranks of one job", rank 0
 * twice, a straggler of runs that never met). Which run is meant is not in
 * the traces (no job id: start times and hosts differ between ranks of one
 * run too), so no rank is picked for the user: the table is left out and
 * the message names the files of the lowest such rank. */
int gs_ranks_duplicate(struct gs_report *const *procs, size_t n, char *msg, size_t len)
{
	struct gs_report **v = n ? malloc(n * sizeof(*v)) : NULL;
	if (!v)
		return 0;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (procs[i]->proc.rank >= 0)
			v[m++] = procs[i];
	qsort(v, m, sizeof(*v), by_rank_path);
	size_t at = 0, same = 1;
	for (size_t i = 1; i < m && same < 2; i++) {
		if (v[i]->proc.rank != v[i - 1]->proc.rank)
			at = i;
		same = i - at + 1;
	}
	if (same >= 2 && msg && len) {
		while (at + same < m && v[at + same]->proc.rank == v[at]->proc.rank)
			same++;
		int w = snprintf(msg, len, "rank %d is in %zu traces, ", v[at]->proc.rank, same);
		size_t named = same < 4 ? same : 3;
		char pb[1024]; /* a file's name, on the warning's one line */
		for (size_t i = 0; i < named && w >= 0 && (size_t)w < len; i++)
			w += snprintf(msg + w, len - (size_t)w, "%s%s", i == 0 ? "" : i + 1 < same ? ", " : " and ",
				      gs_term_line(pb, sizeof(pb), v[at + i]->path, SIZE_MAX));
		if (w >= 0 && (size_t)w < len && named < same)
			w += snprintf(msg + w, len - (size_t)w, " and %zu more", same - named);
		if (w >= 0 && (size_t)w < len)
			snprintf(msg + w, len - (size_t)w,
				 " (several runs in one place?): no ranks table; report one run's traces for it");
	}
	free(v);
	return same >= 2;
}

/* How many of NCCL's kernels r launched: its collectives, with CUPTI or
 * without. */
static uint64_t launched_nccl(const struct gs_report *r)
{
	uint64_t n = 0;
	for (size_t i = 0; i < r->kernels_cap && r->kernels; i++)
		if (gs_coll_nccl_name(r->kernels[i].name))
			n += r->kernels[i].count;
	return n;
}

/* Ranks without phases (a C program's loop): each rank's own step, found
 * as any program's is (steps.c), its median and count. Nothing matches a
 * step of one rank to another's, so no straggler; the slowest is named
 * only without collectives (with them, every rank's step is the slowest's)
 * and where the ranks' steps are alike, with the same launches (a rank
 * whose step was found as four of the others' is not slower). */
static int ranks_by_own_step(struct gs_report *const *procs, size_t n, struct ranks *k)
{
	for (size_t i = 0; i < n; i++) {
		const struct gs_steps *st = procs[i]->steps;
		if (procs[i]->proc.rank < 0 || !st || !st->found || st->steps < 2)
			return 0;
	}
	if (n < 2 || !(k->v = calloc(n, sizeof(*k->v))))
		return 0;
	k->n = n;
	k->own_steps = 1;
	k->steps = (uint64_t)-1;
	for (size_t i = 0; i < n; i++) {
		const struct gs_steps *st = procs[i]->steps;
		k->v[i].r = procs[i];
		k->v[i].steps = st->steps;
		k->v[i].step_ns = st->step_ns * st->steps;
		k->v[i].nccl_launches = launched_nccl(procs[i]);
		k->coll_unmatched |= procs[i]->coll_n > 0 || procs[i]->coll_host || k->v[i].nccl_launches;
		k->unlike |= st->launches != procs[0]->steps->launches; /* (what names each rank's thread) */
		if (st->steps < k->steps)
			k->steps = st->steps;
	}
	return 1;
}

/* 1 when procs are ranks of a job (two or more, each with RANK and steps,
 * no rank twice). */
static int ranks_of(struct gs_report *const *procs, size_t n, struct ranks *k)
{
	memset(k, 0, sizeof(*k));
	if (gs_ranks_duplicate(procs, n, NULL, 0))
		return 0;
	size_t with = 0, points = (size_t)-1;
	for (size_t i = 0; i < n; i++) {
		const struct gs_series *s = procs[i]->series;
		if (procs[i]->proc.rank < 0)
			return 0;
		if (!s || s->nsteps < 2)
			return ranks_by_own_step(procs, n, k);
		size_t p = s->nsteps - (size_t)first_point(s);
		if (p < points)
			points = p;
		with++;
	}
	if (with < 2)
		return 0;
	k->v = calloc(with, sizeof(*k->v));
	if (!k->v)
		return 0;
	k->n = with;
	for (size_t i = 0; i < n; i++)
		k->v[i].r = procs[i];
	for (size_t p = 0; p < points; p++) {
		double coll[1024], least = -1, sum = 0, who_step = 0;
		size_t who = 0, m = k->n < 1024 ? k->n : 1024;
		uint64_t steps = 0;
		for (size_t i = 0; i < m; i++) {
			const struct gs_series *s = k->v[i].r->series;
			const struct gs_step_point *pt = &s->step[p + (size_t)first_point(s)];
			struct rank_stat *x = &k->v[i];
			x->steps += pt->n;
			x->step_ns += pt->total_ns;
			x->coll_ns += pt->coll_ns;
			k->collectives |= pt->coll_ns > 0;
			coll[i] = (double)pt->coll_ns / (double)pt->n;
			sum += coll[i];
			if (least < 0 || coll[i] < least) {
				least = coll[i];
				who = i;
				who_step = (double)pt->total_ns / (double)pt->n;
			}
			steps = pt->n;
		}
		k->steps += steps;
		if (sum == 0)
			continue; /* no collective in this step: nobody is its straggler (not the first rank) */
		for (size_t i = 0; i < m; i++)
			k->v[i].waited_ns += (uint64_t)((coll[i] - least) * (double)steps + 0.5);
		struct rank_stat *s = &k->v[who];
		double others = m > 1 ? (sum - least) / (double)(m - 1) : least;
		/* Others that waited for it under LEAD_MARGIN of its step: ranks
		 * alike, none the straggler (ties went to the first rank). */
		if ((others - least) * LEAD_MARGIN < who_step)
			continue;
		s->straggler_steps += steps;
		s->lead_ns += (uint64_t)((others - least) * (double)steps + 0.5);
		s->caused_ns += (uint64_t)(((sum - least) - least * (double)(m - 1)) * (double)steps + 0.5);
	}
	return 1;
}

static const struct rank_stat *straggler(const struct ranks *k)
{
	const struct rank_stat *s = NULL;
	for (size_t i = 0; i < k->n; i++)
		if (!s || k->v[i].straggler_steps > s->straggler_steps)
			s = &k->v[i];
	return s;
}

/* Without collectives: the rank whose steps are the longest, and its lead
 * over the others' mean, a step; none (lead 0) for fewer than two ranks,
 * or a lead under 1/LEAD_MARGIN of the others' step (ranks alike). */
static const struct rank_stat *slowest(const struct ranks *k, uint64_t *lead)
{
	const struct rank_stat *s = NULL;
	double sum = 0, most = -1;
	for (size_t i = 0; i < k->n; i++) {
		const struct rank_stat *x = &k->v[i];
		double st = x->steps ? (double)x->step_ns / (double)x->steps : 0;
		sum += st;
		if (st > most) {
			most = st;
			s = x;
		}
	}
	double others = k->n > 1 ? (sum - most) / (double)(k->n - 1) : 0;
	*lead = s && k->n > 1 && (most - others) * LEAD_MARGIN >= others ? (uint64_t)(most - others + 0.5) : 0;
	return *lead ? s : NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* A collective for matching across ranks: its key, which one of that key
 * it is (k-th), and its end. */
struct coll_ref {
	uint64_t key, k, end;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct coll_ref *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k; /* k: the index in the trace until numbered */
}

/* r's collectives by (key, k-th of that key); NULL when none. */
static struct coll_ref *refs_of(const struct gs_report *r)
{
	struct coll_ref *v = r->ncoll ? malloc(r->ncoll * sizeof(*v)) : NULL;
	if (!v)
		return NULL;
	for (size_t i = 0; i < r->ncoll; i++)
		v[i] = (struct coll_ref){ r->coll[i].key, i, r->coll[i].end };
	qsort(v, r->ncoll, sizeof(*v), cmp_ref);
	for (size_t i = 0, k = 0; i < r->ncoll; i++) {
		k = i && v[i].key == v[i - 1].key ? k + 1 : 0;
		v[i].k = k;
	}
	return v;
}

/* x's clock less the first rank's, by their collectives' ends: the k-th
 * collective of each kind (NCCL's kernel, the bytes gloo reduced) ends
 * together on every rank, so the median difference of the ends, and how
 * far 90% of them stray from it at most (0 when none match). A rank's collectives at
 * start-up (a broadcast from rank 0 alone) match nothing on the others. */
static size_t clock_offset(const struct gs_report *base, const struct gs_report *x, int64_t *off, int64_t *spread)
{
	*off = *spread = 0;
	struct coll_ref *a = refs_of(base), *b = refs_of(x);
	size_t cap = base->ncoll < x->ncoll ? base->ncoll : x->ncoll, n = 0;
	int64_t *d = a && b ? malloc(cap * sizeof(*d)) : NULL;
	for (size_t i = 0, j = 0; d && i < base->ncoll && j < x->ncoll;) {
		int c = cmp_ref(&a[i], &b[j]);
		if (c < 0)
			i++;
		else if (c > 0)
			j++;
		else
			d[n++] = (int64_t)(b[j++].end - a[i++].end);
	}
	if (n) {
		qsort(d, n, sizeof(*d), cmp_i64);
		*off = d[n / 2];
		for (size_t i = 0; i < n; i++)
			d[i] = d[i] > *off ? d[i] - *off : *off - d[i];
		qsort(d, n, sizeof(*d), cmp_i64);
		*spread = d[(n * 9 + 9) / 10 - 1]; /* 90% of them as close as this */
	}
	free(a);
	free(b);
	free(d);
	return n;
}

static const char *fmt_signed(char *b, int64_t ns)
{
	char t[32];
	snprintf(b, 40, "%s%s", ns < 0 ? "-" : "+", gs_fmt_ns(t, (uint64_t)(ns < 0 ? -ns : ns)));
	return b;
}

static double busy_pct(const struct gs_report *r)
{
	uint64_t busy = 0, span = r->t_last - r->t_first;
	for (int d = 0; d < GSPY_DEVICES; d++)
		busy += r->dev[d].busy_ns;
	return span ? 100.0 * (double)busy / (double)span : 0;
}

#define RANK_COLS 9
static const char *const rank_cols[RANK_COLS] = { "rank", "steps", "step time", "collectives", "waited",
						   "the rest", "overlap", "GPU busy", "straggler" };

/* A rank's row of the table, each cell as the text report prints it. */
static void rank_row(const struct ranks *k, const struct rank_stat *x, char cell[RANK_COLS][32])
{
	uint64_t st = x->steps ? x->step_ns / x->steps : 0, co = x->steps ? x->coll_ns / x->steps : 0;
	snprintf(cell[0], 32, "%d", x->r->proc.rank);
	snprintf(cell[1], 32, "%llu", (unsigned long long)x->steps);
	gs_fmt_ns(cell[2], st);
	snprintf(cell[3], 32, "n/a");
	snprintf(cell[4], 32, "n/a");
	if (k->collectives) {
		gs_fmt_ns(cell[3], co);
		gs_fmt_ns(cell[4], x->steps ? x->waited_ns / x->steps : 0);
	}
	gs_fmt_ns(cell[5], st > co ? st - co : 0);
	if (k->coll_unmatched) /* collectives ran, their time a step not known */
		snprintf(cell[5], 32, "n/a");
	snprintf(cell[6], 32, "n/a");
	if (x->r->coll_overlap_known && x->r->coll_span_ns) {
		double pct = 100.0 * (double)x->r->coll_overlap_ns / (double)x->r->coll_span_ns;
		snprintf(cell[6], 32, "%.*f%%", pct < 1 ? 2 : pct < 10 ? 1 : 0, pct);
	}
	snprintf(cell[7], 32, "%.0f%%", busy_pct(x->r));
	/* (straggler: 0 for every rank without collectives; slowest, below) */
	snprintf(cell[8], 32, "%llu", (unsigned long long)x->straggler_steps);
}

/* The lines below the table: what the collectives are, the straggler (or
 * the slowest rank), each rank's clock. */
static void rank_notes(FILE *f, const struct ranks *k)
{
	char a[32], b[32], d[32];
	int host = 0;
	for (size_t i = 0; i < k->n; i++)
		host |= k->v[i].r->coll_host;
	const struct rank_stat *s = straggler(k);
	if (k->coll_unmatched) {
		fprintf(f, "  collectives ran, but no phases match one rank's steps to another's: which rank the others "
			   "waited for is not known\n");
	} else if (k->unlike) {
		fprintf(f, "  the ranks' steps are not alike (each found on its own, with other launches a step): no rank "
			   "is named the slowest\n");
	} else if (!k->collectives) {
		uint64_t lead;
		const struct rank_stat *sl = slowest(k, &lead);
		fprintf(f, "  no collectives in these traces (NCCL's kernels, with CUPTI, or gloo's all-reduces of CUDA "
			   "tensors): which rank the others waited for is not known\n");
		if (sl && lead)
			fprintf(f, "  slowest: rank %d, its steps %s longer than the others' mean (%s a step)\n",
				sl->r->proc.rank, gs_fmt_ns(a, lead), gs_fmt_ns(b, sl->steps ? sl->step_ns / sl->steps : 0));
	} else {
		fprintf(f, "  collectives: %s;\n  overlap: the part of them during which the rank's other kernels ran\n",
			host ? "gloo's all-reduces on the host (the sync after the copy out, to the copy back)"
			     : "NCCL's kernels, their GPU time");
		if (s && s->straggler_steps)
			fprintf(f, "  straggler: rank %d, the last to its collectives in %llu of %llu steps,\n"
				   "  %s a step after the others' mean; the others waited for it %s a step in all,\n"
				   "  inside their collectives\n",
				s->r->proc.rank, (unsigned long long)s->straggler_steps, (unsigned long long)k->steps,
				gs_fmt_ns(a, s->lead_ns / s->straggler_steps), gs_fmt_ns(d, s->caused_ns / s->straggler_steps));
	}
	/* Clocks, by the collectives' ends (never by trusting the hosts'). */
	for (size_t i = 1; (k->collectives || k->coll_unmatched) && i < k->n; i++) {
		int64_t off, spread;
		size_t m = clock_offset(k->v[0].r, k->v[i].r, &off, &spread);
		if (!m)
			continue;
		char x[40];
		fprintf(f, "  clock of rank %d: %s from rank %d's (median of %zu collectives' ends; 90%% within %s)\n",
			k->v[i].r->proc.rank, fmt_signed(x, off), k->v[0].r->proc.rank, m, gs_fmt_ns(a, (uint64_t)spread));
	}
}

/* The table's head: how the ranks' steps were compared. */
static const char *ranks_head(char *b, size_t len, const struct ranks *k)
{
	if (k->own_steps)
		snprintf(b, len, "%zu of one job, each its own steady step (the median), not matched across ranks",
			 k->n);
	else
		snprintf(b, len, "%zu of one job, %llu steps compared (the first left out), matched by their order",
			 k->n, (unsigned long long)k->steps);
	return b;
}

void gs_ranks_print(FILE *f, struct gs_report *const *procs, size_t n, const struct gs_style *style)
{
	struct ranks k;
	if (!ranks_of(procs, n, &k))
		return;
	char head[160];
	fprintf(f, "\n%s== ranks%s: %s\n", style->bold, style->reset, ranks_head(head, sizeof(head), &k));
	fprintf(f, "  %6s %7s %10s %12s %10s %10s %8s %9s %10s\n", rank_cols[0], rank_cols[1], rank_cols[2],
		rank_cols[3], rank_cols[4], rank_cols[5], rank_cols[6], rank_cols[7], rank_cols[8]);
	for (size_t i = 0; i < k.n; i++) {
		char c[RANK_COLS][32];
		rank_row(&k, &k.v[i], c);
		fprintf(f, "  %6s %7s %10s %12s %10s %10s %8s %9s %10s\n", c[0], c[1], c[2], c[3], c[4], c[5], c[6],
			c[7], c[8]);
	}
	rank_notes(f, &k);
	free(k.v);
}

cJSON *gs_ranks_table(struct gs_report *const *procs, size_t n)
{
	struct ranks k;
	if (!ranks_of(procs, n, &k))
		return NULL;
	cJSON *o = cJSON_CreateObject();
	char head[160], *notes = NULL;
	cJSON_AddStringToObject(o, "head", ranks_head(head, sizeof(head), &k));
	cJSON *cols = cJSON_AddArrayToObject(o, "columns"), *rows = cJSON_AddArrayToObject(o, "rows");
	for (int j = 0; j < RANK_COLS; j++)
		cJSON_AddItemToArray(cols, cJSON_CreateString(rank_cols[j]));
	for (size_t i = 0; i < k.n; i++) {
		char c[RANK_COLS][32];
		rank_row(&k, &k.v[i], c);
		cJSON *row = cJSON_CreateArray();
		for (int j = 0; j < RANK_COLS; j++)
			cJSON_AddItemToArray(row, cJSON_CreateString(c[j]));
		cJSON_AddItemToArray(rows, row);
	}
	size_t len = 0;
	FILE *m = open_memstream(&notes, &len);
	if (m) {
		rank_notes(m, &k);
		fclose(m);
	}
	cJSON_AddStringToObject(o, "notes", notes ? notes : "");
	free(notes);
	free(k.v);
	return o;
}

cJSON *gs_ranks_json(struct gs_report *const *procs, size_t n)
{
	struct ranks k;
	if (!ranks_of(procs, n, &k))
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "ranks");
	cJSON_AddNumberToObject(o, "steps", (double)k.steps);
	cJSON_AddStringToObject(o, "matched", k.own_steps ? "none" : "by order");
	if (k.own_steps)
		cJSON_AddBoolToObject(o, "alike", !k.unlike);
	for (size_t i = 0; i < k.n; i++) {
		const struct rank_stat *x = &k.v[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "rank", x->r->proc.rank);
		cJSON_AddNumberToObject(j, "pid", x->r->proc.pid);
		cJSON_AddNumberToObject(j, "steps", (double)x->steps);
		cJSON_AddNumberToObject(j, "step_ns", (double)x->step_ns);
		if (k.coll_unmatched) { /* ran, their time a step not known */
			cJSON_AddNullToObject(j, "collective_ns");
			cJSON_AddStringToObject(j, "collectives", x->r->coll_host ? "host" : x->nccl_launches ? "nccl" : "none");
			cJSON_AddNumberToObject(j, "collectives_n", (double)(x->r->coll_n ? x->r->coll_n : x->nccl_launches));
		} else if (k.collectives) {
			cJSON_AddNumberToObject(j, "collective_ns", (double)x->coll_ns);
			cJSON_AddStringToObject(j, "collectives", x->r->coll_host ? "host" : x->r->coll_n ? "nccl" : "none");
			cJSON_AddNumberToObject(j, "collectives_n", (double)x->r->coll_n);
			cJSON_AddNumberToObject(j, "waited_ns", (double)x->waited_ns);
		} else {
			cJSON_AddNullToObject(j, "collective_ns");
		}
		if (x->r->coll_overlap_known) {
			cJSON_AddNumberToObject(j, "overlap_ns", (double)x->r->coll_overlap_ns);
			cJSON_AddNumberToObject(j, "overlap_of_ns", (double)x->r->coll_span_ns);
		}
		cJSON_AddNumberToObject(j, "straggler_steps", (double)x->straggler_steps);
		int64_t off, spread;
		if ((k.collectives || k.coll_unmatched) && clock_offset(k.v[0].r, x->r, &off, &spread)) {
			cJSON_AddNumberToObject(j, "clock_offset_ns", (double)off);
			cJSON_AddNumberToObject(j, "clock_spread_ns", (double)spread);
		}
		cJSON_AddNumberToObject(j, "gpu_busy_pct", busy_pct(x->r));
		cJSON_AddItemToArray(a, j);
	}
	const struct rank_stat *s = straggler(&k);
	if (k.collectives && s && s->straggler_steps) {
		cJSON *j = cJSON_AddObjectToObject(o, "straggler");
		cJSON_AddNumberToObject(j, "rank", s->r->proc.rank);
		cJSON_AddNumberToObject(j, "steps", (double)s->straggler_steps);
		cJSON_AddNumberToObject(j, "lead_ns", (double)s->lead_ns);
		cJSON_AddNumberToObject(j, "others_waited_ns", (double)s->caused_ns);
	} else {
		cJSON_AddNullToObject(o, "straggler");
	}
	uint64_t lead;
	const struct rank_stat *sl = k.collectives || k.coll_unmatched || k.unlike ? NULL : slowest(&k, &lead);
	if (sl) {
		cJSON *j = cJSON_AddObjectToObject(o, "slowest");
		cJSON_AddNumberToObject(j, "rank", sl->r->proc.rank);
		cJSON_AddNumberToObject(j, "lead_ns", (double)lead);
	}
	free(k.v);
	return o;
}
