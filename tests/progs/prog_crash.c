/* SPDX-License-Identifier: MIT */
/*
 * Dies, or survives, in the ways a traced program does: after 100 launches,
 *   segv | abort | fpe | term            die of that signal;
 *   recover-before | recover-after       a SIGSEGV handler installed before
 *                                        (or after) the first CUDA call
 *                                        recovers with siglongjmp;
 *   chain-after                          a handler installed after gpuspy's
 *                                        chains to the previous one, as
 *                                        Python's faulthandler does.
 *   bus | bus-recover-before | bus-recover-after
 *                                        the same with the program's own
 *                                        SIGBUS (a store past the end of a
 *                                        file it mapped), which gpuspy,
 *                                        handling SIGBUS on its own trace,
 *                                        must leave to the program.
 * Usage: prog_crash MODE
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

static sigjmp_buf env;
static struct sigaction prev;

static void recover(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "own handler ran, chaining\n";
	ssize_t w = write(1, msg, sizeof(msg) - 1);
	(void)w;
	sigaction(sig, &prev, NULL);
	if (prev.sa_flags & SA_SIGINFO)
		prev.sa_sigaction(sig, si, uc);
	else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN)
		prev.sa_handler(sig);
	else
		raise(sig);
}

/* A real fault (not raise()): the faulting store runs again after a handler
 * returns. Not instrumented, so that sanitizers let it fault. */
__attribute__((no_sanitize("undefined", "address"), noinline)) static void fault(void)
{
	volatile int *volatile p = NULL; /* loaded at run time: the store cannot be optimised away */
	*p = 1;
}

/* SIGBUS: a store into a mapped page past the end of an empty file. */
__attribute__((no_sanitize("undefined", "address"), noinline)) static void bus_fault(void)
{
	FILE *f = tmpfile();
	volatile int *p = f ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0) : MAP_FAILED;
	if (p == MAP_FAILED)
		fault();
	*p = 1;
}

static int bus;

static void handler(void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(bus ? SIGBUS : SIGSEGV, &sa, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "segv";
	if (!strncmp(mode, "bus", 3)) {
		bus = 1;
		mode = mode[3] ? mode + 4 : "segv";
	}
	if (!strcmp(mode, "recover-before"))
		handler(recover);
	CUfunction f = fakecuda_function("crash_kernel", NULL);
	for (int i = 0; i < 100; i++)
		cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	if (!strcmp(mode, "recover-after"))
		handler(recover);
	if (!strcmp(mode, "chain-after")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = chain;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGSEGV, &sa, &prev);
	}
	fflush(stdout);
	if (!strncmp(mode, "recover", 7)) {
		if (sigsetjmp(env, 1) == 0)
			bus ? bus_fault() : fault();
		printf("recovered\n");
		cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		return 0;
	}
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "fpe"))
		raise(SIGFPE);
	if (!strcmp(mode, "term"))
		raise(SIGTERM);
	bus ? bus_fault() : fault(); /* segv, chain-after, bus */
	return 0;
}
