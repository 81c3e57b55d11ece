/* SPDX-License-Identifier: MIT */
/*
 * gpuspy report [--json | --html OUT.html] [--all] [--color WHEN] FILE|DIR...:
 * each trace's report (report/), read in parallel, then the whole of them,
 * rendered as text, JSON or one HTML page (render/).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "render/render.h"
#include "report/report.h"
#include "report/series.h"
#include "report/stacks.h"
#include "util/cli.h"
#include "util/files.h"
#include <sys/stat.h>
#include "util/paths.h"
#include "util/escape.h"

static int cmp_report(const void *a, const void *b)
{
	const struct gs_report *x = *(struct gs_report *const *)a, *y = *(struct gs_report *const *)b;
	if (x->proc.rank != y->proc.rank)
		return x->proc.rank < y->proc.rank ? -1 : 1;
	if (x->proc.pid != y->proc.pid)
		return x->proc.pid < y->proc.pid ? -1 : 1;
	return strcmp(x->path, y->path); /* one pid twice (two hosts, two runs): still one order */
}

/* The page into path, written beside it under a name nobody can guess
 * and renamed (util/files.c): a reader never sees half a page, and a link
 * planted at a name never redirects it. A device or FIFO at path is
 * refused: the rename would replace it. */
static int write_html(const char *path, struct gs_report *const *procs, size_t n, const struct gs_report *whole)
{
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		fprintf(stderr, "gpuspy: error: --html %s: not a regular file; give a file name\n", path);
		return 1;
	}
	struct gs_file_tmp tmp;
	FILE *f = gs_file_replace_open(path, &tmp);
	if (!f) {
		fprintf(stderr, "gpuspy: error: --html %s: %s\n", path, strerror(errno));
		return 1;
	}
	int ok = gs_report_html(f, procs, n, whole) == 0;
	int rc = gs_file_replace_commit(f, &tmp, path, ok);
	if (rc) {
		fprintf(stderr, "gpuspy: error: --html %s: %s\n", path, rc == -EIO ? "write failed" : strerror(-rc));
		return 1;
	}
	if (stat(path, &st) == 0)
		fprintf(stderr, "gpuspy: wrote %s (%lld bytes): open it in a browser\n", path, (long long)st.st_size);
	return 0;
}

/* Each trace's report, into procs[i] (NULL where it failed), read by as
 * many threads as there are cores (16 at most): the traces of a job's
 * ranks are independent. 1 when one failed or was cut. */
struct load_job {
	const struct gs_paths *in;
	struct gs_report **procs;
	size_t next;
	int status;
};

static void *load_worker(void *arg)
{
	struct load_job *j = arg;
	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (i >= j->in->n)
			return NULL;
		char err[300];
		struct gs_report *r = calloc(1, sizeof(*r));
		if (!r || gs_report_file(j->in->v[i], j->in->listed[i], r, err, sizeof(err)) != 0) {
			fprintf(stderr, "gpuspy: error: %s: %s\n", j->in->v[i], r ? err : "out of memory");
			free(r);
			__atomic_store_n(&j->status, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (r->input_error[0]) {
			fprintf(stderr, "gpuspy: error: %s: %s; reporting the events before it\n", j->in->v[i],
				r->input_error);
			__atomic_store_n(&j->status, 1, __ATOMIC_RELAXED);
		}
		j->procs[i] = r;
	}
}

static int load_reports(const struct gs_paths *in, struct gs_report **procs)
{
	struct load_job j = { in, procs, 0, 0 };
	cpu_set_t cpus; /* the cores this process may run on (taskset, a cgroup's cpuset) */
	long cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = cores > 1 ? (size_t)cores : 1;
	if (nt > 16)
		nt = 16;
	if (nt > in->n)
		nt = in->n;
	pthread_t t[16];
	size_t started = 0;
	for (size_t i = 1; i < nt; i++) /* this thread is one of them */
		if (pthread_create(&t[started], NULL, load_worker, &j) == 0)
			started++;
	load_worker(&j);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return j.status;
}

/* Long (about 85 lines): the options, the reports read in parallel, then one
 * of three renderers, each a few lines. */
int gs_cmd_report(int argc, char **argv)
{
	int json = 0, color = isatty(1) && !getenv("NO_COLOR");
	const char *html = NULL;
	struct gs_paths in = { 0 };
	int status = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--all")) {
			gs_report_all = 1;
		} else if (!strcmp(argv[i], "--html") && i + 1 < argc) {
			html = argv[++i];
			gs_series_on = 1;
			gs_flame_on = 1;
		} else if (!strcmp(argv[i], "--color") && i + 1 < argc) {
			const char *w = argv[++i];
			if (!strcmp(w, "always"))
				color = 1;
			else if (!strcmp(w, "never"))
				color = 0;
			else if (strcmp(w, "auto")) {
				fprintf(stderr, "gpuspy: error: --color %s: use auto, always or never\n", w);
				return 2;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return gs_bad_option("report", argv[i], "--color --html");
		} else {
			status |= gs_paths_collect(argv[i], &in);
		}
	}
	if (json && html) {
		fprintf(stderr, "gpuspy: error: report: --json and --html are two outputs; give one\n");
		return 2;
	}
	if (!in.n)
		return status ? status : gs_missing("report", "trace (FILE|DIR)");
	/* Before anything is read: the page would replace a trace it is made
	 * of (a name in a DIR given too). */
	if (html && gs_file_input_refused(html, in.v, in.n, "report")) {
		gs_paths_free(&in);
		return 1;
	}
	if (in.n > 1) /* each step's time, per process: for the ranks' straggler */
		gs_series_on = 1;
	struct gs_report **procs = calloc(in.n, sizeof(*procs));
	size_t n = 0;
	if (procs)
		status |= load_reports(&in, procs);
	for (size_t i = 0; procs && i < in.n; i++) /* in the order given; failures left out */
		if (procs[i])
			procs[n++] = procs[i];
	if (n) {
		qsort(procs, n, sizeof(*procs), cmp_report);
		char dup[1024];
		if (gs_ranks_duplicate(procs, n, dup, sizeof(dup)))
			fprintf(stderr, "gpuspy: warning: %s\n", dup);
		struct gs_report whole;
		memset(&whole, 0, sizeof(whole));
		for (size_t i = 0; i < n; i++)
			gs_report_merge(&whole, procs[i]);
		if (n == 1) {
			whole.device_total = procs[0]->device_total;
			whole.peak_reserved = procs[0]->peak_reserved;
		}
		if (html) {
			status |= write_html(html, procs, n, &whole);
		} else if (json) {
			cJSON *o = gs_report_json(procs, n, &whole);
			char *s = gs_json_print(o, 1);
			if (s)
				printf("%s\n", s);
			free(s);
			cJSON_Delete(o);
		} else {
			/* Names and command lines are the trace's bytes: escaped. */
			FILE *out = gs_term_open(stdout, color);
			gs_report_print(out ? out : stdout, procs, n, &whole, color);
			if (out)
				fclose(out);
		}
		gs_report_free(&whole);
	}
	for (size_t i = 0; i < n; i++) {
		gs_report_free(procs[i]);
		free(procs[i]);
	}
	free(procs);
	gs_paths_free(&in);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "gpuspy: error: stdout: write failed: %s\n", strerror(errno));
		status = 1;
	}
	return status;
}
