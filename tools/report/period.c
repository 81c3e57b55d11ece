/* SPDX-License-Identifier: MIT */
/*
 * The program's own period (period.h). Candidates are the distances
 * between a call and the previous call of the same kind in the second half
 * of the run (where the steady state is); each is tried, smallest first,
 * by comparing every call with the one a period later (give or take a
 * sixteenth of a period: a step that logs every tenth time inserts a call
 * or two, and the calls after it still repeat). The steady state
 * extends back from the end, a period at a time, while at least 80% of a
 * period's calls match; the first period that does not is the warm-up's
 * last (compilation, autotuning, first-call initialisation all add calls
 * the later steps do not make).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/period.h"

#define MAX_CANDIDATES 64

/* The last index of each token seen, by open addressing (tokens are
 * hashes; 0 is never a token's value here: callers map 0 to 1). */
struct last_seen {
	uint32_t *key;
	size_t *at, cap;
};

static size_t *last_slot(struct last_seen *s, uint32_t k)
{
	size_t i = (k * 2654435761u) & (s->cap - 1);
	while (s->key[i] && s->key[i] != k)
		i = (i + 1) & (s->cap - 1);
	if (!s->key[i]) {
		s->key[i] = k;
		s->at[i] = (size_t)-1;
	}
	return &s->at[i];
}

static int by_value(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

static __thread uint32_t *weight_of; /* candidates()'s ranking (a thread's own: reports are read in parallel) */

static int by_weight(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	uint64_t wx = (uint64_t)weight_of[x] * x, wy = (uint64_t)weight_of[y] * y;
	return wx < wy ? 1 : wx > wy ? -1 : (x > y) - (x < y);
}

/* The distances seen at least twice in tok's second half that explain
 * most of it (times seen, by the distance: a step of 400 calls recurs
 * less often than its layers, but covers as much), at most
 * MAX_CANDIDATES, smallest first. */
static size_t candidates(const uint32_t *tok, size_t n, size_t *out)
{
	struct last_seen s = { 0 };
	for (s.cap = 16; s.cap < 2 * n; s.cap <<= 1)
		;
	s.key = calloc(s.cap, sizeof(*s.key));
	s.at = calloc(s.cap, sizeof(*s.at));
	uint32_t *hist = calloc(n / 3 + 1, sizeof(*hist));
	size_t m = 0;
	if (s.key && s.at && hist) {
		/* Each call's distance to the last like it; then each run of
		 * four calls' to the last like it. A step whose calls all recur
		 * inside it (a model's layers launch the same kernels, with no
		 * call made once a step) has no call a step apart from the last
		 * like it, but the four calls where one step meets the next
		 * recur only a step later. */
		for (int gram = 0; gram < 2; gram++) {
			memset(s.key, 0, s.cap * sizeof(*s.key));
			for (size_t i = gram ? 3 : 0; i < n; i++) {
				uint32_t k = tok[i];
				if (gram)
					k = ((tok[i - 3] * 31u + tok[i - 2]) * 31u + tok[i - 1]) * 31u + tok[i];
				size_t *at = last_slot(&s, k ? k : 1);
				if (i >= n / 2 && *at != (size_t)-1 && i - *at <= n / 3)
					hist[i - *at]++;
				*at = i;
			}
		}
		size_t *all = malloc((n / 3 + 1) * sizeof(*all)), na = 0;
		for (size_t d = 1; all && d <= n / 3; d++)
			if (hist[d] >= 2)
				all[na++] = d;
		weight_of = hist; /* qsort has no argument: read during the sort only */
		if (all)
			qsort(all, na, sizeof(*all), by_weight);
		for (size_t i = 0; i < na && m < MAX_CANDIDATES; i++)
			out[m++] = all[i];
		free(all);
	}
	free(s.key);
	free(s.at);
	free(hist);
	qsort(out, m, sizeof(*out), by_value);
	return m;
}

/* How many calls either way a call may recur from a period p later. */
static size_t slack(size_t p)
{
	return p >= 16 ? (p / 16 < 8 ? p / 16 : 8) : 0;
}

/* tok[i] recurs a period later, give or take w calls. */
static int recurs(const uint32_t *tok, size_t n, size_t i, size_t p, size_t w)
{
	if (tok[i] == tok[i + p])
		return 1;
	for (size_t k = 1; k <= w; k++)
		if ((i + p + k < n && tok[i] == tok[i + p + k]) || tok[i] == tok[i + p - k])
			return 1;
	return 0;
}

/* The share of calls from start that recur exactly p later. */
static double exact(const uint32_t *tok, size_t n, size_t start, size_t p)
{
	size_t same = 0, all = 0;
	for (size_t i = start; i + p < n; i++, all++)
		same += tok[i] == tok[i + p];
	return all ? (double)same / (double)all : 0;
}

/* Tries period p: the steady state's start and its share of matches. */
static int try_period(const uint32_t *tok, size_t n, size_t p, size_t *start, double *match)
{
	size_t end = n - p; /* tok[i] is compared with tok[i + p] for i < end */
	size_t w = slack(p);
	/* The run's end (a last synchronize, a final copy back) is no
	 * repetition: up to two periods of it are left off. */
	for (size_t k = 0; k < 2 * p && end > 0 && !recurs(tok, n, end - 1, p, w); k++)
		end--;
	size_t s = end, good = 0;
	while (s >= p) { /* the period [s - p, s) */
		size_t ok = 0;
		for (size_t i = s - p; i < s; i++)
			ok += recurs(tok, n, i, p, w);
		if (ok * 5 < p * 4) {
			/* The warm-up's last period: the steady state starts
			 * after its last mismatch. */
			size_t i = s;
			while (i > s - p && recurs(tok, n, i - 1, p, w))
				i--;
			good += s - i;
			s = i;
			break;
		}
		good += ok;
		s -= p;
	}
	if (s < p) { /* matched back to the first period: the rest of it too */
		while (s > 0 && recurs(tok, n, s - 1, p, w)) {
			s--;
			good++;
		}
	}
	if (end <= s || (end + p - s) / p < 3)
		return 0;
	*start = s;
	*match = (double)good / (double)(end - s);
	return *match >= 0.9;
}

int gs_period_find(const uint32_t *tok, size_t n, uint32_t anchor_tok, struct gs_period *out)
{
	memset(out, 0, sizeof(*out));
	if (n < 6)
		return 0;
	size_t cand[MAX_CANDIDATES];
	size_t m = candidates(tok, n, cand), start[MAX_CANDIDATES], best = (size_t)-1;
	double match[MAX_CANDIDATES];
	int ok[MAX_CANDIDATES];
	/* The period that covers the most of the run; of those within a
	 * tenth of it, the smallest: a multiple of the step also repeats. */
	for (size_t c = 0; c < m; c++)
		if ((ok[c] = try_period(tok, n, cand[c], &start[c], &match[c])) && (best == (size_t)-1 || start[c] < best))
			best = start[c];
	for (size_t c = 0; c < m; c++) {
		if (!ok[c] || (n - start[c]) * 10 < (n - best) * 9)
			continue;
		size_t p = cand[c];
		out->period = p;
		out->start = start[c];
		out->match = match[c];
		/* recurs() allows p/16 calls either way, so a period up to that
		 * much short of the step's matches too (two uploads a step: the
		 * second is a step less one call before the next step's first):
		 * of p and the lengths just over it, the one that recurs exactly
		 * most is the step's. */
		double e = exact(tok, n, start[c], p);
		for (size_t q = p + 1; q <= p + slack(p) && q < n; q++) {
			size_t sq;
			double mq, eq = exact(tok, n, start[c], q);
			if (eq > e && try_period(tok, n, q, &sq, &mq)) {
				e = eq;
				out->period = q;
				out->start = sq;
				out->match = mq;
			}
		}
		p = out->period;
		/* A repetition begins after the wait that ends the one before
		 * (the step's .item() or synchronize), where there is one. */
		for (size_t i = out->start; anchor_tok && i < out->start + p; i++)
			if (tok[i] == anchor_tok) {
				out->anchor = (i + 1 - out->start) % p;
				break;
			}
		out->reps = (n - out->start - out->anchor) / p;
		return 1;
	}
	return 0;
}
