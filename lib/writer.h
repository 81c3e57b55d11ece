/* SPDX-License-Identifier: MIT */
/* The trace file (writer.c), beyond the record path's gs_writer_ready and gs_commit (gs.h). */
#ifndef GS_WRITER_H
#define GS_WRITER_H

#include "gs.h"

uint32_t gs_intern(const char *s); /* string table id, 0 on failure */
uint32_t gs_intern_bytes(const void *data, size_t len); /* a binary entry */
void gs_writer_clock_pair(void);   /* refresh header.clock_last */
void gs_writer_exit(int state, int code, int sig);
void gs_writer_trim(void);         /* clean exit: cut the file to what it holds */
void gs_writer_finish(void);       /* gpuspy's destructor: exit and trim, and so for a file opened later */
void gs_writer_device_mem(int device, uint64_t bytes);
void gs_writer_signal_seen(int sig); /* async-signal-safe */
/* A fault at addr (SIGBUS): 1 when addr lies in the trace file's mapping,
 * which the file no longer backs (cut under the program), and the fault's
 * instruction may run again: recording has stopped. Async-signal-safe. */
int gs_writer_fault(const void *addr);
void gs_writer_stack_cost(uint64_t time); /* one call stack taken, in clock units */

#endif
