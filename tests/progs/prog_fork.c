/* SPDX-License-Identifier: MIT */
/* The parent records 3 allocations, forks a child that records 5 launches,
 * then records 2 memsets. Each process must have its own file with only its
 * own events. Prints the child's pid. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

int main(void)
{
	CUdeviceptr p[3];
	for (int i = 0; i < 3; i++)
		cuMemAlloc_v2(&p[i], 1024);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		CUfunction f = fakecuda_function("child_kernel", NULL);
		for (int i = 0; i < 5; i++)
			cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	cuMemsetD8_v2(p[0], 0, 16);
	cuMemsetD8_v2(p[1], 0, 16);
	printf("parent %d child %d\n", (int)getpid(), (int)c);
	return 0;
}
