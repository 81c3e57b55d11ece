/* SPDX-License-Identifier: MIT */
/* gpuspy start|stop PID and gpuspy record PID [--for DUR] (control.c). */
#ifndef GPUSPY_CONTROL_H
#define GPUSPY_CONTROL_H

/* CMD is "start", "stop" or "record"; argv after it. Returns the exit status. */
int gs_cmd_control(const char *cmd, int argc, char **argv);

#endif
