/* SPDX-License-Identifier: MIT */
/*
 * The traced processes of this machine, found in /proc (procs.c): the
 * .gspy files a process maps, and each opened only as the very file it
 * maps (docs/security.md, privileged readers). gpuspy top, serve and
 * start/stop/record find their processes with these.
 */
#ifndef GPUSPY_PROCS_H
#define GPUSPY_PROCS_H

#include <sys/types.h>

/* A .gspy file a process maps, as its /proc/PID/maps line names it. */
struct gs_mapped {
	int pid;
	unsigned long start, end; /* the mapping's addresses */
	dev_t dev;                /* the file's device and inode */
	unsigned long ino;
	const char *path;         /* in the process's mount namespace, not ours */
};

/* fn(arg, m) for each .gspy file pid maps, until it returns 1; *deleted
 * set if one was deleted. 1 taken, 0 none, or -errno of reading
 * /proc/PID/maps (-ENOENT: no such process). */
int gs_pid_traces(int pid, int (*fn)(void *arg, const struct gs_mapped *m), void *arg, int *deleted);
/* The file m names, opened (O_RDWR when rw, else O_RDONLY) only if it is a
 * regular file owned by the process's user, the very file mapped; a
 * descriptor the caller owns, or -errno (-EPERM: another file, or
 * another user's). */
int gs_pid_trace_open(const struct gs_mapped *m, int rw);
/* pid's effective uid (the user its files are made as), from
 * /proc/PID/status; 0 or -errno. */
int gs_proc_uid(int pid, uid_t *uid);


#endif
