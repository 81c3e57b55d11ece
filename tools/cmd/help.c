/* SPDX-License-Identifier: MIT */
/*
 * Help for every command, from one table (cmd.h): `gpuspy help CMD`,
 * `gpuspy CMD --help` and `-h`.
 * Each command's options, each with what it does; docs/commands.md is the
 * long form, and tests/test_cli.py checks that every option a command's
 * parser takes is in its row here.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"

struct opt {
	const char *name, *arg, *help;
};

static const struct help {
	const char *cmd, *synopsis, *what;
	struct opt opts[8];
} helps[] = {
	{ "run", "gpuspy run [options] -- CMD ARGS...",
	  "Runs CMD with libgpuspy preloaded (every process it starts is traced), then reports its traces.",
	  { { "--dir", "D", "where the traces go (default: ./gpuspy-DATE-TIME, made for this run, and "
			    "./gpuspy-latest links to it)" },
	    { "-o", "D", "the same as --dir (also --output)" },
	    { "--output", "D", "the same as --dir" },
	    { "--buffer-mb", "N", "each process's buffer, MiB (GPUSPY_BUFFER_MB)" },
	    { "--cupti", "auto|on|off|events", "GPU times from CUPTI, or from CUDA events (GPUSPY_CUPTI)" },
	    { "--host-alloc", "SIZE", "record host allocations from this size (GPUSPY_HOST_ALLOC_MIN)" },
	    { "--no-report", NULL, "only trace: no report at the end" } } },
	{ "report", "gpuspy report [--json | --html OUT.html] [--all] [--color WHEN] FILE|DIR...",
	  "Where the time went, per phase and per step, and what to change: each diagnosis with the line "
	  "that caused it and what the change saves, replayed. A DIR stands for its traces, or its newest "
	  "run's.",
	  { { "--json", NULL, "the report as one JSON object" },
	    { "--html", "OUT.html", "the report as one page with charts, no network needed" },
	    { "--all", NULL, "every phase and library range, not the largest" },
	    { "--color", "auto|always|never", "colour the text (auto: on a terminal, without NO_COLOR)" } } },
	{ "dump", "gpuspy dump FILE.gspy [-o OUT.jsonl]",
	  "The trace as JSON Lines: a process line, then one line per event in time order.",
	  { { "-o", "OUT.jsonl", "write there instead of standard output (never through a link)" } } },
	{ "export", "gpuspy export --format chrome|speedscope|collapsed FILE|DIR... -o OUT",
	  "The timeline in Chrome's Trace Event Format (ui.perfetto.dev), or flame graphs of where the CUDA "
	  "calls come from: speedscope's JSON (host time and bytes allocated by call stack) or collapsed "
	  "stacks (flamegraph.pl).",
	  { { "--format", "chrome|speedscope|collapsed", "the format" },
	    { "-o", "OUT.json", "the file to write, whole or not at all; - for standard output" } } },
	{ "diff", "gpuspy diff BASE NEW [--fail-if 'NAME>N%,...'] [--json]",
	  "Compares two runs step by step; exits 1 when NEW regressed past a limit (a CI gate).",
	  { { "--fail-if", "'NAME>N%,...'", "limits: step_time, phase_time, launches, gpu_time, copy_bytes, "
					     "pageable_bytes, allocs (quote it: > is a shell redirection)" },
	    { "--json", NULL, "every metric with its base, new, noise, limit and verdict" } } },
	{ "top", "gpuspy top [--window DUR] [--interval DUR] [--once [--json]] [DIR]",
	  "The traced processes running on this machine (or in DIR, or DIR's newest run), live.",
	  { { "--window", "DUR", "the span the rates are over (e.g. 5s)" },
	    { "--interval", "DUR", "how often the screen is redrawn" },
	    { "--once", NULL, "one frame as text, then exit" },
	    { "--json", NULL, "with --once: the frame as JSON" } } },
	{ "serve", "gpuspy serve [--listen ADDR] [DIR]",
	  "The traced processes of this node (or in DIR) for Prometheus, at /metrics.",
	  { { "--listen", "HOST:PORT", "where to listen (default localhost:9401; :PORT for every address)" } } },
	{ "env", "gpuspy env [--markdown | --lib]",
	  "Every GPUSPY_ variable, its default and its value here, checked as the library checks it.",
	  { { "--markdown", NULL, "the table in Markdown (docs/environment.md)" },
	    { "--lib", NULL, "the library to preload by hand: LD_PRELOAD=$(gpuspy env --lib) CMD" } } },
	{ "record", "gpuspy record PID [--for DUR]",
	  "Records a window of a process started paused (GPUSPY_START=paused), then pauses it again.",
	  { { "--for", "DUR", "how long (default: until Ctrl-C)" } } },
	{ "start", "gpuspy start PID", "Starts recording in a process started paused.", { { NULL } } },
	{ "stop", "gpuspy stop PID", "Pauses recording in a traced process.", { { NULL } } },
};

static const struct help *find(const char *cmd)
{
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		if (!strcmp(helps[i].cmd, cmd))
			return &helps[i];
	return NULL;
}

int gs_help(FILE *f, const char *cmd)
{
	const struct help *h = find(cmd);
	if (!h)
		return -1;
	fprintf(f, "usage: %s\n\n%s\n", h->synopsis, h->what);
	if (h->opts[0].name)
		fprintf(f, "\noptions:\n");
	for (const struct opt *o = h->opts; o < h->opts + 8 && o->name; o++) {
		char left[64];
		snprintf(left, sizeof(left), "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-28s %s\n", left, o->help);
	}
	fprintf(f, "\nMore: docs/commands.md, and `gpuspy --help` for every command.\n");
	return 0;
}

/* roff's text: a backslash doubled, a leading dot or quote kept from
 * being a request, '-' as the minus sign options need. */
static void roff(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

int gs_help_man(FILE *f, const char *version)
{
	fprintf(f, ".\\\" The gpuspy man page, made by `gpuspy help --man` from tools/cmd/help.c's table.\n");
	fprintf(f, ".TH GPUSPY 1 \"\" \"gpuspy %s\" \"User Commands\"\n.SH NAME\n", version);
	fprintf(f, "gpuspy \\- where a CUDA program's time goes, and what to change\n.SH SYNOPSIS\n");
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		fputs(".B ", f);
		roff(f, helps[i].synopsis);
		fputs("\n.br\n", f);
	}
	fputs(".SH DESCRIPTION\ngpuspy records every allocation, copy, memset, kernel launch and wait of a CUDA\n"
	      "program, with no change to it (LD_PRELOAD=libgpuspy.so, or gpuspy run), into a trace file per\n"
	      "process, and reports where the time went, per phase and per step, with diagnoses: the change to\n"
	      "make, the line that caused it, and what the change saves.\n.SH COMMANDS\n", f);
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		const struct help *h = &helps[i];
		fprintf(f, ".SS %s\n", h->cmd);
		roff(f, h->what);
		fputc('\n', f);
		for (const struct opt *o = h->opts; o < h->opts + 8 && o->name; o++) {
			fputs(".TP\n.B ", f);
			roff(f, o->name);
			if (o->arg) {
				fputs(" ", f);
				roff(f, o->arg);
			}
			fputc('\n', f);
			roff(f, o->help);
			fputc('\n', f);
		}
	}
	fputs(".SH ENVIRONMENT\nEvery GPUSPY_ variable, its default and its value here: \\fBgpuspy env\\fR.\n"
	      ".SH FILES\n\\fIgpuspy\\-HOST\\-PID[\\-rRANK].gspy\\fR, one trace per process, in GPUSPY_DIR\n"
	      "(gpuspy run: \\fIgpuspy\\-DATE\\-TIME/\\fR).\n.SH SEE ALSO\nThe project's docs/commands.md.\n", f);
	return 0;
}

int gs_help_takes_value(const char *cmd, const char *opt)
{
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		for (const struct opt *o = helps[i].opts; !strcmp(helps[i].cmd, cmd) && o < helps[i].opts + 8 && o->name;
		     o++)
			if (!strcmp(o->name, opt))
				return o->arg != NULL;
	return 0;
}

/* zsh's own completion, not bash's through bashcompinit: an autoloaded
 * #compdef file's body is the completion function itself, so the first
 * TAB completes (a file that only defined a bash function did nothing the
 * first time). */
static void completion_zsh(FILE *f)
{
	size_t n = sizeof(helps) / sizeof(helps[0]);
	fputs("#compdef gpuspy\n# zsh completion for gpuspy, made by `gpuspy help --zsh`.\n"
	      "local -a opts\nif (( CURRENT == 2 )); then\n\tcompadd --", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %s", helps[i].cmd);
	fputs(" help --help --version\n\treturn\nfi\ncase $words[2] in\n", f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s) opts=(--help", helps[i].cmd);
		for (const struct opt *o = helps[i].opts; o < helps[i].opts + 8 && o->name; o++)
			fprintf(f, " %s", o->name);
		fputs(") ;;\n", f);
	}
	fputs("esac\nif [[ $PREFIX == -* ]]; then\n\tcompadd -- $opts\nelse\n\t_files\nfi\n", f);
}

int gs_help_completion(FILE *f, int zsh)
{
	size_t n = sizeof(helps) / sizeof(helps[0]);
	if (zsh) {
		completion_zsh(f);
		return 0;
	}
	fputs("# bash completion for gpuspy, made by `gpuspy help --bash`.\n", f);
	/* Words read one a line into COMPREPLY: never split at spaces or
	 * globbed (a file named `*`), and nothing left in the user's shell. */
	fputs("_gpuspy_words() {\n\tlocal w\n\tCOMPREPLY=()\n"
	      "\twhile IFS= read -r w; do COMPREPLY+=(\"$w\"); done < <(compgen \"$@\")\n}\n"
	      "_gpuspy() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} opts\n"
	      "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\t_gpuspy_words -W \"", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? " " : "", helps[i].cmd);
	fputs(" help --help --version\" -- \"$cur\"\n\t\treturn\n\tfi\n\tcase $cmd in\n", f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "\t%s) opts=\"--help", helps[i].cmd);
		for (const struct opt *o = helps[i].opts; o < helps[i].opts + 8 && o->name; o++)
			fprintf(f, " %s", o->name);
		fputs("\" ;;\n", f);
	}
	fputs("\t*) opts=\"\" ;;\n\tesac\n\tif [[ $cur == -* ]]; then\n"
	      "\t\t_gpuspy_words -W \"$opts\" -- \"$cur\"\n\telse\n"
	      "\t\t_gpuspy_words -f -- \"$cur\"\n\tfi\n}\ncomplete -o filenames -F _gpuspy gpuspy\n", f);
	return 0;
}
