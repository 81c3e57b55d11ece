/* SPDX-License-Identifier: MIT */
/*
 * How a traced process ended: on a fatal signal (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGABRT, SIGTERM) gpuspy marks its trace "signaled" with the
 * signal number, then behaves exactly as the process would without it: a
 * handler installed before gpuspy is called as it would have been (if it
 * recovers, nothing is marked); with no handler, the default action is
 * restored and the signal re-raised. A handler installed after gpuspy
 * replaces it, and reaches it again only if it chains (Python's faulthandler
 * does). The handler runs on an alternate stack where gpuspy set one, and
 * does only async-signal-safe work (atomic stores to the mapped file).
 * Installed with the trace file, so processes without CUDA are untouched.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "gs.h"

static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM };
#define NFATAL (sizeof(fatal) / sizeof(fatal[0]))
static struct sigaction previous[NFATAL];
static pthread_key_t altstack_key;
static int installed;

static int slot(int sig)
{
	for (size_t i = 0; i < NFATAL; i++)
		if (fatal[i] == sig)
			return (int)i;
	return -1;
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	int e = errno;
	int i = slot(sig);
	const struct sigaction *old = i >= 0 ? &previous[i] : NULL;
	/* Whatever the program's own handler does next, the trace keeps the
	 * signal; the state says "signaled" only when gpuspy sees the death. */
	gs_writer_signal_seen(sig);
	if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, si, uc);
		errno = e;
		return;
	}
	if (old && old->sa_handler == SIG_IGN) {
		errno = e;
		return;
	}
	if (old && old->sa_handler != SIG_DFL && old->sa_handler) {
		old->sa_handler(sig);
		errno = e;
		return;
	}
	/* The process dies of this signal: say so, then die of it. */
	gs_writer_exit(GSPY_STATE_SIGNALED, -1, sig);
	signal(sig, SIG_DFL);
	raise(sig); /* delivered when this handler returns (faults re-fault) */
	errno = e;
}

static void free_altstack(void *p)
{
	stack_t off = { .ss_flags = SS_DISABLE };
	sigaltstack(&off, NULL);
	free(p);
}

/* Each recording thread gets an alternate signal stack unless it has one,
 * so that a stack overflow can still be reported. */
void gs_signals_thread(void)
{
	if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
		return;
	stack_t cur;
	if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
		return;
	size_t size = 64 << 10;
	void *p = malloc(size);
	if (!p)
		return;
	stack_t ss = { .ss_sp = p, .ss_size = size, .ss_flags = 0 };
	if (sigaltstack(&ss, NULL) != 0) {
		free(p);
		return;
	}
	pthread_setspecific(altstack_key, p);
}

void gs_signals_install(void)
{
	if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE) ||
	    pthread_key_create(&altstack_key, free_altstack) != 0)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fatal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal[i], &sa, &previous[i]);
	/* The key and the handlers are set before other threads see this. */
	__atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
}
