/* SPDX-License-Identifier: MIT */
/*
 * How a traced process ended: on a fatal signal (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGABRT, SIGTERM) gpuspy marks its trace "signaled" with the
 * signal number, then behaves exactly as the process would without it: the
 * action installed before gpuspy's is put back and the signal delivered
 * again under it (a handler that recovers leaves nothing marked but the
 * signal; the default action kills the process as it would have). A handler installed after gpuspy
 * replaces it, and reaches it again only if it chains: by putting gpuspy's
 * back and raising the signal again (Python's faulthandler), as above; by
 * calling it, which for SIGTERM only marks the signal (the program's
 * handler decides what follows). The handler runs on an alternate stack where gpuspy set one, and
 * does only async-signal-safe work (atomic stores to the mapped file; where
 * the signal kills, CUPTI's held GPU records are flushed first by the
 * flusher thread, waited for on a futex 500 ms at most).
 * Installed with the trace file, so processes without CUDA are untouched;
 * a signal the program ignores is left ignored (put_in_front).
 *
 * One fault is gpuspy's own and never reaches the program: SIGBUS on the
 * trace file's mapping, the file having been cut under the program
 * (writer.c, gs_writer_fault). Recording stops and the program goes on.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs.h"
#include "gpu_timing.h"
#include "writer.h"
#include "module.h"

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

static int rearm; /* a program's action was put back: gpuspy's goes in again later */

/*
 * gpuspy never calls the program's handler itself: its sa_flags
 * (SA_RESETHAND, SA_NODEFER, SA_ONSTACK, SA_SIGINFO) and sa_mask would not
 * apply. It puts the program's action back and lets the kernel deliver the
 * signal again under it: a fault re-executes the faulting instruction when
 * this returns; any other signal is queued again to this thread with the
 * same siginfo, pending until this returns (it is blocked here).
 */
static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int e = errno;
	/* A store into (or load from) the trace file after another process
	 * cut it: not the program's fault, and never its death. First, before
	 * anything here touches the file: recording stops, and the
	 * instruction runs again on the anonymous memory now in its place. */
	if (sig == SIGBUS && si && si->si_code > 0 && gs_writer_fault(si->si_addr)) {
		errno = e;
		return;
	}
	int i = slot(sig);
	if (i < 0)
		return;
	const struct sigaction *old = &previous[i];
	/* si is read only for the signals a fault raises: a handler that
	 * chains through signal()'s one-argument form passes none. */
	int fault = sig != SIGTERM && sig != SIGABRT && si && si->si_code > 0;
	/* Not delivered to gpuspy but called by the program's own handler,
	 * installed since, which chains to the action it replaced (gpuspy's):
	 * the program handles the signal, and what follows is its to decide.
	 * Putting gpuspy's saved action back over its handler and sending the
	 * signal again killed a program that handles SIGTERM and runs on. A
	 * fault ends the process whatever its handler does: it goes the way
	 * below. So does abort()'s SIGABRT, which the process sent itself
	 * (abort kills once the handler returns), except that the program's
	 * handler stays and nothing is sent again: the trace is flushed and
	 * marked, and abort does the rest. A SIGABRT from elsewhere (kill), or
	 * passed on without its siginfo, the program may live through: noted
	 * only, as the others. */
	struct sigaction cur;
	int chained = !fault && sigaction(sig, NULL, &cur) == 0 &&
		      !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fatal);
	int aborting = sig == SIGABRT && si && si->si_code == SI_TKILL && si->si_pid == getpid();
	if (chained && !aborting) {
		gs_writer_signal_seen(sig);
		errno = e;
		return;
	}
	/* Whatever the program's own handler does next, the trace keeps the
	 * signal; the state says "signaled" only when gpuspy sees the death.
	 * The default action kills, except a pid namespace's init (pid 1,
	 * `python train.py` as a container's first process), which the
	 * kernel leaves running for any signal it does not force (a fault):
	 * delivered again below, the signal is dropped, and the program,
	 * its CUPTI flusher and its trace go on. */
	gs_writer_signal_seen(sig);
	if (chained || (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL && (fault || getpid() != 1))) {
		/* Death follows: CUPTI's held GPU records first (the flusher
		 * thread's forced flush, waited for 500 ms at most). */
		gs_cupti_exit_flush();
		gs_writer_exit(GSPY_STATE_SIGNALED, -1, sig);
	}
	if (chained) {
		errno = e;
		return;
	}
	sigaction(sig, old, NULL);
	__atomic_store_n(&rearm, 1, __ATOMIC_RELEASE);
	if (!fault) {
		/* Delivered, si is the kernel's; a direct call may pass none. */
		siginfo_t again = { .si_signo = sig, .si_code = SI_TKILL };
		if (si)
			again = *si;
		syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), sig, &again);
	}
	errno = e;
}

/*
 * gpuspy's handler in front of each fatal signal's action, where it is not
 * already, except an ignored signal's: the program would read a handler
 * back instead of SIG_IGN, and exec resets a handled signal's action but
 * keeps an ignored one's, so the programs it runs would be killed by a
 * signal they inherited ignored. An ignored signal ends nothing gpuspy
 * could mark.
 */
static void put_in_front(void)
{
	struct sigaction sa, cur;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fatal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFATAL; i++) {
		if (sigaction(fatal[i], NULL, &cur) != 0 || ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fatal) ||
		    (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN))
			continue;
		previous[i] = cur; /* before the handler that reads it is in */
		sigaction(fatal[i], &sa, NULL);
	}
}

/* gpuspy's handler goes back in front of whatever the program has now
 * (from the record path, well after the signal was handled). */
static void signals_rearm(void)
{
	if (!__atomic_exchange_n(&rearm, 0, __ATOMIC_ACQ_REL))
		return;
	put_in_front();
}

#define ALTSTACK (64u << 10)
#define GUARD 4096u

static void free_altstack(void *p)
{
	stack_t off = { .ss_flags = SS_DISABLE };
	sigaltstack(&off, NULL);
	munmap((char *)p - GUARD, ALTSTACK + GUARD);
}

/* Each recording thread gets an alternate signal stack unless it has one,
 * so that a stack overflow can still be reported. */
static void signals_thread(void)
{
	if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
		return;
	stack_t cur;
	if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
		return;
	/* A guard page below it: an overflow faults instead of writing on. */
	char *m = mmap(NULL, ALTSTACK + GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (m == MAP_FAILED)
		return;
	mprotect(m, GUARD, PROT_NONE);
	void *p = m + GUARD;
	stack_t ss = { .ss_sp = p, .ss_size = ALTSTACK, .ss_flags = 0 };
	if (sigaltstack(&ss, NULL) != 0) {
		munmap(m, ALTSTACK + GUARD);
		return;
	}
	pthread_setspecific(altstack_key, p);
}

static void signals_install(struct gspy_header *h)
{
	(void)h;
	if (__atomic_load_n(&installed, __ATOMIC_ACQUIRE) ||
	    pthread_key_create(&altstack_key, free_altstack) != 0)
		return;
	put_in_front();
	/* The key and the handlers are set before other threads see this. */
	__atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
}

GS_MODULE(signals, 80, .started = signals_install, .thread = signals_thread, .slow = signals_rearm);
