/* SPDX-License-Identifier: MIT */
/*
 * The gpuspy command: reads traces written by libgpuspy.
 *
 *   gpuspy report [--json] [--color WHEN] FILE|DIR...   per-phase breakdown and diagnoses
 *   gpuspy run [options] -- CMD ARGS...   CMD under libgpuspy, then its report
 *   gpuspy dump FILE [-o OUT]     the trace as JSON Lines
 *   gpuspy export --format chrome FILE|DIR... -o OUT.json   timeline for Perfetto
 *   gpuspy env [--markdown]       the GPUSPY_ variables, their defaults and values here
 *   gpuspy start|stop PID, gpuspy record PID [--for DUR]   recording on demand
 *   gpuspy top [--window DUR] [--interval DUR] [--once [--json]] [DIR]   live view
 *   gpuspy serve [--listen ADDR] [DIR]   the same for Prometheus, at /metrics
 *   gpuspy diff BASE NEW [--fail-if LIMITS] [--json]   a regression gate: exit 1 on one
 *
 * Errors are one line, `gpuspy: error: <file>: <what>, <what to do>`, and a
 * non-zero exit.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "paths.h"
#include "control.h"
#include "escape.h"
#include "files.h"
#include "diff.h"
#include "dump.h"
#include "env.h"
#include "export.h"
#include "reader.h"
#include "report.h"
#include "series.h"
#include "run.h"
#include "serve.h"
#include "top.h"



static void usage(FILE *f)
{
	fprintf(f, "usage: gpuspy run [--dir D] [--buffer-mb N] [--cupti auto|on|off|events]\n"
		   "                  [--host-alloc SIZE] [--no-report] -- CMD ARGS...\n"
		   "       gpuspy report [--json | --html OUT.html] [--all] [--color auto|always|never] FILE|DIR...\n"
		   "       gpuspy dump FILE.gspy [-o OUT.jsonl]\n"
		   "       gpuspy export --format chrome FILE|DIR... -o OUT.json\n"
		   "       gpuspy env [--markdown]\n"
		   "       gpuspy record PID [--for DUR]   (and gpuspy start PID, gpuspy stop PID)\n"
		   "       gpuspy top [--window DUR] [--interval DUR] [--once [--json]] [DIR]\n"
		   "       gpuspy serve [--listen ADDR] [DIR]\n"
		   "       gpuspy diff BASE NEW [--fail-if NAME>N%%,...] [--json]\n"
		   "       gpuspy --version\n"
		   "FILE is a .gspy trace or its JSON Lines dump; a DIR stands for its .gspy files\n"
		   "(or, if it has none, its .jsonl files).\n");
}

/* Why an output file could not be created, in one line. */
static void create_error(const char *path)
{
	if (errno == ELOOP)
		fprintf(stderr, "gpuspy: error: %s: is a symbolic link; gpuspy does not write through one, "
				"give the file itself\n", path);
	else
		fprintf(stderr, "gpuspy: error: %s: cannot create: %s\n", path, strerror(errno));
}

static int cmd_dump(int argc, char **argv)
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
	struct gs_trace t;
	char err[256];
	if (gs_trace_open(in, &t, err, sizeof(err)) != 0) {
		fprintf(stderr, "gpuspy: error: %s: %s\n", in, err);
		return 1;
	}
	FILE *out = stdout;
	if (outp && !(out = gs_file_create(outp))) {
		create_error(outp);
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


static int cmd_export(int argc, char **argv)
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
		create_error(outp);
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

static int cmp_report(const void *a, const void *b)
{
	const struct gs_report *x = *(struct gs_report *const *)a, *y = *(struct gs_report *const *)b;
	if (x->proc.rank != y->proc.rank)
		return x->proc.rank < y->proc.rank ? -1 : 1;
	return x->proc.pid < y->proc.pid ? -1 : x->proc.pid > y->proc.pid;
}

/* The page into path, written beside it under a name nobody can guess
 * and renamed (files.c): a reader never sees half a page, and a link
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
		if (!r || gs_report_file(j->in->v[i], r, err, sizeof(err)) != 0) {
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

static int cmd_report(int argc, char **argv)
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
	if (!in.n)
		return status ? status : gs_missing("report", "trace (FILE|DIR)");
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
	for (size_t i = 0; i < in.n; i++)
		free(in.v[i]);
	free(in.v);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "gpuspy: error: stdout: write failed: %s\n", strerror(errno));
		status = 1;
	}
	return status;
}

int main(int argc, char **argv)
{
	/* What gpuspy says on stderr may quote a file name or a trace's
	 * bytes: control bytes are escaped there too (escape.c). */
	FILE *err = gs_term_open(stderr, 0);
	if (err) {
		setvbuf(err, NULL, _IONBF, 0);
		stderr = err;
	}
	if (argc < 2) {
		usage(stderr);
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
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(argc - 2, argv + 2);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 2, argv + 2);
	if (!strcmp(argv[1], "export"))
		return cmd_export(argc - 2, argv + 2);
	if (!strcmp(argv[1], "env"))
		return gs_cmd_env(argc - 2, argv + 2);
	if (!strcmp(argv[1], "run"))
		return gs_cmd_run(argc - 2, argv + 2, cmd_report);
	if (!strcmp(argv[1], "diff"))
		return gs_cmd_diff(argc - 2, argv + 2);
	if (!strcmp(argv[1], "serve"))
		return gs_cmd_serve(argc - 2, argv + 2);
	if (!strcmp(argv[1], "top"))
		return gs_cmd_top(argc - 2, argv + 2);
	if (!strcmp(argv[1], "start") || !strcmp(argv[1], "stop") || !strcmp(argv[1], "record"))
		return gs_cmd_control(argv[1], argc - 2, argv + 2);
	fprintf(stderr, "gpuspy: error: unknown command '%s', see gpuspy --help\n", argv[1]);
	return 2;
}
