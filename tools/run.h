/* SPDX-License-Identifier: MIT */
/* `gpuspy run`: CMD under libgpuspy, then its report. */
#ifndef GPUSPY_RUN_H
#define GPUSPY_RUN_H

/* Returns CMD's exit status; report(n, paths) prints the report. */
int gs_cmd_run(int argc, char **argv, int (*report)(int, char **));

#endif
