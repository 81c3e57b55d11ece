/* SPDX-License-Identifier: MIT */
/* The traces a command is given: files, and directories that stand for
 * theirs (paths.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/paths.h"

static void paths_add(struct gs_paths *p, const char *s, int listed)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		char **v = realloc(p->v, cap * sizeof(*v));
		if (v)
			p->v = v;
		unsigned char *l = v ? realloc(p->listed, cap) : NULL;
		if (!l) {
			fprintf(stderr, "gpuspy: error: out of memory\n");
			exit(1);
		}
		p->listed = l;
		p->cap = cap;
	}
	if (!(p->v[p->n] = strdup(s))) {
		fprintf(stderr, "gpuspy: error: out of memory\n");
		exit(1);
	}
	p->listed[p->n++] = (unsigned char)listed;
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

/* dir/name, allocated (dir "/" gives "/name"). */
static char *path_join(const char *dir, const char *name)
{
	if (!strcmp(dir, "/"))
		dir = "";
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (!p) {
		fprintf(stderr, "gpuspy: error: out of memory\n");
		exit(1);
	}
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* A directory stands for its .gspy files, or its .jsonl files if it has
 * no .gspy (a dump next to its trace would count twice). Only regular
 * files, by the entry itself (not what a link names): whoever may write
 * the directory picks its names, and a reader (root's, say) must not open
 * a file of theirs choosing, nor a device, through one. The rest are
 * skipped, said when note; the reader opens those listed O_NOFOLLOW. */
static int expand_dir(const char *dir, struct gs_paths *out, int note)
{
	for (int pass = 0; pass < 2; pass++) {
		DIR *d = opendir(dir);
		if (!d)
			return -errno;
		size_t before = out->n;
		struct dirent *e;
		struct stat st;
		while ((e = readdir(d))) {
			if (!ends_with(e->d_name, pass ? ".jsonl" : ".gspy"))
				continue;
			char *p = path_join(dir, e->d_name);
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
				; /* gone since the listing */
			else if (S_ISREG(st.st_mode))
				paths_add(out, p, 1);
			else if (note && S_ISLNK(st.st_mode))
				fprintf(stderr, "gpuspy: %s: a symbolic link in a directory is not followed; skipped "
						"(name the file itself to read it)\n", p);
			else if (note)
				fprintf(stderr, "gpuspy: %s: not a regular file; skipped\n", p);
			free(p);
		}
		closedir(d);
		if (out->n > before) {
			/* All listed alike: only the names need sorting. */
			qsort(out->v + before, out->n - before, sizeof(char *), cmp_str);
			return 0;
		}
	}
	return -ENOENT;
}

/* Whether name is one gpuspy run gives its default directory,
 * gpuspy-YYYYMMDD-HHMMSS, or -2 and on after it where that was taken
 * (run.c: strftime, then a suffix); 0, or the suffix's number (1 without
 * one): such names sort by time, then by it. */
static unsigned run_name(const char *name)
{
	static const char form[] = "gpuspy-DDDDDDDD-DDDDDD";
	size_t i;
	for (i = 0; form[i]; i++) {
		if (form[i] == 'D' ? !isdigit((unsigned char)name[i]) : name[i] != form[i])
			return 0;
	}
	if (!name[i])
		return 1;
	unsigned k = 0;
	if (name[i++] != '-' || name[i] == '0')
		return 0;
	for (size_t j = i; name[j]; j++) {
		if (!isdigit((unsigned char)name[j]) || j - i >= 4)
			return 0;
		k = k * 10 + (unsigned)(name[j] - '0');
	}
	return k >= 2 ? k : 0;
}

/* Newest first: by the time in the name, then by its suffix. */
static int cmp_run_desc(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	const char *bx = strrchr(x, '/'), *by = strrchr(y, '/');
	bx = bx ? bx + 1 : x;
	by = by ? by + 1 : y;
	int c = strncmp(by, bx, sizeof("gpuspy-DDDDDDDD-DDDDDD") - 1);
	if (c)
		return c;
	unsigned kx = run_name(bx), ky = run_name(by);
	return (ky > kx) - (ky < kx);
}

/* dir/name, when it is a run directory of ours: a directory itself (not
 * a link to one) owned by the effective user. Allocated, or NULL. */
static char *own_run(const char *dir, const char *name)
{
	struct stat st;
	if (!run_name(name))
		return NULL;
	char *p = path_join(dir, name);
	if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		return p;
	free(p);
	return NULL;
}

/* The run directory dir/gpuspy-latest names (run.c latest_link): only a
 * link of ours to a run directory of ours right beside it. Allocated, or
 * NULL. */
static char *latest_run(const char *dir)
{
	struct stat st;
	char target[64];
	char *l = path_join(dir, "gpuspy-latest");
	ssize_t n = -1;
	if (lstat(l, &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid == geteuid())
		n = readlink(l, target, sizeof(target));
	free(l);
	if (n <= 0 || (size_t)n >= sizeof(target))
		return NULL;
	target[n] = '\0';
	return own_run(dir, target);
}

/* dir's run directories of ours (gpuspy run's gpuspy-YYYYMMDD-HHMMSS)
 * into out, newest first; with latest, the one dir/gpuspy-latest names
 * before them all. Their number. */
static size_t run_dirs(const char *dir, int latest, struct gs_paths *out)
{
	char *first = latest ? latest_run(dir) : NULL;
	if (first)
		paths_add(out, first, 0);
	size_t from = out->n;
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			char *p = own_run(dir, e->d_name);
			if (p && !(first && !strcmp(p, first)))
				paths_add(out, p, 0);
			free(p);
		}
		closedir(d);
	}
	free(first);
	if (out->n > from)
		qsort(out->v + from, out->n - from, sizeof(char *), cmp_run_desc);
	return out->n;
}

int gs_paths_collect(const char *arg, struct gs_paths *in)
{
	struct stat st;
	if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (expand_dir(arg, in, 1) == 0)
			return 0;
		/* No traces, but gpuspy run's directories: the newest run that
		 * has some, said so (what `gpuspy run` then `gpuspy report .`
		 * means); gpuspy-latest first, which run moves when it ends. */
		struct gs_paths runs = { 0 };
		run_dirs(arg, 1, &runs);
		for (size_t k = 0; k < runs.n; k++) {
			if (expand_dir(runs.v[k], in, 1) != 0)
				continue;
			fprintf(stderr, "gpuspy: %s has no traces of its own: reading the newest run%s, %s\n", arg,
				k ? " with traces" : "", runs.v[k]);
			gs_paths_free(&runs);
			return 0;
		}
		gs_paths_free(&runs);
		fprintf(stderr, "gpuspy: error: %s: no .gspy or .jsonl traces in this directory (nor in a "
				"gpuspy-YYYYMMDD-HHMMSS run directory of yours inside it)\n", arg);
		return 1;
	}
	paths_add(in, arg, 0);
	return 0;
}

/* The newest run by its name, not gpuspy-latest: run moves that only when
 * its command ends, and a live view wants the run in progress, traces or
 * not yet. */
const char *gs_paths_live_dir(const char *dir, char *buf, size_t cap)
{
	struct gs_paths t = { 0 };
	int has = expand_dir(dir, &t, 0) == 0;
	gs_paths_free(&t);
	if (has || !run_dirs(dir, 0, &t))
		return dir;
	size_t k = 0;
	while (k < t.n && strlen(t.v[k]) >= cap)
		k++;
	if (k == t.n) {
		gs_paths_free(&t);
		return dir;
	}
	snprintf(buf, cap, "%s", t.v[k]);
	gs_paths_free(&t);
	fprintf(stderr, "gpuspy: %s has no traces of its own: following the newest run, %s\n", dir, buf);
	return buf;
}

void gs_paths_free(struct gs_paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	free(p->listed);
	memset(p, 0, sizeof(*p));
}
