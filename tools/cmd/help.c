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
	  { { "--dir", "D", "where the traces go (default: ./gpuspy-DATE-TIME, made for this run)" },
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
	{ "env", "gpuspy env [--markdown]",
	  "Every GPUSPY_ variable, its default and its value here, checked as the library checks it.",
	  { { "--markdown", NULL, "the table in Markdown (docs/environment.md)" } } },
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
