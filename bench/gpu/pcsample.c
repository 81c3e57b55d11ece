/* SPDX-License-Identifier: MIT */
/*
 * A sampling profiler for a machine with no perf and no hardware counters
 * (the GPU machine): preloaded with PCSAMPLE_OUT=FILE, it interrupts the
 * main thread every PCSAMPLE_US microseconds (default 200, each interval
 * drawn from 0.5x..1.5x of it so that it cannot beat with a loop's period)
 * and keeps the interrupted instruction's address. The clock is the wall
 * clock (a high-resolution timer), not the thread's CPU time, which the
 * kernel checks only at its tick (4 ms): a main thread that never sleeps,
 * as in a launch-bound loop, is sampled the same either way. At exit
 * it writes the process's executable mappings and the count of samples at
 * each address, for bench/gpu/pcsample_report.py to turn into CPU time per
 * library and per function. Only the leaf is kept: a function's own time,
 * not its callees'.
 *
 *   gcc -O2 -shared -fPIC bench/gpu/pcsample.c -o pcsample.so -lrt
 *   LD_PRELOAD=./pcsample.so PCSAMPLE_OUT=s.txt python3 loop.py
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

enum { CAP = 1 << 22 };
static uint64_t *pcs;
static unsigned long n_samples, n_lost;
static timer_t timer;
static int on;
static double cpu0, cpu1;
static long interval_ns;
static uint64_t rng = 88172645463325252ull;

/* The next interval: 0.5x..1.5x the mean (xorshift64). */
static void arm(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	long ns = interval_ns / 2 + (long)(rng % (uint64_t)interval_ns);
	struct itimerspec it = { { 0, 0 }, { ns / 1000000000, ns % 1000000000 } };
	timer_settime(timer, 0, &it, NULL);
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_tick(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	int e = errno; /* timer_settime may set it: the program must not see */
	unsigned long i = __atomic_fetch_add(&n_samples, 1, __ATOMIC_RELAXED);
	if (i < CAP)
		pcs[i] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	else
		__atomic_fetch_add(&n_lost, 1, __ATOMIC_RELAXED);
	if (on)
		arm();
	errno = e;
}

void pcsample_begin(void)
{
	n_samples = 0; /* only the main thread is ever interrupted */
	n_lost = 0;
	cpu0 = thread_cpu_s();
}

void pcsample_end(void)
{
	if (!__atomic_exchange_n(&on, 0, __ATOMIC_SEQ_CST))
		return;
	timer_delete(timer);
	cpu1 = thread_cpu_s();
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

__attribute__((constructor)) static void start(void)
{
	const char *out = getenv("PCSAMPLE_OUT");
	if (!out || !*out)
		return;
	pcs = malloc(sizeof(*pcs) * CAP);
	if (!pcs)
		return;
	long us = getenv("PCSAMPLE_US") ? atol(getenv("PCSAMPLE_US")) : 200;
	interval_ns = (us > 0 ? us : 200) * 1000;
	struct sigaction sa = { 0 };
	sa.sa_sigaction = on_tick;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) != 0)
		return;
	/* The signal goes to the main thread only. */
	struct sigevent ev = { 0 };
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGPROF;
	ev._sigev_un._tid = gettid();
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) {
		perror("pcsample: timer_create");
		return;
	}
	cpu0 = thread_cpu_s();
	on = 1;
	arm();
}

__attribute__((destructor)) static void stop(void)
{
	if (!pcs || cpu0 == 0)
		return;
	pcsample_end();
	double cpu = cpu1 - cpu0;
	unsigned long n = n_samples < CAP ? n_samples : CAP;
	FILE *f = fopen(getenv("PCSAMPLE_OUT"), "w");
	if (!f)
		return;
	fprintf(f, "samples %lu lost %lu main_cpu_s %.6f interval_us %s\n", n, n_lost, cpu,
		getenv("PCSAMPLE_US") ? getenv("PCSAMPLE_US") : "200");
	FILE *m = fopen("/proc/self/maps", "r");
	char line[4096];
	while (m && fgets(line, sizeof(line), m))
		if (strstr(line, " r-xp ") || strstr(line, " r-x"))
			fprintf(f, "map %s", line);
	if (m)
		fclose(m);
	qsort(pcs, n, sizeof(*pcs), cmp);
	for (unsigned long i = 0; i < n;) {
		unsigned long j = i;
		while (j < n && pcs[j] == pcs[i])
			j++;
		fprintf(f, "pc %lx %lu\n", (unsigned long)pcs[i], j - i);
		i = j;
	}
	fclose(f);
}
