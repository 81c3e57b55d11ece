/* SPDX-License-Identifier: MIT */
/*
 * What a program does with files around gpuspy's:
 *   wait       one CUDA call, then waits for a line on stdin and exits 0
 *              (the test swaps the trace for a symbolic link meanwhile)
 *   stderr F   closes fd 2 and opens F there, then makes its first CUDA
 *              call (gpuspy has a warning to give: GPUSPY_DIR is bad)
 *   chdir D    changes directory to D before its first CUDA call
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	if (!strcmp(s, "stderr") && argc > 2) {
		close(2);
		if (open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600) != 2)
			return 2;
		dprintf(2, "the program's own line\n");
	}
	if (!strcmp(s, "chdir") && argc > 2 && chdir(argv[2]) != 0)
		return 2;
	CUdeviceptr d = 0;
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	int rc = cuMemAlloc_v2(&d, 4096);
	printf("alloc %d\n", rc);
	fflush(stdout);
	if (!strcmp(s, "wait")) {
		char line[16];
		if (!fgets(line, sizeof(line), stdin))
			return 3;
	}
	return 0;
}
