/* SPDX-License-Identifier: MIT */
/*
 * gpuspy top [--window DUR] [--interval DUR] [--once [--json]] [DIR]: the
 * traced processes running on this machine, live, read from their growing
 * trace files (watch.c). Without DIR they are found the way `gpuspy
 * record` finds one, in /proc/PID/maps; with DIR, they are that
 * directory's traces whose processes run. Drawn with ncurses; --once
 * prints one frame (or, with --json, its numbers) and exits.
 */
#include <curses.h>
#include <dirent.h>
#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "options.h"
#include "util/cli.h"
#include "read/watch.h"
#include "cmd/cmd.h"
#include "util/paths.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "util/escape.h"

struct top {
	struct gs_watch_set set;
	uint64_t window_ns, interval_ns;
};

static void pct(char *b, size_t n, uint64_t part, uint64_t whole)
{
	if (whole)
		snprintf(b, n, "%.0f%%", 100.0 * (double)part / (double)whole);
	else
		snprintf(b, n, "-");
}

/* One process's lines: its row, its phases, its telemetry. */
static int proc_lines(const struct gs_watch_view *v, char lines[][512], int max)
{
	char steps[32], busy[16], rate[32], page[16], mem[32], drop[32];
	double secs = (double)v->window_ns / 1e9;
	if (v->paused)
		snprintf(steps, sizeof(steps), "paused");
	else if (!v->step_phase || secs <= 0)
		snprintf(steps, sizeof(steps), "-");
	else
		snprintf(steps, sizeof(steps), "%.1f", (double)v->steps / secs);
	if (v->gpu_known)
		pct(busy, sizeof(busy), v->gpu_busy_ns, v->gpu_window_ns);
	else
		snprintf(busy, sizeof(busy), "n/a");
	char b[32];
	snprintf(rate, sizeof(rate), "%s/s", gs_fmt_bytes(b, secs > 0 ? (uint64_t)((double)v->copy_bytes / secs) : 0));
	pct(page, sizeof(page), v->pageable_bytes, v->copy_bytes);
	gs_fmt_bytes(mem, v->reserved > 0 ? (uint64_t)v->reserved : 0);
	gs_fmt_count(drop, v->dropped);
	int n = 0;
	snprintf(lines[n++], 512, "%7u %8s %8s %11s %8s %10s %8s  %s", v->pid, steps, busy, rate, page, mem, drop,
		 v->command);
	/* Phases by their share of the time, the largest first: six, each
	 * of half a percent or more. */
	uint64_t total = 0;
	int order[LIVE_PHASES + 2], k = 0;
	for (int i = 0; i < LIVE_PHASES + 2; i++)
		total += v->phase_ns[i];
	for (int i = 0; i < LIVE_PHASES + 2; i++)
		if (v->phase_ns[i] && 200 * v->phase_ns[i] >= total)
			order[k++] = i;
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && v->phase_ns[order[j]] > v->phase_ns[order[j - 1]]; j--) {
			int x = order[j];
			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	if (k && n < max) {
		int at = snprintf(lines[n], 512, "%16s", "phases:");
		for (int i = 0; i < k && i < 6 && at < 400; i++)
			at += snprintf(lines[n] + at, 512 - (size_t)at, " %s %.0f%%%s", v->phase[order[i]],
				       100.0 * (double)v->phase_ns[order[i]] / (double)total, i + 1 < k && i < 5 ? "," : "");
		n++;
	}
	if (v->nvml_device >= 0 && n < max) {
		const struct gspy_nvml *s = &v->nvml;
		int at = snprintf(lines[n], 512, "%16s GPU %d", "telemetry:", v->nvml_device);
		if (s->util_gpu != GSPY_NVML_NA)
			at += snprintf(lines[n] + at, 512 - (size_t)at, ", util %u%%", s->util_gpu);
		if (s->used_mib != GSPY_NVML_NA)
			at += snprintf(lines[n] + at, 512 - (size_t)at, ", %s used", gs_fmt_bytes(b, (uint64_t)s->used_mib << 20));
		if (s->power_dw != GSPY_NVML_NA)
			at += snprintf(lines[n] + at, 512 - (size_t)at, ", %.0f W", s->power_dw / 10.0);
		if (s->sm_mhz != GSPY_NVML_NA && s->sm_mhz)
			at += snprintf(lines[n] + at, 512 - (size_t)at, ", SM %u MHz", s->sm_mhz);
		if (s->temp_c != GSPY_NVML_NA)
			snprintf(lines[n] + at, 512 - (size_t)at, ", %u C", s->temp_c);
		n++;
	}
	for (int i = 0; i < n; i++) /* a trace's text, for a terminal (escape.c) */
		gs_term_clean(lines[i], sizeof(lines[i]));
	return n;
}

/* The frame: a title, the column heads, each process's lines. */
static int frame(const struct top *t, char lines[][512], int max, int live)
{
	uint64_t now = gs_mono_now();
	char w[32];
	int n = 0;
	snprintf(lines[n++], 512, "gpuspy top: %d traced %s, the last %s%s", t->set.n, gs_pl(t->set.n, "process", "processes"),
		 gs_fmt_ns(w, t->window_ns), live ? "; q quits" : "");
	snprintf(lines[n++], 512, "%7s %8s %8s %11s %8s %10s %8s  %s", "PID", "STEPS/S", "GPU BUSY", "COPIES",
		 "PAGEABLE", "DEV MEM", "DROPPED", "COMMAND");
	if (!t->set.n)
		snprintf(lines[n++], 512, "  no traced process is running%s%s", t->set.dir ? " in " : "", t->set.dir ? t->set.dir : "");
	int shown = 0;
	for (; shown < t->set.n; shown++) {
		struct gs_watch_view v;
		char one[3][512];
		gs_watch_view(t->set.p[shown], now, t->window_ns, &v);
		int k = proc_lines(&v, one, 3);
		/* A screen too short for them all keeps a line to say so. */
		if (n + k + (shown + 1 < t->set.n) > max)
			break;
		memcpy(lines + n, one, (size_t)k * sizeof(one[0]));
		n += k;
	}
	if (shown < t->set.n && n < max)
		snprintf(lines[n++], 512, "  ... and %d more, not shown: the terminal is too short", t->set.n - shown);
	return n;
}

static cJSON *view_json(const struct gs_watch_view *v)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "pid", v->pid);
	cJSON_AddStringToObject(o, "command", v->command);
	cJSON_AddBoolToObject(o, "paused", v->paused);
	cJSON_AddNumberToObject(o, "window_ns", (double)v->window_ns);
	cJSON_AddNumberToObject(o, "events", (double)v->events);
	if (v->step_phase)
		cJSON_AddStringToObject(o, "step_phase", v->step_phase);
	else
		cJSON_AddNullToObject(o, "step_phase");
	cJSON_AddNumberToObject(o, "steps", (double)v->steps);
	cJSON *ph = cJSON_AddObjectToObject(o, "phase_ns");
	for (int i = 0; i < LIVE_PHASES + 2; i++)
		if (v->phase_ns[i])
			cJSON_AddNumberToObject(ph, v->phase[i], (double)v->phase_ns[i]);
	if (v->gpu_known) {
		cJSON_AddNumberToObject(o, "gpu_busy_ns", (double)v->gpu_busy_ns);
		cJSON_AddNumberToObject(o, "gpu_window_ns", (double)v->gpu_window_ns);
		cJSON_AddNumberToObject(o, "gpu_lag_ns", (double)v->gpu_lag_ns);
	} else {
		cJSON_AddNullToObject(o, "gpu_busy_ns");
	}
	cJSON_AddNumberToObject(o, "copy_bytes", (double)v->copy_bytes);
	cJSON_AddNumberToObject(o, "pageable_bytes", (double)v->pageable_bytes);
	cJSON_AddNumberToObject(o, "reserved_bytes", (double)v->reserved);
	cJSON_AddNumberToObject(o, "dropped", (double)v->dropped);
	if (v->nvml_device >= 0) {
		cJSON *s = cJSON_AddObjectToObject(o, "telemetry");
		cJSON_AddNumberToObject(s, "device", v->nvml_device);
#define GSPY_X(f) cJSON_AddNumberToObject(s, #f, v->nvml.f);
		GSPY_NVML_FIELDS(GSPY_X)
#undef GSPY_X
	}
	return o;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int run_live(struct top *t)
{
	setlocale(LC_ALL, "");
	if (!isatty(1) || !initscr()) {
		fprintf(stderr, "gpuspy: error: top: the output is not a terminal; use --once\n");
		return 2;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	static char lines[256][512];
	uint64_t next_scan = 0;
	while (!stop) {
		uint64_t now = gs_mono_now();
		if (now >= next_scan) { /* a new process is found within 2 s */
			gs_watch_scan(&t->set);
			next_scan = now + 2000000000ull;
		}
		gs_watch_poll_all(&t->set);
		int n = frame(t, lines, LINES < 256 ? LINES : 256, 1);
		erase();
		for (int i = 0; i < n; i++) {
			if (i == 1)
				attron(A_REVERSE);
			mvaddnstr(i, 0, lines[i], COLS);
			if (i == 1)
				attroff(A_REVERSE);
		}
		refresh();
		timeout((int)(t->interval_ns / 1000000u));
		int ch = getch();
		if (ch == 'q' || ch == 'Q')
			break;
	}
	endwin();
	return 0;
}

static int parse_dur(const char *opt, const char *v, uint64_t *ns)
{
	static const struct gs_opt_def dur = { "top", GS_OPT_DURATION, GS_BY_TOOL, 0, "", 0, 0, NULL, NULL, NULL };
	size_t n = strlen(v);
	struct gs_opt_val x = gs_opt_parse(&dur, v);
	if (!n || v[n - 1] < 'a' || v[n - 1] > 'z' || x.bad || !x.set || x.u < 100000000u ||
	    x.u > (uint64_t)(LIVE_SECONDS - 1) * 1000000000u) {
		fprintf(stderr, "gpuspy: error: top: %s %s is not a duration from 100ms to %ds (e.g. 5s)\n", opt, v,
			LIVE_SECONDS - 1);
		return 2;
	}
	*ns = x.u;
	return 0;
}

int gs_cmd_top(int argc, char **argv)
{
	struct top t = { .window_ns = 5000000000ull, .interval_ns = 1000000000ull };
	int once = 0, json = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if ((!strcmp(a, "--window") || !strcmp(a, "--interval")) && i + 1 < argc) {
			int rc = parse_dur(a, argv[++i], a[2] == 'w' ? &t.window_ns : &t.interval_ns);
			if (rc)
				return rc;
		} else if (!strcmp(a, "--once")) {
			once = 1;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (a[0] == '-') {
			return gs_bad_option("top", a, "--window --interval");
		} else if (t.set.dir) {
			fprintf(stderr, "gpuspy: error: top: one directory, not '%s' too\n", a);
			return 2;
		} else {
			t.set.dir = a;
		}
	}
	if (json && !once) {
		fprintf(stderr, "gpuspy: error: top: --json needs --once\n");
		return 2;
	}
	char run_dir[4096];
	if (t.set.dir) {
		t.set.dir = gs_paths_live_dir(t.set.dir, run_dir, sizeof(run_dir));
		DIR *d = opendir(t.set.dir);
		if (!d) {
			fprintf(stderr, "gpuspy: error: top: %s: %s\n", t.set.dir, strerror(errno));
			return 1;
		}
		closedir(d);
	}
	int rc = 0;
	if (!once) {
		rc = run_live(&t);
	} else {
		gs_watch_scan(&t.set);
		gs_watch_poll_all(&t.set);
		if (json) {
			cJSON *a = cJSON_CreateArray();
			uint64_t now = gs_mono_now();
			for (int i = 0; i < t.set.n; i++) {
				struct gs_watch_view v;
				gs_watch_view(t.set.p[i], now, t.window_ns, &v);
				cJSON_AddItemToArray(a, view_json(&v));
			}
			char *s = gs_json_print(a, 0);
			if (s)
				printf("%s\n", s);
			free(s);
			cJSON_Delete(a);
		} else {
			/* Up to three lines a process, and the title's three. */
			int max = 3 * t.set.n + 3;
			char(*lines)[512] = xcalloc((size_t)max, sizeof(*lines));
			int n = frame(&t, lines, max, 0);
			for (int i = 0; i < n; i++)
				printf("%s\n", lines[i]);
			free(lines);
		}
	}
	gs_watch_set_free(&t.set);
	return rc;
}
