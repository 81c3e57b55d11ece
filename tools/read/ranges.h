/* SPDX-License-Identifier: MIT */
/*
 * Whose an NVTX range is, by its name: a library's own (CUB, XLA, cuDNN,
 * NCCL, TensorRT, ...: common/libranges.h), or a framework's range that
 * stands for a phase of the user's (XLA's runs and compilations of a
 * jitted function). Read alike by the report's pass and by `gpuspy top`.
 */
#ifndef GPUSPY_RANGES_H
#define GPUSPY_RANGES_H

#include <stddef.h>

/* A range that a library opens, not the user's: it nests inside the
 * user's phase and takes none of its calls or GPU work. */
int gs_library_range(const char *name);
/* A framework's range that stands for a phase of the user's:
 * XLA's run of a jitted function, "XlaModule:#hlo_module=jit_step,...#",
 * is the phase "jit_step"; XLA's compilation of one, "XlaCompile:#...#",
 * is "XLA compile" (*compile = 1: never the loop's step). The phase's name
 * in buf, or NULL for another range. */
const char *gs_framework_phase(const char *name, char *buf, size_t cap, int *compile);

#endif
