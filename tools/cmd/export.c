/* SPDX-License-Identifier: MIT */
/*
 * gpuspy export --format chrome FILE|DIR... -o OUT.json: the timeline for
 * Perfetto (written by render/chrome.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#include "render/chrome.h"
#include "render/flame.h"
#include "util/cli.h"
#include "util/files.h"
#include "util/paths.h"

/* An output named by -o that is refused, said in one line: a link (never
 * written through: security.md), not a regular file, or one of the
 * traces read (it would become their JSON). */
static int output_refused(const char *out, const struct gs_paths *in)
{
	struct stat o, st;
	if (lstat(out, &o) != 0)
		return 0;
	if (S_ISLNK(o.st_mode)) {
		errno = ELOOP;
		gs_file_create_error(out);
		return 1;
	}
	if (!S_ISREG(o.st_mode)) {
		fprintf(stderr, "gpuspy: error: %s: not a regular file; give a file name\n", out);
		return 1;
	}
	for (size_t i = 0; i < in->n; i++)
		if (stat(in->v[i], &st) == 0 && st.st_dev == o.st_dev && st.st_ino == o.st_ino) {
			fprintf(stderr, "gpuspy: error: %s: is a trace this export reads; give the output another "
					"name\n", out);
			return 1;
		}
	return 0;
}

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
	int fmt = !format ? -1 : !strcmp(format, "chrome") ? 0 : !strcmp(format, "collapsed") ? 1
		: !strcmp(format, "speedscope") ? 2 : -1;
	if (fmt < 0) {
		fprintf(stderr, "gpuspy: error: export: --format %s is not known; use chrome, speedscope or "
				"collapsed\n", format ? format : "(missing)");
		return 2;
	}
	if (!in.n)
		return status ? status : gs_missing("export", "trace (FILE|DIR)");
	if (!outp)
		return gs_missing("export", "output (-o OUT.json)");
	/* -o - is standard output; a file is written whole or not at all
	 * (beside it under a fresh name, then renamed: util/files.c), and
	 * said once written. */
	int to_stdout = !strcmp(outp, "-");
	struct gs_file_tmp tmp;
	if (!to_stdout && output_refused(outp, &in))
		return 1;
	FILE *f = to_stdout ? stdout : gs_file_replace_open(outp, &tmp);
	if (!f) {
		gs_file_create_error(outp);
		return 1;
	}
	char err[300];
	size_t bad;
	int ok = 1;
	int failed = fmt == 0 ? gs_export_chrome(f, in.v, in.n, err, sizeof(err), &bad)
		     : gs_export_flame(f, fmt == 1 ? GS_FLAME_COLLAPSED : GS_FLAME_SPEEDSCOPE, in.v, in.n, err,
				       sizeof(err), &bad);
	if (failed) {
		fprintf(stderr, "gpuspy: error: %s: %s\n", in.v[bad], err);
		status = 1;
		ok = 0;
	}
	if (to_stdout) {
		if (fflush(stdout) != 0) {
			fprintf(stderr, "gpuspy: error: stdout: write failed: %s\n", strerror(errno));
			status = 1;
		}
	} else {
		int rc = gs_file_replace_commit(f, &tmp, outp, ok);
		if (rc && ok) {
			fprintf(stderr, "gpuspy: error: %s: %s\n", outp, rc == -EIO ? "write failed" : strerror(-rc));
			status = 1;
		} else if (!rc) {
			struct stat st;
			if (stat(outp, &st) == 0)
				fprintf(stderr, "gpuspy: wrote %s (%lld bytes): open it in %s\n", outp,
					(long long)st.st_size, fmt == 0 ? "ui.perfetto.dev" : fmt == 2 ? "speedscope.app" :
					"flamegraph.pl or speedscope.app");
		}
	}
	for (size_t i = 0; i < in.n; i++)
		free(in.v[i]);
	free(in.v);
	return status;
}
