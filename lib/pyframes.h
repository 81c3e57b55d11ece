/* SPDX-License-Identifier: MIT */
/* Python frames without the GIL (pyframes.c). */
#ifndef GS_PYFRAMES_H
#define GS_PYFRAMES_H

#include <stdint.h>

/* This thread's Python frames, innermost first, as (code id, line), read
 * without the GIL by the layout learned at start-up; 0 when not learned. */
unsigned gs_pyframes_raw(uint32_t (*out)[2], unsigned max);
/* The C API functions learning needs, from the constructor (no dlsym later). */
void gs_pyframes_lookup(void);
/* Learns the layout, holding the GIL, once (0: learned). */
int gpuspy_python_frames_learn(void);

#endif
