/* SPDX-License-Identifier: MIT */
/*
 * _exit and _Exit: a process that ends this way (Python's os._exit, a
 * multiprocessing worker, a child after fork) runs no atexit handler, so
 * the GPU records CUPTI still holds would be lost with it. They are
 * flushed first (gs_cupti_exit_flush: bounded, async-signal-safe), then
 * the process exits as libc's _exit does, with the same status. exit()
 * reaches the kernel through libc's own _exit, not through this one.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "gs.h"
#include "gpu_timing.h"

static __attribute__((noreturn)) void exit_now(int status)
{
	gs_cupti_exit_flush();
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
