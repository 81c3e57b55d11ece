/* SPDX-License-Identifier: MIT */
/*
 * dlopen'ed by tests/hostile/prog_loader_lock.c: its constructor, which
 * runs with the loader's lock held, says it started (fd
 * HOSTILE_IN_CTOR_FD) and then waits up to 5 s for the program's other
 * thread to finish its first CUDA calls (fd HOSTILE_DONE_FD), as a
 * constructor that takes a lock held by a thread in a CUDA call does.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int hostile_ctor_timed_out;

__attribute__((constructor)) static void wait_for_the_other_thread(void)
{
	int in = atoi(getenv("HOSTILE_IN_CTOR_FD")), done = atoi(getenv("HOSTILE_DONE_FD"));
	char c = 1;
	if (write(in, &c, 1) != 1)
		abort();
	struct pollfd p = { .fd = done, .events = POLLIN };
	hostile_ctor_timed_out = poll(&p, 1, 5000) != 1;
}
