/* SPDX-License-Identifier: MIT */
/*
 * The gpuspy commands, one file each in tools/cmd/: each takes the
 * arguments after its name and returns the exit status (0 done, 1 failed,
 * 2 misuse). tools/gpuspy.c's table maps names to them.
 */
#ifndef GPUSPY_CMD_H
#define GPUSPY_CMD_H

int gs_cmd_report(int argc, char **argv);
int gs_cmd_dump(int argc, char **argv);
int gs_cmd_export(int argc, char **argv);
/* Returns CMD's exit status; report(n, paths) prints the report. */
int gs_cmd_run(int argc, char **argv, int (*report)(int, char **));
int gs_cmd_diff(int argc, char **argv);
int gs_cmd_env(int argc, char **argv);
int gs_cmd_top(int argc, char **argv);
int gs_cmd_serve(int argc, char **argv);
/* CMD is "start", "stop" or "record". */
int gs_cmd_control(const char *cmd, int argc, char **argv);

#include <sys/types.h>

/* A .gspy file a process maps, as its /proc/PID/maps line names it. */
struct gs_mapped {
	int pid;
	unsigned long start, end; /* the mapping's addresses */
	dev_t dev;                /* the file's device and inode */
	unsigned long ino;
	const char *path;         /* in the process's mount namespace, not ours */
};

/* (control.c; top and serve find the traced processes with these.)
 * fn(arg, m) for each .gspy file pid maps, until it returns 1; *deleted
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
