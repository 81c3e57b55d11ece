/* SPDX-License-Identifier: MIT */
/*
 * Every file the gpuspy command creates or truncates is opened here, so
 * that one rule holds for all (docs/security.md): never through a
 * symbolic link someone planted at its name (O_NOFOLLOW), never handed to
 * a program it runs (O_CLOEXEC); a file written beside its name and
 * renamed gets a name nobody can guess first (mkstemp: O_EXCL); a
 * directory that is reused must be its user's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/files.h"

FILE *gs_file_create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

FILE *gs_file_replace_open(const char *path, struct gs_file_tmp *t)
{
	/* In path's own directory, so that the rename is atomic. */
	const char *slash = strrchr(path, '/');
	int dl = slash ? (int)(slash - path + 1) : 0;
	if (snprintf(t->tmp, sizeof(t->tmp), "%.*s.%s.XXXXXX", dl, path, slash ? slash + 1 : path) >=
	    (int)sizeof(t->tmp)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	int fd = mkostemp(t->tmp, O_CLOEXEC); /* O_CREAT|O_EXCL: never an existing name, nor a link */
	if (fd < 0)
		return NULL;
	/* mkstemp makes it 0600; a file it replaces keeps its mode, a new
	 * one is made as any new file would be, 0666 less the umask. */
	mode_t mask = umask(0);
	umask(mask);
	struct stat old;
	mode_t mode = lstat(path, &old) == 0 && S_ISREG(old.st_mode) ? old.st_mode & 07777 : 0666 & ~mask;
	if (fchmod(fd, mode) != 0) {
		int e = errno;
		close(fd);
		unlink(t->tmp);
		errno = e;
		return NULL;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(t->tmp);
		errno = e;
	}
	return f;
}

int gs_file_replace_commit(FILE *f, struct gs_file_tmp *t, const char *path, int ok)
{
	int bad = !ok;
	bad |= fclose(f) != 0;
	if (!bad && rename(t->tmp, path) == 0)
		return 0;
	int e = bad ? EIO : errno;
	unlink(t->tmp);
	return -e;
}

int gs_dir_own(const char *dir, struct stat *st)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* With O_DIRECTORY, a link (to anything) gives ENOTDIR, not ELOOP. */
		int e = errno;
		return e == ENOTDIR && lstat(dir, st) == 0 && S_ISLNK(st->st_mode) ? -ELOOP : -e;
	}
	int rc = fstat(fd, st) != 0 ? -errno : 0;
	close(fd);
	if (rc)
		return rc;
	if (st->st_uid != geteuid())
		return -EPERM;
	/* Others who may write into it could swap a trace for theirs; the
	 * sticky bit stops them, as does a group that is only ours (a
	 * user-private group: umask 002), as libgpuspy also allows. */
	if ((st->st_mode & S_IWOTH) && !(st->st_mode & S_ISVTX))
		return -EACCES;
	if ((st->st_mode & S_IWGRP) && !(st->st_mode & S_ISVTX) && st->st_gid != getegid())
		return -EACCES;
	return 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int gs_file_input_refused(const char *out, char *const *in, size_t n, const char *cmd)
{
	/* Both the names (a link at out that a command would replace) and
	 * what they lead to (out, or an input, a link to the other). */
	struct stat ol, of, il, inf;
	int has_l = lstat(out, &ol) == 0, has_f = stat(out, &of) == 0;
	for (size_t i = 0; (has_l || has_f) && i < n; i++)
		if ((has_l && lstat(in[i], &il) == 0 && same_file(&ol, &il)) ||
		    (has_f && stat(in[i], &inf) == 0 && same_file(&of, &inf))) {
			fprintf(stderr, "gpuspy: error: %s: is a trace this %s reads; give the output another name\n",
				out, cmd);
			return 1;
		}
	return 0;
}

void gs_file_create_error(const char *path)
{
	if (errno == ELOOP)
		fprintf(stderr, "gpuspy: error: %s: is a symbolic link; gpuspy does not write through one, "
				"give the file itself\n", path);
	else
		fprintf(stderr, "gpuspy: error: %s: cannot create: %s\n", path, strerror(errno));
}
