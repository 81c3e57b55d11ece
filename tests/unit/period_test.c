/* SPDX-License-Identifier: MIT */
/*
 * tools/report/period.c on sequences whose period, warm-up and repetitions
 * are known: prints one line per case, "name period start reps anchor",
 * which tests/test_advice.py compares exactly. Build: make test-build.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/period.h"

static void run(const char *name, const uint32_t *tok, size_t n, uint32_t anchor)
{
	struct gs_period p;
	int rc = gs_period_find(tok, n, anchor, &p);
	printf("%s %d %zu %zu %zu %zu\n", name, rc, p.period, p.start, p.reps, p.anchor);
}

/* Long (about 85 lines): one case after another, each building its
 * sequence in t and printing its line. */
int main(void)
{
	static uint32_t t[100000];
	size_t n = 0;
	/* A training step of 7 calls (5 kernels, a copy, a wait) 50 times
	 * after a warm-up of 23 calls of its own. */
	for (uint32_t i = 0; i < 23; i++)
		t[n++] = 1000 + i;
	for (int s = 0; s < 50; s++)
		for (uint32_t k = 0; k < 7; k++)
			t[n++] = k == 6 ? 99 : 10 + k;
	run("train", t, n, 99);
	/* The same with a first step that compiles (3 more calls inside it). */
	n = 0;
	for (uint32_t k = 0; k < 7; k++) {
		t[n++] = 10 + k;
		if (k == 2)
			for (uint32_t j = 0; j < 3; j++)
				t[n++] = 500 + j;
	}
	for (int s = 0; s < 49; s++)
		for (uint32_t k = 0; k < 7; k++)
			t[n++] = 10 + k;
	run("first_step_compiles", t, n, 0);
	/* A decode loop: 24 layers of 4 kernels, then a sample and a wait,
	 * 200 tokens; a kernel repeats inside the token (sub-periods). */
	n = 0;
	for (int tkn = 0; tkn < 200; tkn++) {
		for (int l = 0; l < 24; l++)
			for (uint32_t k = 0; k < 4; k++)
				t[n++] = 20 + k;
		t[n++] = 30;
		t[n++] = 99;
	}
	run("decode", t, n, 99);
	/* A step with an extra logging call every 10th step: still periodic. */
	n = 0;
	for (int s = 0; s < 100; s++) {
		for (uint32_t k = 0; k < 20; k++)
			t[n++] = 40 + k;
		if (s % 10 == 9)
			t[n++] = 77;
	}
	run("log_every_10", t, n, 0);
	/* A long step: 399 launches of 30 kernels in a fixed, irregular
	 * order, then a wait, 20 times: shorter distances abound (the same
	 * kernel recurs within the step), the step's own is the one that
	 * explains the run. */
	n = 0;
	for (int s = 0; s < 20; s++) {
		uint32_t x = 12345;
		for (int k = 0; k < 399; k++) {
			x = x * 1103515245u + 12345u;
			t[n++] = 200 + (x >> 16) % 30;
		}
		t[n++] = 99;
	}
	run("long_step", t, n, 99);
	/* A token of 137 calls whose kernels cycle every 37 (layers that
	 * launch the same kernels, no call made once a token), 200 tokens;
	 * then the same with a wait after every 10th token. */
	for (int every = 0; every < 2; every++) {
		n = 0;
		for (int tkn = 0; tkn < 200; tkn++) {
			for (uint32_t k = 0; k < 137; k++)
				t[n++] = 600 + k % 37;
			if (every && tkn % 10 == 9)
				t[n++] = 99;
		}
		run(every ? "layers_wait_every_10" : "layers_only", t, n, 0);
	}
	/* No repetition at all. */
	n = 0;
	for (uint32_t i = 0; i < 500; i++)
		t[n++] = 3000 + i;
	run("none", t, n, 0);
	/* Two repetitions only: not a loop. */
	n = 0;
	for (int s = 0; s < 2; s++)
		for (uint32_t k = 0; k < 30; k++)
			t[n++] = 10 + k;
	run("two_only", t, n, 0);
	return 0;
}
