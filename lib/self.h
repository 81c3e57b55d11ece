/* SPDX-License-Identifier: MIT */
/* What a trace's header says about its process, read from the system. */
#ifndef GPUSPY_SELF_H
#define GPUSPY_SELF_H

#include <stddef.h>
#include <stdint.h>

/* The command line as /proc has it, each argument ended by a NUL, cut to
 * cap - 1 bytes and NUL-terminated; its length (0: unreadable). */
size_t gs_self_args(char *out, size_t cap);
/* The command line, arguments joined by spaces, cut to cap - 1 bytes. */
void gs_self_cmdline(char *out, size_t cap);
/* The CPUs the process may run on (its affinity, of up to 16384), 0 when
 * unknown. */
uint32_t gs_self_cpus(void);

#endif
