/* SPDX-License-Identifier: MIT */
/*
 * gpuspy export --format chrome FILE|DIR... -o OUT.json: the timeline for
 * Perfetto (written by render/chrome.c); --format speedscope|collapsed:
 * flame graphs of the calls' stacks (render/flame.c).
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
	struct stat o;
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
	return gs_file_input_refused(out, in->v, in->n, "export");
}

/* The traces in paths as fmt (0 chrome, 1 collapsed, 2 speedscope) to f:
 * gs_export_chrome's and gs_export_flame's result. A flame graph holds only
 * the calls with a stack: how much that is, said when it is not all. */
static int write_export(FILE *f, int fmt, const struct gs_paths *in, char *err, size_t errlen, size_t *bad)
{
	struct gs_flame_cover c;
	if (fmt == 0)
		return gs_export_chrome(f, in, err, errlen, bad);
	int rc = gs_export_flame(f, fmt == 1 ? GS_FLAME_COLLAPSED : GS_FLAME_SPEEDSCOPE, in, &c, err, errlen, bad);
	if (!rc && c.stacked < c.calls)
		fprintf(stderr, "gpuspy: calls with stacks: %llu of %llu (%.1f%% of their host time); only they are "
			"in the flame graph: GPUSPY_STACKS=all GPUSPY_STACK_LAUNCHES=1 GPUSPY_STACK_MIN=0 give every "
			"call one\n", (unsigned long long)c.stacked, (unsigned long long)c.calls,
			c.host_ns ? 100.0 * (double)c.stacked_ns / (double)c.host_ns : 0.0);
	return rc;
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
	char err[400];
	size_t bad;
	int ok = 1;
	if (write_export(f, fmt, &in, err, sizeof(err), &bad)) {
		fprintf(stderr, "gpuspy: error: %s: %s\n", bad < in.n ? in.v[bad] : "export", err);
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
	gs_paths_free(&in);
	return status;
}
