/* SPDX-License-Identifier: MIT */
/* Records N events (several chunks' worth), then dies by SIGKILL, which no
 * handler can see. Usage: prog_kill N */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000;
	CUfunction f = fakecuda_function("doomed_kernel", NULL);
	for (long i = 0; i < n; i++)
		cuLaunchKernel(f, (unsigned)(i % 1000) + 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	fflush(stdout);
	kill(getpid(), SIGKILL);
	return 0;
}
