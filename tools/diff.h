/* SPDX-License-Identifier: MIT */
/* gpuspy diff (diff.c). */
#ifndef GPUSPY_DIFF_H
#define GPUSPY_DIFF_H

/* argv after "diff"; returns the exit status: 0 no regression, 1 one, 2 misuse or unreadable runs. */
int gs_cmd_diff(int argc, char **argv);

#endif
