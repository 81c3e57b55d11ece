/* SPDX-License-Identifier: MIT */
/* gpuspy serve (serve.c). */
#ifndef GPUSPY_SERVE_H
#define GPUSPY_SERVE_H

/* argv after "serve"; returns the exit status. */
int gs_cmd_serve(int argc, char **argv);

#endif
