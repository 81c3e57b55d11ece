/* SPDX-License-Identifier: MIT */
/*
 * gpuspy dump FILE.gspy [-o OUT.jsonl]: one trace as JSON Lines, the
 * post-mortem form (written by render/jsonl.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "read/reader.h"
#include "render/jsonl.h"
#include "util/cli.h"
#include "util/files.h"

int gs_cmd_dump(int argc, char **argv)
{
	const char *in = NULL, *outp = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			outp = argv[++i];
		else if (argv[i][0] == '-' && argv[i][1])
			return gs_bad_option("dump", argv[i], "-o");
		else if (!in)
			in = argv[i];
		else {
			fprintf(stderr, "gpuspy: error: dump: one trace at a time, got %s too\n", argv[i]);
			return 2;
		}
	}
	if (!in)
		return gs_missing("dump", "trace (FILE.gspy)");
	/* Checked before the trace is opened: -o the trace itself (by any
	 * name) would cut it under its own reader. */
	if (outp && gs_file_input_refused(outp, (char *const[]){ (char *)in }, 1, "dump"))
		return 1;
	struct gs_trace t;
	char err[256];
	if (gs_trace_open(in, &t, err, sizeof(err)) != 0) {
		fprintf(stderr, "gpuspy: error: %s: %s\n", in, err);
		return 1;
	}
	FILE *out = stdout;
	if (outp && !(out = gs_file_create(outp))) {
		gs_file_create_error(outp);
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
