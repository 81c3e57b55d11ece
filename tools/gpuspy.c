/* SPDX-License-Identifier: MIT */
/*
 * The gpuspy command: reads traces written by libgpuspy.
 *
 *   gpuspy dump FILE [-o OUT]     the trace as JSON Lines
 *
 * Errors are one line, `gpuspy: error: <file>: <what>, <what to do>`, and a
 * non-zero exit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "reader.h"

#define GPUSPY_VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuspy dump FILE.gspy [-o OUT.jsonl]\n"
		   "       gpuspy --version\n");
}

static int cmd_dump(int argc, char **argv)
{
	const char *in = NULL, *outp = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			outp = argv[++i];
		else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "gpuspy: error: dump: unknown option %s, see gpuspy --help\n", argv[i]);
			return 2;
		} else if (!in)
			in = argv[i];
		else {
			fprintf(stderr, "gpuspy: error: dump: one trace at a time, got %s too\n", argv[i]);
			return 2;
		}
	}
	if (!in) {
		usage(stderr);
		return 2;
	}
	struct gs_trace t;
	char err[256];
	if (gs_trace_open(in, &t, err, sizeof(err)) != 0) {
		fprintf(stderr, "gpuspy: error: %s: %s\n", in, err);
		return 1;
	}
	FILE *out = stdout;
	if (outp && !(out = fopen(outp, "w"))) {
		fprintf(stderr, "gpuspy: error: %s: cannot create: %s\n", outp, strerror(errno));
		gs_trace_close(&t);
		return 1;
	}
	int rc = gs_dump(&t, out);
	if (fflush(out) != 0)
		rc = -1;
	if (rc)
		fprintf(stderr, "gpuspy: error: %s: write failed: %s\n", outp ? outp : "stdout",
			strerror(errno));
	if (out != stdout)
		fclose(out);
	if (t.truncated)
		fprintf(stderr, "gpuspy: warning: %s: file is truncated; dumped the %llu complete events it holds\n",
			in, (unsigned long long)t.events);
	gs_trace_close(&t);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("gpuspy %s (trace format %u)\n", GPUSPY_VERSION, GSPY_FORMAT_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(argc - 2, argv + 2);
	fprintf(stderr, "gpuspy: error: unknown command '%s', see gpuspy --help\n", argv[1]);
	return 2;
}
