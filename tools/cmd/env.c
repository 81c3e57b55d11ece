/* SPDX-License-Identifier: MIT */
/*
 * gpuspy env: every GPUSPY_ variable from the library's own table
 * (common/options.c), with its default and, where this environment sets it,
 * its value, checked by the parser the library uses: a value the library
 * would refuse is shown with what it would use instead.
 *
 * gpuspy env --markdown: the same table as docs/environment.md has it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cli.h"
#include "cmd/cmd.h"
#include "util/escape.h"
#include "options.h"

static const char *const by_name[] = { "", " (read by the PyTorch helper)", " (read by gpuspy run)", "" };

static int markdown(void)
{
	printf("| variable | default | meaning |\n| --- | --- | --- |\n");
	for (int i = 0; i < GS_OPT_N; i++) {
		const struct gs_opt_def *d = &gs_opt_defs[i];
		int code = strcmp(d->shown, "all") && strcmp(d->shown, "beside gpuspy") && d->shown[0] != '(';
		printf("| `%s` | %s%s%s | %s%s |\n", d->name, code ? "`" : "", d->shown, code ? "`" : "", d->doc,
		       d->by == GS_BY_PYTHON || d->by == GS_BY_TOOL ? by_name[d->by] : "");
	}
	return 0;
}

int gs_cmd_env(int argc, char **argv)
{
	int md = 0, lib = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--markdown"))
			md = 1;
		else if (!strcmp(argv[i], "--lib"))
			lib = 1;
		else if (argv[i][0] == '-')
			return gs_bad_option("env", argv[i], "");
		else {
			fprintf(stderr, "gpuspy: error: env: takes no arguments, got %s\n", argv[i]);
			return 2;
		}
	}
	if (md)
		return markdown();
	if (lib) { /* the library to preload by hand: LD_PRELOAD=$(gpuspy env --lib) */
		char path[4096];
		if (gs_run_find_lib(path, sizeof(path)) != 0) {
			fprintf(stderr, "gpuspy: error: env: %s: libgpuspy not found; build it (make) or set GPUSPY_LIB\n",
				path);
			return 1;
		}
		printf("%s\n", path);
		return 0;
	}
	/* The values are the environment's bytes: escaped (escape.c). */
	FILE *out = gs_term_open(stdout, 0);
	if (!out)
		out = stdout;
	fprintf(out, "%-26s %-14s %s\n", "variable", "default", "set here");
	int bad = 0;
	for (int i = 0; i < GS_OPT_N; i++) {
		const struct gs_opt_def *d = &gs_opt_defs[i];
		const char *v = getenv(d->name);
		if (!v || !*v) {
			fprintf(out, "%-26s %s\n", d->name, d->shown);
			continue;
		}
		fprintf(out, "%-26s %-14s %s", d->name, d->shown, v);
		if (gs_opt_parse(d, v).bad) {
			fprintf(out, "  <- not %s: the library uses %s", d->what, d->shown);
			bad++;
		}
		fputc('\n', out);
	}
	fprintf(out, "\nEach variable's meaning: gpuspy env --markdown, or docs/environment.md.\n");
	if (bad)
		fprintf(out, "%d value%s the library would refuse (it warns once and uses the default).\n", bad,
			bad == 1 ? "" : "s");
	if (out != stdout)
		fclose(out);
	return 0;
}
