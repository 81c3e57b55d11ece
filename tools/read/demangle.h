/* SPDX-License-Identifier: MIT */
/* Readable C++ (and CUDA kernel) names. */
#ifndef GPUSPY_DEMANGLE_H
#define GPUSPY_DEMANGLE_H

/* The demangled form of name, or name itself when it is not a mangled C++
 * name. The result stays valid until gs_demangle_free(); names are cached,
 * so asking again for the same name is cheap. */
const char *gs_demangle(const char *name);
void gs_demangle_free(void);

#endif
