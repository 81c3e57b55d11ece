/* SPDX-License-Identifier: MIT */
/*
 * gpuspy public header.
 *
 * libgpuspy is used without any change to the traced program:
 *
 *     LD_PRELOAD=libgpuspy.so ./program
 *
 * It writes one trace file per process, gpuspy-<host>-<pid>[-r<RANK>].gspy,
 * whose layout is described by <gpuspy/format.h>; the gpuspy command reads
 * it. Programs that want to read traces themselves include that header.
 */
#ifndef GPUSPY_H
#define GPUSPY_H

#define GPUSPY_VERSION_MAJOR 0
#define GPUSPY_VERSION_MINOR 1
#define GPUSPY_VERSION_PATCH 0
#define GPUSPY_VERSION_STRING "0.1.0"

#include <gpuspy/format.h>

#endif /* GPUSPY_H */
