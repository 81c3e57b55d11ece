/* SPDX-License-Identifier: MIT */
/* CUDA error codes by name (cuda_errors.c). */
#ifndef GS_CUDA_ERRORS_H
#define GS_CUDA_ERRORS_H
#include <stddef.h>

/* The name of code as api returned it (driver or runtime numbering); buf
 * (cap bytes) holds "error N" for a code without a name. */
const char *gs_cuda_error(const char *api, int code, char *buf, size_t cap);
/* code means "out of memory" for api. */
int gs_cuda_out_of_memory(const char *api, int code);

#endif
