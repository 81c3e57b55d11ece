/* SPDX-License-Identifier: MIT */
/*
 * gpuspy export --format chrome FILE|DIR... -o OUT.json: the timeline for
 * Perfetto (written by render/chrome.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "render/chrome.h"
#include "util/cli.h"
#include "util/files.h"
#include "util/paths.h"

int gs_cmd_export(int argc, char **argv)
{
	const char *format = NULL, *outp = NULL;
	struct gs_paths in = { 0 };
	int status = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--format") && i + 1 < argc)
			format = argv[++i];
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			outp = argv[++i];
		else if (argv[i][0] == '-' && argv[i][1])
			return gs_bad_option("export", argv[i], "--format -o");
		else
			status |= gs_paths_collect(argv[i], &in);
	}
	if (!format || strcmp(format, "chrome") != 0) {
		fprintf(stderr, "gpuspy: error: export: --format %s is not known; use --format chrome\n",
			format ? format : "(missing)");
		return 2;
	}
	if (!in.n)
		return status ? status : gs_missing("export", "trace (FILE|DIR)");
	if (!outp)
		return gs_missing("export", "output (-o OUT.json)");
	FILE *f = gs_file_create(outp);
	if (!f) {
		gs_file_create_error(outp);
		return 1;
	}
	char err[300];
	size_t bad;
	if (gs_export_chrome(f, in.v, in.n, err, sizeof(err), &bad) != 0) {
		fprintf(stderr, "gpuspy: error: %s: %s\n", in.v[bad], err);
		status = 1;
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "gpuspy: error: %s: write failed: %s\n", outp, strerror(errno));
		status = 1;
	}
	for (size_t i = 0; i < in.n; i++)
		free(in.v[i]);
	free(in.v);
	return status;
}
