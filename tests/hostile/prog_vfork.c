/* SPDX-License-Identifier: MIT */
/*
 * Children that share or copy the parent's memory without gpuspy's fork
 * handlers, and a handler that chains to gpuspy's without a siginfo.
 * Each mode first makes 3 calls (an allocation and a free each).
 *
 * `vfork`: a vfork child whose exec fails ends with _exit(255), as
 * Python's subprocess does when the program is missing; the parent prints
 * the child's status, then ends with _exit(7).
 *
 * `rawexit`: a child of fork by system call (no fork handlers) that made
 * no call ends with exit(5), running the atexit handlers and destructors
 * it inherited; the parent prints its status, makes 3 more calls and
 * exits 0.
 *
 * `abortchain`: the program puts its own SIGABRT handler in front of
 * gpuspy's and chains to the one it replaced through the three-argument
 * form with no siginfo (NULL), as some handlers do (`abortchain info`:
 * with the siginfo it got); then abort(). The process must die of
 * SIGABRT once the handler returns, having said that the handler ran.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"

static void calls(int n)
{
	for (int i = 0; i < n; i++) {
		CUdeviceptr d = 0;
		cuMemAlloc_v2(&d, 4096 * (size_t)(i + 1));
		cuMemFree_v2(d);
	}
}

static struct sigaction replaced;
static int pass_info;

static void on_abort(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "the program's handler ran\n";
	(void)!write(1, msg, sizeof(msg) - 1);
	if ((replaced.sa_flags & SA_SIGINFO) && replaced.sa_sigaction)
		replaced.sa_sigaction(sig, pass_info ? si : NULL, pass_info ? uc : NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	calls(3);
	if (!strcmp(mode, "vfork")) {
		pid_t pid = vfork();
		if (pid == 0) {
			char *const av[] = { "/nonexistent/gpuspy-missing-tool", NULL };
			execv(av[0], av);
			_exit(255);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		fflush(stdout);
		_exit(7);
	}
	if (!strcmp(mode, "rawexit")) {
		long pid = syscall(SYS_fork);
		if (pid == 0)
			exit(5);
		int st = 0;
		waitpid((pid_t)pid, &st, 0);
		printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		calls(3);
		return 0;
	}
	if (!strcmp(mode, "abortchain")) {
		pass_info = argc > 2 && !strcmp(argv[2], "info");
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_abort;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGABRT, &sa, &replaced);
		fflush(stdout);
		abort();
	}
	fprintf(stderr, "usage: prog_vfork vfork|rawexit|abortchain [info]\n");
	return 2;
}
