/* SPDX-License-Identifier: MIT */
/* What a trace's header says about its process (lib/self.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "self.h"

size_t gs_self_args(char *out, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	out[0] = 0;
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, out, cap - 1);
	close(fd);
	if (n <= 0)
		return 0;
	out[n] = 0;
	return (size_t)n;
}

void gs_self_cmdline(char *out, size_t cap)
{
	size_t n = gs_self_args(out, cap);
	for (size_t i = 0; i < n; i++)
		if (out[i] == 0)
			out[i] = ' ';
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = 0;
}

/* On the stack, not CPU_ALLOC: no allocation inside a traced call. A
 * fixed cpu_set_t (1024 CPUs) fails with EINVAL on larger machines. */
uint32_t gs_self_cpus(void)
{
	unsigned long mask[16384 / (8 * sizeof(unsigned long))];
	if (sched_getaffinity(0, sizeof(mask), (cpu_set_t *)mask) != 0)
		return 0;
	return (uint32_t)CPU_COUNT_S(sizeof(mask), (cpu_set_t *)mask);
}
