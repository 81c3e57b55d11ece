/* SPDX-License-Identifier: MIT */
/*
 * Where the steps begin (bounds.h): at PyTorch's optimizer steps where the
 * helper counted them, else at the repetitions of the cycle of top-level
 * phases, else of the calls of the thread that launches most (period.c
 * finds the period of either). steps.c takes the first that holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/bounds.h"
#include "report/period.h"
#include "report/report.h"
#include "util/escape.h"
#include "util/xalloc.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int is_phase(const struct gs_item *it, uint32_t unused)
{
	(void)unused;
	return it->what == GS_IT_PHASE;
}

/* A period of a few launches and no wait (a C loop that launches one
 * kernel, over and over) is grouped into steps of GROUP_LAUNCHES launches
 * at least: what a graph of the loop's iterations would hold. */
#define GROUP_LAUNCHES 16

/* Step boundaries from the period of the tokens of the items sel picked:
 * the times of the repetitions' first items. Returns how many (reps + 1
 * where the next repetition began, else reps), 0 with no period. */
static size_t boundaries(const struct gs_item *v, size_t n, int (*sel)(const struct gs_item *, uint32_t),
			 uint32_t arg, uint32_t anchor, uint64_t **out, struct gs_period *per)
{
	size_t m = 0;
	uint32_t *tok = malloc((n ? n : 1) * sizeof(*tok));
	size_t *at = malloc((n ? n : 1) * sizeof(*at));
	size_t nb = 0;
	*out = NULL;
	if (tok && at) {
		for (size_t i = 0; i < n; i++)
			if (sel(&v[i], arg)) {
				tok[m] = v[i].tok;
				at[m++] = i;
			}
		int found = gs_period_find(tok, m, anchor, per) == 1;
		if (found && sel != is_phase) {
			size_t launches = 0, waits = 0, first = per->start + per->anchor;
			for (size_t j = first; j < first + per->period && j < m; j++) {
				launches += v[at[j]].kind == GSPY_KIND_launch;
				waits += gs_replay_waits(&v[at[j]]);
			}
			/* Another thread's wait in the period is the step's too (PyTorch's
			 * .item() on the main thread, backward launched on autograd's). */
			uint64_t t0 = first < m ? v[at[first]].start : UINT64_MAX,
				 t1 = first + per->period < m ? v[at[first + per->period]].start : UINT64_MAX;
			for (size_t i = 0; !waits && launches < GROUP_LAUNCHES && i < n; i++)
				waits += v[i].start >= t0 && v[i].start < t1 && gs_replay_waits(&v[i]);
			if (!waits && launches < GROUP_LAUNCHES) {
				size_t group = (GROUP_LAUNCHES + (launches ? launches : 1) - 1) / (launches ? launches : 1);
				per->period *= group;
				per->runs = per->reps;
				per->reps /= group;
			}
		}
		if (found && per->reps >= 3) {
			*out = xrealloc(NULL, (per->reps + 1) * sizeof(**out));
			for (size_t k = 0; k <= per->reps; k++) {
				size_t j = per->start + per->anchor + k * per->period;
				if (j < m)
					(*out)[nb++] = v[at[j]].start;
			}
		}
	}
	free(tok);
	free(at);
	for (size_t k = 1; k < nb; k++)
		if ((*out)[k] <= (*out)[k - 1])
			nb = 0; /* not in time order (a JSON Lines file written out of order): no step */
	if (nb < 4) {
		free(*out);
		*out = NULL;
		return 0;
	}
	return nb;
}

/* The smallest g of 2..GROUP_MAX such that nine in ten of the steps'
 * phases are those of the step g later, and a fifth more of them than of
 * the next step's (a step skipped now and then is no period); 1 where
 * none is. */
#define GROUP_MAX 8

static size_t group_of(const uint32_t *sig, size_t steps)
{
	size_t same1 = 0;
	for (size_t k = 0; k + 1 < steps; k++)
		same1 += sig[k] == sig[k + 1];
	for (size_t g = 2; g <= GROUP_MAX && steps >= 4 * g; g++) {
		size_t same = 0;
		for (size_t k = 0; k + g < steps; k++)
			same += sig[k] == sig[k + g];
		if (same * 10 >= (steps - g) * 9 && same * 10 >= same1 * 10 + (steps - g) * 2)
			return g;
	}
	return 1;
}

/* The commonest of n hashes. */
static uint32_t mode_of(const uint32_t *sig, size_t n)
{
	uint32_t *d = xcalloc(n ? n : 1, sizeof(*d)), mode = n ? sig[0] : 0;
	memcpy(d, sig, n * sizeof(*d));
	qsort(d, n, sizeof(*d), cmp_u32);
	for (size_t k = 0, run = 0, best = 0; k < n; k++) {
		run = k && d[k] == d[k - 1] ? run + 1 : 1;
		if (run > best) {
			best = run;
			mode = d[k];
		}
	}
	free(d);
	return mode;
}

/* The counted steps: their begins, their phases' hash and how many more
 * forward phases than backward ones they hold (an evaluation's forwards
 * have none). */
struct counts {
	uint64_t *b;
	uint32_t *sig;
	int32_t *fwd;
	size_t nb;
};

/* The begins of the counted steps: none where they are not in time order. */
static void counted(const struct gs_report *r, const struct gs_item *v, size_t n, int whole, struct counts *c)
{
	size_t cap = 0;
	uint64_t last = 0;
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		if (v[i].what != GS_IT_PHASE && v[i].what != GS_IT_MARK)
			continue;
		/* A new count, above every one before (a phase of the user's,
		 * unmarked or of a count gone back, begins none). */
		if (v[i].corr > last && (last || whole)) {
			if (c->nb && v[i].start <= c->b[c->nb - 1]) {
				c->nb = 0; /* a JSON Lines file written out of order */
				return;
			}
			if (c->nb == cap) {
				cap = cap ? 2 * cap : 64;
				c->b = xrealloc(c->b, cap * sizeof(*c->b));
				c->sig = xrealloc(c->sig, cap * sizeof(*c->sig));
				c->fwd = xrealloc(c->fwd, cap * sizeof(*c->fwd));
			}
			c->b[c->nb] = v[i].start;
			c->sig[c->nb] = 0;
			c->fwd[c->nb++] = 0;
		}
		if (v[i].corr > last)
			last = v[i].corr;
		if (!c->nb)
			continue;
		c->sig[c->nb - 1] = c->sig[c->nb - 1] * 31u + v[i].tok;
		const char *nm = v[i].phase < r->nphases ? r->phases[v[i].phase].name : "";
		c->fwd[c->nb - 1] += !strcmp(nm, "forward") - !strcmp(nm, "backward");
	}
}

/* g counts a step, unless the counts unlike the commonest hold more
 * forwards than it (an evaluation every few steps: those are the steps
 * apart, not a period of the loop's). */
static size_t group(const struct counts *c)
{
	size_t steps = c->nb ? c->nb - 1 : 0, g = group_of(c->sig, steps);
	uint32_t mode = g > 1 ? mode_of(c->sig, steps) : 0;
	int32_t fwd = 0;
	for (size_t k = 0; g > 1 && k < steps; k++)
		if (c->sig[k] == mode)
			fwd = c->fwd[k];
	size_t evaluations = 0, unlike = 0;
	for (size_t k = 0; g > 1 && k < steps; k++)
		if (c->sig[k] != mode)
			unlike++, evaluations += c->fwd[k] > fwd;
	return unlike && evaluations == unlike ? 1 : g;
}

size_t gs_bounds_marked(const struct gs_report *r, const struct gs_item *v, size_t n, int whole, uint64_t **out,
			uint8_t **odd, size_t *groupp)
{
	struct counts c;
	counted(r, v, n, whole, &c);
	size_t nb = c.nb, g = *groupp = group(&c);
	uint64_t *b = c.b;
	uint32_t *sig = c.sig;
	free(c.fwd);
	/* Steps whose phases repeat every g counts, not every one (two
	 * optimizers taking turns, a critic's five steps to a generator's
	 * one) are grouped g a step. */
	if (g > 1) {
		size_t m = 0;
		for (size_t k = 0; k < nb; k += g, m++) {
			b[m] = b[k];
			sig[m] = sig[k];
			for (size_t j = k + 1; j < k + g && j < nb; j++)
				sig[m] = sig[m] * 31u + sig[j];
		}
		nb = m;
	}
	/* The commonest steps' phases; the leading steps without them are
	 * warm-up (a model's first pass before the loop, in step 0). */
	size_t k0 = 0;
	if (nb >= 5) {
		uint32_t mode = mode_of(sig, nb - 1);
		while (k0 < (nb - 1) / 2 && sig[k0] != mode)
			k0++;
		*odd = xcalloc(nb, 1);
		for (size_t k = k0; k + 1 < nb; k++)
			(*odd)[k - k0] = sig[k] != mode;
	}
	free(sig);
	if (nb < 5 || nb - k0 < 5) {
		free(b);
		free(*odd);
		*odd = NULL;
		return 0;
	}
	memmove(b, b + k0, (nb - k0) * sizeof(*b));
	*out = b;
	return nb - k0;
}

static int thread_work(const struct gs_item *it, uint32_t tid)
{
	return it->what == GS_IT_CALL && it->tid == tid &&
	       (it->kind == GSPY_KIND_launch || it->kind == GSPY_KIND_copy || it->kind == GSPY_KIND_memset ||
		it->kind == GSPY_KIND_sync);
}

/* A tally of up to cap keys: count one more of key. */
struct tally {
	struct { uint32_t key, n; } k[64];
	size_t n, cap;
};

static void tally_add(struct tally *t, uint32_t key)
{
	size_t k = 0;
	while (k < t->n && t->k[k].key != key)
		k++;
	if (k == t->n && t->n < t->cap)
		t->k[t->n++].key = key, t->k[k].n = 0;
	if (k < t->n)
		t->k[k].n++;
}

/* The key counted most (the first of those), 0 with none. */
static uint32_t tally_top(const struct tally *t)
{
	uint32_t best = 0, bn = 0;
	for (size_t k = 0; k < t->n; k++)
		if (t->k[k].n > bn) {
			bn = t->k[k].n;
			best = t->k[k].key;
		}
	return best;
}

/* The thread that launches most; the token of its most frequent wait
 * (a step ends with it, where the program waits once a step). */
static uint32_t launcher(const struct gs_item *v, size_t n, uint32_t *wait_tok)
{
	struct tally threads = { .cap = 64 }, waits = { .cap = 16 };
	for (size_t i = 0; i < n; i++)
		if (v[i].what == GS_IT_CALL && v[i].kind == GSPY_KIND_launch)
			tally_add(&threads, v[i].tid);
	uint32_t best = tally_top(&threads);
	for (size_t i = 0; i < n; i++)
		if (v[i].tid == best && gs_replay_droppable_wait(&v[i]))
			tally_add(&waits, v[i].tok);
	*wait_tok = tally_top(&waits);
	return best;
}

/* Adds phase ph's name to the list in out (a line that fits the report's
 * 100 columns); 0 when full, ", ..." added. */
static int add_name(const struct gs_report *r, uint32_t ph, char *out, size_t cap, size_t *len, size_t *seen)
{
	char e[4 * 90 + 1]; /* one line: a newline in a name would pass for the report's own */
	/* (the first name is cut to fit: the list is never empty) */
	size_t max = *seen ? 90 : *len + 16 < 90 ? 90 - *len - 6 : 10;
	/* (an escaped name is longer than its bytes: cut to max columns as escaped) */
	const char *nm = gs_term_line(e, max + 1, r->phases[ph < r->nphases ? ph : 0].name, max);
	if (*len >= cap)
		return 0;
	if (!*seen && *len + strlen(nm) > 90) {
		*len += (size_t)snprintf(out + *len, cap - *len, "%s...", nm);
		(*seen)++;
		return 0;
	}
	if (*len + strlen(nm) + 2 > 90) {
		snprintf(out + *len, cap - *len, ", ...");
		return 0;
	}
	*len += (size_t)snprintf(out + *len, cap - *len, "%s%s", *seen ? ", " : "", nm);
	(*seen)++;
	return 1;
}

static void describe_phases(const struct gs_report *r, const struct gs_item *v, size_t n, const struct gs_period *per,
			    char *out, size_t cap)
{
	size_t len = (size_t)snprintf(out, cap, "the cycle of phases "), seen = 0;
	for (size_t i = 0, k = 0; i < n && seen < per->period; i++)
		if (v[i].what == GS_IT_PHASE && k++ >= per->start + per->anchor &&
		    !add_name(r, v[i].phase, out, cap, &len, &seen))
			return;
}

void gs_bounds_describe(const struct gs_report *r, const struct gs_item *v, size_t n, uint64_t t0, uint64_t t1,
			const char *head, char *out, size_t cap)
{
	size_t len = (size_t)snprintf(out, cap, "%s", head), seen = 0;
	/* The top-level phases; none, the counted ones inside the user's range. */
	for (int what = GS_IT_PHASE; what <= GS_IT_MARK && !seen; what++)
		for (size_t i = 0; i < n && v[i].start < t1; i++)
			if (v[i].what == what && v[i].start >= t0 && !add_name(r, v[i].phase, out, cap, &len, &seen))
				return;
}

size_t gs_bounds_phases(const struct gs_report *r, const struct gs_item *v, size_t n, uint64_t **out, char *what,
			size_t cap)
{
	struct gs_period per;
	size_t nb = boundaries(v, n, is_phase, 0, 0, out, &per);
	if (nb)
		describe_phases(r, v, n, &per, what, cap);
	return nb;
}

size_t gs_bounds_calls(const struct gs_item *v, size_t n, uint64_t **out, char *what, size_t cap)
{
	struct gs_period per = { 0 };
	uint32_t wait_tok, tid = launcher(v, n, &wait_tok);
	size_t nb = tid ? boundaries(v, n, thread_work, tid, wait_tok, out, &per) : 0;
	/* A sequence of calls seen only a few times is not yet a loop to
	 * advise a step of (OpenMP threads' three tasks alike: each differs
	 * in size; phases, named by the program, repeat as they are). */
	if (nb && (per.runs ? per.runs : nb - 1) < GS_CALL_STEPS_MIN) {
		free(*out);
		*out = NULL;
		nb = 0;
	}
	if (nb)
		snprintf(what, cap, "the %zu calls that repeat on thread %u (kernels, copies and waits; no phase "
			 "repeats)", per.period, tid);
	return nb;
}
