/* SPDX-License-Identifier: MIT */
/*
 * gpuspy's own messages in numbers, through libgpuspy's gpuspy_python_note
 * (the door the Python helper's messages take to the notes and the log):
 *
 *   prog_notes N LEN [PROCS [early]]
 *
 * makes one CUDA call (its trace exists from then on), then PROCS
 * processes (this one alone by default; more are forked after the call
 * and make none, so their messages reach only GPUSPY_LOG's log) each say
 * N messages of LEN bytes, "pP mNNNN xxx...", all at once; "early": this
 * process says its N before the CUDA call, before its trace exists.
 * Without libgpuspy it says nothing. Prints "notes done".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/cuda_api.h"

static void say(void (*note)(const char *), int proc, int n, int len)
{
	char msg[4096];
	for (int i = 0; i < n; i++) {
		int k = snprintf(msg, sizeof(msg), "p%d m%04d ", proc, i);
		while (k < len && k < (int)sizeof(msg) - 1)
			msg[k++] = 'x';
		msg[k] = 0;
		note(msg);
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, len = argc > 2 ? atoi(argv[2]) : 40;
	int procs = argc > 3 ? atoi(argv[3]) : 1, early = argc > 4 && !strcmp(argv[4], "early");
	void (*note)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "gpuspy_python_note");
	if (note && early)
		say(note, 0, n, len);
	CUdeviceptr d = 0;
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	cuMemAlloc_v2(&d, 4096);
	if (note && !early) {
		for (int p = 1; p < procs; p++)
			if (fork() == 0) {
				say(note, p, n, len);
				_exit(0);
			}
		say(note, 0, n, len);
		while (wait(NULL) > 0)
			;
	}
	printf("notes done\n");
	return 0;
}
