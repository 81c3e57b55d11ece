/* SPDX-License-Identifier: MIT */
/*
 * A program's own fatal-signal handlers, installed before its first CUDA
 * call (so before gpuspy's), must keep their sigaction semantics under
 * gpuspy. One scenario per run, by name:
 *   resethand  SA_RESETHAND SIGSEGV handler that returns: the fault comes
 *              back under the default action, and the process dumps core
 *   nodefer    SA_NODEFER SIGSEGV handler that longjmps out, twice
 *   mask       sa_mask holds SIGUSR1: raised in the handler, it waits
 *   bigstack   SIGTERM handler without SA_ONSTACK using 256 KiB of stack
 *   twice      a plain SIGTERM handler, then the signal sent twice: both
 *              reach it (gpuspy is back in front after the first)
 *   ignored    SIGTERM ignored (SIG_IGN): the program asks what its action
 *              is, then execs a shell that sends it to itself (an ignored
 *              signal stays ignored across exec)
 *   chain      after its first CUDA call (so after gpuspy's), a SIGTERM
 *              handler that chains to the action it replaced when that is
 *              a function (as libraries do), then the signal sent: the
 *              program handles it and runs on
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"

static volatile int hits;
static jmp_buf env;
static volatile int usr1;

static void count(int sig) { (void)sig; hits++; }

static struct sigaction replaced;
static void chain(int sig, siginfo_t *si, void *uc)
{
	hits++;
	if (replaced.sa_flags & SA_SIGINFO)
		replaced.sa_sigaction(sig, si, uc);
	else if (replaced.sa_handler != SIG_DFL && replaced.sa_handler != SIG_IGN)
		replaced.sa_handler(sig);
}
static void jump(int sig) { (void)sig; hits++; longjmp(env, 1); }
static void on_usr1(int sig) { (void)sig; usr1++; }

static void masked(int sig)
{
	(void)sig;
	raise(SIGUSR1);
	sigset_t p;
	sigpending(&p);
	printf("in handler: SIGUSR1 %s\n", sigismember(&p, SIGUSR1) ? "pending" : "delivered");
	fflush(stdout);
	_exit(0);
}

static void deep(int sig)
{
	(void)sig;
	volatile char buf[256 << 10];
	memset((char *)buf, 1, sizeof(buf));
	printf("handler used %zu KiB of stack\n", sizeof(buf) >> 10);
	fflush(stdout);
	_exit(0);
}

static void install(int sig, void (*fn)(int), int flags, int mask_usr1)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (mask_usr1)
		sigaddset(&sa.sa_mask, SIGUSR1);
	sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	if (!strcmp(s, "resethand"))
		install(SIGSEGV, count, SA_RESETHAND, 0);
	else if (!strcmp(s, "nodefer"))
		install(SIGSEGV, jump, SA_NODEFER, 0);
	else if (!strcmp(s, "mask")) {
		install(SIGSEGV, masked, 0, 1);
		install(SIGUSR1, on_usr1, 0, 0);
	} else if (!strcmp(s, "bigstack"))
		install(SIGTERM, deep, 0, 0);
	else if (!strcmp(s, "twice"))
		install(SIGTERM, count, 0, 0);
	else if (!strcmp(s, "ignored"))
		signal(SIGTERM, SIG_IGN);
	CUdeviceptr d = 0;
	cuInit(0);
	CUcontext ctx;
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	cuMemAlloc_v2(&d, 4096); /* gpuspy's handlers go in with the trace file */
	fflush(stdout);
	volatile int *null = NULL;
	if (!strcmp(s, "resethand") || !strcmp(s, "mask")) {
		*null = 1;
		printf("after the fault: %d\n", hits);
	} else if (!strcmp(s, "nodefer")) {
		for (int i = 0; i < 2; i++)
			if (!setjmp(env))
				*null = 1;
		printf("recovered %d times\n", hits);
	} else if (!strcmp(s, "bigstack")) {
		kill(getpid(), SIGTERM);
	} else if (!strcmp(s, "twice")) {
		kill(getpid(), SIGTERM);
		cuMemFree_v2(d);
		kill(getpid(), SIGTERM);
		printf("handler ran %d times\n", hits);
	} else if (!strcmp(s, "chain")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = chain;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, &replaced);
		kill(getpid(), SIGTERM);
		cuMemFree_v2(d);
		printf("handler ran %d times, still running\n", hits);
	} else if (!strcmp(s, "ignored")) {
		struct sigaction cur;
		sigaction(SIGTERM, NULL, &cur);
		printf("SIGTERM ignored %d\n", !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN);
		fflush(stdout);
		execl("/bin/sh", "sh", "-c", "kill -TERM $$; echo and after exec", (char *)NULL);
		return 2;
	}
	return 0;
}
