/* SPDX-License-Identifier: MIT */
/* Python frames without the GIL (pyframes.c). */
#ifndef GS_PYFRAMES_H
#define GS_PYFRAMES_H

#include <stdint.h>

/* This thread's Python frames, innermost first, as (code id, line), read
 * without the GIL by the layout learned at start-up; 0 when not learned. */
unsigned gs_pyframes_raw(uint32_t (*out)[2], unsigned max);
/* This thread's Python frames, innermost first, at their cheapest: each
 * one's code object and instruction, no line, no name (a launch keeps
 * them, in case its kernel faults); 0 when not learned. */
unsigned gs_pyframes_where(uintptr_t (*out)[2], unsigned max);
/* Those frames, maybe gone since, as (code id, line): each read through a
 * probe that costs EFAULT, never a fault; one whose code object is no
 * longer one is left out. */
unsigned gs_pyframes_lines(const uintptr_t (*where)[2], unsigned n, uint32_t (*out)[2]);
/* Whether the layout was learned (gs_pyframes_raw reads). */
int gs_pyframes_on(void);
/* Whether this thread holds the GIL now (a sub-interpreter or not). */
int gs_py_holds_gil(void);
/* Holds the collector off while the C API's frame functions run (they may
 * allocate, and a collection would run Python code inside the traced
 * call); returns whether it was on, for gs_py_gc_resume. */
int gs_py_gc_pause(void);
void gs_py_gc_resume(int was_on);
/* The C API functions learning needs, from the constructor (no dlsym later). */
void gs_pyframes_lookup(void);
/* Learns the layout, holding the GIL, once (0: learned). */
int gpuspy_python_frames_learn(void);

#endif
