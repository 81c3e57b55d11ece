/* SPDX-License-Identifier: MIT */
/*
 * _exit and _Exit: a process that ends this way (Python's os._exit, a
 * multiprocessing worker, a child after fork) runs no atexit handler, so
 * the GPU records CUPTI still holds would be lost with it. They are
 * flushed first (gs_cupti_exit_flush: bounded, async-signal-safe), the
 * trace is marked exited with the status (a clean end, which the report
 * says as such), then the process exits as libc's _exit does, with the
 * same status. exit() reaches the kernel through libc's own _exit, not
 * through this one. A child that inherited its parent's memory or file
 * (vfork, a raw fork) leaves them alone.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "gs.h"
#include "gpu_timing.h"
#include "writer.h"

/* The status of the first thread that called _exit: untraced, its
 * exit_group ends the process at once, before a later thread's; traced,
 * both wait for the same flush, and the first's status must still win. */
static int first_status = -1;

static __attribute__((noreturn)) void exit_now(int status)
{
	/* A vfork child (Python's subprocess when exec fails: _exit(255)) runs
	 * in its parent's memory: what it wrote here would be the parent's
	 * status. Such a child, or a raw fork's that made no CUDA call, has
	 * nothing of gpuspy's to end: it exits as it asked. */
	if (__atomic_load_n(&gs_pid, __ATOMIC_RELAXED) != (pid_t)syscall(SYS_getpid))
		for (;;)
			syscall(SYS_exit_group, status);
	int first = -1;
	if (!__atomic_compare_exchange_n(&first_status, &first, status, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		status = first;
	if (gs_cupti_exit_flush() != 0)
		gs_warn_raw("_exit: CUPTI's last GPU records were not handed over within half a second; "
			    "some may be missing", NULL, NULL);
	gs_writer_exit(GSPY_STATE_EXITED, status & 0xff, 0);
	for (;;)
		syscall(SYS_exit_group, status);
}

GS_API void _exit(int status)
{
	exit_now(status);
}

GS_API void _Exit(int status)
{
	exit_now(status);
}
