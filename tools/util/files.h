/* SPDX-License-Identifier: MIT */
/* The files the gpuspy command creates, and the directories it reuses
 * (files.c). */
#ifndef GS_FILES_H
#define GS_FILES_H
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

/* path created or truncated for writing, never through a symbolic link
 * (O_NOFOLLOW: ELOOP) and closed on exec; 0666 less the umask. The caller
 * fcloses it. NULL with errno set. */
FILE *gs_file_create(const char *path);

/* Says in one line why gs_file_create(path) failed (errno). */
void gs_file_create_error(const char *path);

/* A file that replaces path whole: written under a fresh name beside it
 * (.NAME.XXXXXX, mkstemp's O_EXCL), then renamed over it by
 * gs_file_replace_commit, so that a reader never sees half of it and no
 * link planted at a guessable name is followed. */
struct gs_file_tmp {
	char tmp[PATH_MAX];
};
/* NULL with errno set. */
FILE *gs_file_replace_open(const char *path, struct gs_file_tmp *t);
/* Closes f; ok: what was written is whole. Renames it to path (0), or
 * removes it (-errno; -EIO for a failed write). */
int gs_file_replace_commit(FILE *f, struct gs_file_tmp *t, const char *path, int ok);

/* Whether dir may be written into as the user's own: a directory (not a
 * symbolic link to one) owned by the effective user, which nobody else may
 * write to unless it is sticky. 0, or -ELOOP (a link), -ENOTDIR, -EPERM
 * (another user's: st->st_uid says whose), -EACCES (others may write), or
 * open's -errno. st: its status. */
int gs_dir_own(const char *dir, struct stat *st);

/* Whether out names one of the n files in, by any path (a hard link, a
 * symbolic link either way, ./): the same device and inode. Said in one
 * line ("is a trace this CMD reads"), 1; writing it would destroy the
 * input it is made from. 0 when out does not exist. */
int gs_file_input_refused(const char *out, char *const *in, size_t n, const char *cmd);

#endif
