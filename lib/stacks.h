/* SPDX-License-Identifier: MIT */
/* Call stacks (stacks.c). */
#ifndef GS_STACKS_H
#define GS_STACKS_H

#include "gs.h"

/* A recorded call's stack (record.c), and gs_stack_fault's: each returns
 * the walk's time, raw clock (the record's own time), 0 when none. */
uint64_t gs_stack_note(struct gspy_record *r);
/* The stack of a call that failed with a sticky error, whatever its kind,
 * GPUSPY_STACK_MIN and GPUSPY_STACK_LAUNCHES (record.c): where a kernel's
 * fault surfaced. None when stacks are off. */
uint64_t gs_stack_fault(struct gspy_record *r);
/* A launch keeps its Python frames, a few loads, in case its kernel
 * faults (record.c, on the launches CUPTI sees); at the thread's first
 * sticky failure they become its launch line: a mark at that launch's
 * start, GSPY_MARK_FAULT_SITE, whose stack they are. The report names the
 * launch by it when it is the one the fault came from. */
void gs_stack_launch_where(struct gs_tls *t, const struct gspy_record *r);
void gs_stack_fault_site(struct gs_tls *t);
/* An allocation's native frames taken now, to be recorded once the trace
 * file exists (hook_host.c, before the first CUDA call): up to
 * GPUSPY_STACK_DEPTH PCs into pc (GSPY_STACK_MAX room), none when
 * allocations carry no stack; and, later, their stack id. */
unsigned gs_stack_pcs(uint64_t *pc);
uint32_t gs_stack_id_of(const uint64_t *pc, unsigned n);

#endif
