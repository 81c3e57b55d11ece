/* SPDX-License-Identifier: MIT */
/* The traces a command is given: files, and directories that stand for
 * theirs (paths.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/paths.h"

static void paths_add(struct gs_paths *p, const char *s)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 16;
		char **v = realloc(p->v, p->cap * sizeof(*v));
		if (!v) {
			fprintf(stderr, "gpuspy: error: out of memory\n");
			exit(1);
		}
		p->v = v;
	}
	p->v[p->n++] = strdup(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *sfx)
{
	size_t n = strlen(s), k = strlen(sfx);
	return n >= k && !strcmp(s + n - k, sfx);
}

/* A directory stands for its .gspy files, or its .jsonl files if it has
 * no .gspy (a dump next to its trace would count twice). */
static int expand_dir(const char *dir, struct gs_paths *out)
{
	for (int pass = 0; pass < 2; pass++) {
		DIR *d = opendir(dir);
		if (!d)
			return -errno;
		size_t before = out->n;
		struct dirent *e;
		while ((e = readdir(d)))
			if (ends_with(e->d_name, pass ? ".jsonl" : ".gspy")) {
				char p[4096];
				snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
				paths_add(out, p);
			}
		closedir(d);
		if (out->n > before) {
			qsort(out->v + before, out->n - before, sizeof(char *), cmp_str);
			return 0;
		}
	}
	return -ENOENT;
}

/* The newest of dir's run directories (gpuspy run's gpuspy-DATE-TIME,
 * whose names sort by time) into out: 1, or 0 with none. */
static int newest_run(const char *dir, char *out, size_t cap)
{
	DIR *d = opendir(dir);
	char best[256] = "";
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		char p[4096];
		if (strncmp(e->d_name, "gpuspy-", 7) || strlen(e->d_name) >= sizeof(best) ||
		    strcmp(e->d_name, best) <= 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			snprintf(best, sizeof(best), "%s", e->d_name);
	}
	closedir(d);
	if (!*best)
		return 0;
	snprintf(out, cap, "%s/%s", strcmp(dir, "/") ? dir : "", best);
	return 1;
}

int gs_paths_collect(const char *arg, struct gs_paths *in)
{
	struct stat st;
	if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (expand_dir(arg, in) == 0)
			return 0;
		/* No traces, but gpuspy run's directories: the newest run,
		 * said so (what `gpuspy run` then `gpuspy report .` means). */
		char run[4096];
		if (newest_run(arg, run, sizeof(run)) && expand_dir(run, in) == 0) {
			fprintf(stderr, "gpuspy: %s has no traces of its own: reading the newest run, %s\n", arg, run);
			return 0;
		}
		fprintf(stderr, "gpuspy: error: %s: no .gspy or .jsonl traces in this directory (nor in a gpuspy-* "
				"run directory inside it)\n", arg);
		return 1;
	}
	paths_add(in, arg);
	return 0;
}

const char *gs_paths_live_dir(const char *dir, char *buf, size_t cap)
{
	struct gs_paths t = { 0 };
	int has = expand_dir(dir, &t) == 0;
	gs_paths_free(&t);
	if (has || !newest_run(dir, buf, cap))
		return dir;
	fprintf(stderr, "gpuspy: %s has no traces of its own: following the newest run, %s\n", dir, buf);
	return buf;
}

void gs_paths_free(struct gs_paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	memset(p, 0, sizeof(*p));
}
