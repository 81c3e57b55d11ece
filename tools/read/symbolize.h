/* SPDX-License-Identifier: MIT */
/*
 * Call stacks of a .gspy trace, symbolized in the reader (never in the traced
 * process) with elfutils' libdwfl: function and offset from the symbol
 * tables, file:line where DWARF exists (also from separate debug files), C++
 * names demangled. Each stack and each address is resolved once.
 */
#ifndef GPUSPY_SYMBOLIZE_H
#define GPUSPY_SYMBOLIZE_H

#include <stdint.h>

#include "read/reader.h"

/* A rendered stack: innermost frame first, each "function (file:line)" or
 * "function+0xOFF (module)"; Python frames as "function (file.py:line)". */
struct gs_stack {
	uint32_t n;
	char **frames;
};

struct gs_symbolizer;

/* NULL only when out of memory; a trace without modules still renders
 * addresses. */
struct gs_symbolizer *gs_sym_open(const struct gs_trace *t);
/* The stack with string-table id `id`; NULL if the id is not a stack. */
const struct gs_stack *gs_sym_stack(struct gs_symbolizer *s, uint32_t id);
void gs_sym_close(struct gs_symbolizer *s);

/* Whose a frame's module is, where it is not the program's ("the CUDA
 * runtime", "the Python interpreter", "a Python extension module"); NULL
 * for the program's own or one not known. frame: "function+0xOFF
 * (module)", "module+0xOFF", or a module's file name; a frame whose
 * function or source file name starts like a module's (a "cupy_" one)
 * is taken for it too. Frames of the libraries among them (the CUDA
 * libraries, the C and C++ libraries, the interpreter's) are rendered
 * with their module, never their line. */
const char *gs_module_owner(const char *frame);

#endif
