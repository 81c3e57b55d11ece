/* SPDX-License-Identifier: MIT */
/* GPU timing: CUPTI (cupti.c) and CUDA events at phase boundaries (gpu_events.c). */
#ifndef GS_GPU_TIMING_H
#define GS_GPU_TIMING_H

#include "gs.h"

void gs_cupti_note(struct gspy_record *r, uint32_t corr); /* a recorded call's correlation (record.c) */
void gs_cupti_faulted(void); /* a call failed with a sticky error: a kernel faulted (record.c) */
void gs_events_work(unsigned api, uint64_t stream);       /* a stream the current phase used (record.c) */
void gs_cupti_callbacks(int on); /* pause/resume: correlation callbacks */
void gs_cupti_start_late(void);  /* GPUSPY_START=paused: the first window starts CUPTI */
void gs_cupti_flush(void);       /* the completed GPU records, now (a thread of gpuspy's own) */
int gs_cupti_exit_flush(void);   /* _exit: every record, by the flusher, waited for at most 500 ms; -1: not in time */
/* 1 while CUPTI's start waits for the first recording window (set by
 * cupti.c as the file opens paused; taken by control.c's first window). */
extern int gs_cupti_deferred;

unsigned gs_events_start(void);          /* GSPY_GPU_TIMING_events or why not */
void gs_events_phase(unsigned kind, uint32_t name_id); /* a phase begins or ends */
void gs_events_exit(void);
void gs_events_stream_gone(uint64_t stream); /* cuStreamDestroy, before the real one */

#endif
