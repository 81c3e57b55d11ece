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

int gs_paths_collect(const char *arg, struct gs_paths *in)
{
	struct stat st;
	if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (expand_dir(arg, in) != 0) {
			fprintf(stderr, "gpuspy: error: %s: no .gspy or .jsonl traces in this directory\n", arg);
			return 1;
		}
		return 0;
	}
	paths_add(in, arg);
	return 0;
}

void gs_paths_free(struct gs_paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	memset(p, 0, sizeof(*p));
}
