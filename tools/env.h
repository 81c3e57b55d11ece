/* SPDX-License-Identifier: MIT */
#ifndef GPUSPY_ENV_H
#define GPUSPY_ENV_H

/* gpuspy env [--markdown]: the GPUSPY_ variables (env.c). */
int gs_cmd_env(int argc, char **argv);

#endif
