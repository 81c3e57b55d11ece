/* SPDX-License-Identifier: MIT */
/*
 * The gpuspy command: reads traces written by libgpuspy.
 *
 *   gpuspy report [--json] [--color WHEN] FILE|DIR...   per-phase breakdown and diagnoses
 *   gpuspy run [options] -- CMD ARGS...   CMD under libgpuspy, then its report
 *   gpuspy dump FILE [-o OUT]     the trace as JSON Lines
 *   gpuspy export --format chrome FILE|DIR... -o OUT.json   timeline for Perfetto
 *   gpuspy env [--markdown | --lib]       the GPUSPY_ variables, their defaults and values here
 *   gpuspy start|stop PID, gpuspy record PID [--for DUR]   recording on demand
 *   gpuspy top [--window DUR] [--interval DUR] [--once [--json]] [DIR]   live view
 *   gpuspy serve [--listen ADDR] [DIR]   the same for Prometheus, at /metrics
 *   gpuspy diff BASE NEW [--fail-if LIMITS] [--json]   a regression gate: exit 1 on one
 *
 * Errors are one line, `gpuspy: error: <file>: <what>, <what to do>`, and a
 * non-zero exit.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "gpuspy/format.h"
#include "util/cli.h"
#include "util/escape.h"



static void usage(FILE *f)
{
	fprintf(f, "usage: gpuspy run [--dir D] [--buffer-mb N] [--cupti auto|on|off|events]\n"
		   "                  [--host-alloc SIZE] [--no-report] -- CMD ARGS...\n"
		   "       gpuspy report [--json | --html OUT.html] [--all] [--color auto|always|never] FILE|DIR...\n"
		   "       gpuspy dump FILE.gspy [-o OUT.jsonl]\n"
		   "       gpuspy export --format chrome|speedscope|collapsed FILE|DIR... -o OUT\n"
		   "       gpuspy env [--markdown | --lib]\n"
		   "       gpuspy record PID [--for DUR]   (and gpuspy start PID, gpuspy stop PID)\n"
		   "       gpuspy top [--window DUR] [--interval DUR] [--once [--json]] [DIR]\n"
		   "       gpuspy serve [--listen ADDR] [DIR]\n"
		   "       gpuspy diff BASE NEW [--fail-if NAME>N%%,...] [--json]\n"
		   "       gpuspy --version\n"
		   "FILE is a .gspy trace or its JSON Lines dump; a DIR stands for its .gspy files\n"
		   "(or, if it has none, its .jsonl files).\n");
}

/* The commands: each in its own file under tools/cmd/ (cmd.h). */
static int run_cmd(int argc, char **argv) { return gs_cmd_run(argc, argv, gs_cmd_report); }
static int start_cmd(int argc, char **argv) { return gs_cmd_control("start", argc, argv); }
static int stop_cmd(int argc, char **argv) { return gs_cmd_control("stop", argc, argv); }
static int record_cmd(int argc, char **argv) { return gs_cmd_control("record", argc, argv); }

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "report", gs_cmd_report }, { "run", run_cmd },     { "dump", gs_cmd_dump },   { "export", gs_cmd_export },
	{ "diff", gs_cmd_diff },     { "top", gs_cmd_top },  { "serve", gs_cmd_serve }, { "env", gs_cmd_env },
	{ "start", start_cmd },      { "stop", stop_cmd },   { "record", record_cmd },
};

static int dispatch(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "help") && argc == 3 && !strcmp(argv[2], "--man"))
		return gs_help_man(stdout, GPUSPY_VERSION);
	if (!strcmp(argv[1], "help") && argc == 3 && (!strcmp(argv[2], "--bash") || !strcmp(argv[2], "--zsh")))
		return gs_help_completion(stdout, !strcmp(argv[2], "--zsh"));
	if (!strcmp(argv[1], "help") && argc == 3) { /* gpuspy help CMD */
		if (gs_help(stdout, argv[2]) == 0)
			return 0;
		fprintf(stderr, "gpuspy: error: help: '%s' is no command, see gpuspy --help\n", argv[2]);
		return 2;
	}
	if ((!strcmp(argv[1], "--version") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) &&
	    argc > 2) {
		fprintf(stderr, "gpuspy: error: %s takes no arguments\n", argv[1]);
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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		/* CMD --help or -h among its options, never an option's value
		 * (run -o --help CMD), and for run only before the command it
		 * runs, whose own -h is its own. */
		for (int k = 2; k < argc; k++) {
			if (!strcmp(argv[k], "--") || (!strcmp(argv[1], "run") && argv[k][0] != '-'))
				break;
			if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h"))
				return gs_help(stdout, argv[1]) == 0 ? 0 : 2;
			if (gs_help_takes_value(argv[1], argv[k]))
				k++;
		}
		return commands[i].fn(argc - 2, argv + 2);
	}
	fprintf(stderr, "gpuspy: error: unknown command '%s', see gpuspy --help\n", argv[1]);
	return 2;
}

int main(int argc, char **argv)
{
	/* What gpuspy says on stderr may quote a file name or a trace's
	 * bytes: control bytes are escaped there too (term.c). */
	FILE *err = gs_term_open(stderr, 0);
	if (err) {
		setvbuf(err, NULL, _IONBF, 0);
		stderr = err;
	}
	int rc = dispatch(argc, argv);
	/* Output that never arrived (a full disk, a closed pipe) is no
	 * success, whatever the command (run's status is its command's). */
	if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0 && !(argc > 1 && !strcmp(argv[1], "run"))) {
		fprintf(stderr, "gpuspy: error: stdout: write failed: %s\n", strerror(errno ? errno : EIO));
		rc = 1;
	}
	return rc;
}
