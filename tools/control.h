/* SPDX-License-Identifier: MIT */
/* gpuspy start|stop PID and gpuspy record PID [--for DUR] (control.c). */
#ifndef GPUSPY_CONTROL_H
#define GPUSPY_CONTROL_H

/* CMD is "start", "stop" or "record"; argv after it. Returns the exit status. */
int gs_cmd_control(const char *cmd, int argc, char **argv);
/* fn(arg, path, inode) for each .gspy file pid maps, until it returns 1;
 * *deleted set if one was deleted. 1 taken, 0 none, or -errno of reading
 * /proc/PID/maps (-ENOENT: no such process). */
int gs_pid_traces(int pid, int (*fn)(void *arg, const char *path, unsigned long ino), void *arg, int *deleted);

#endif
