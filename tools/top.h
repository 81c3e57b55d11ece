/* SPDX-License-Identifier: MIT */
/* gpuspy top (top.c). */
#ifndef GPUSPY_TOP_H
#define GPUSPY_TOP_H

/* argv after "top"; returns the exit status. */
int gs_cmd_top(int argc, char **argv);

#endif
