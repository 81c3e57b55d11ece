/* SPDX-License-Identifier: MIT */
/* GPU timing: CUPTI (cupti.c) and CUDA events at phase boundaries (gpu_events.c); the record path's own calls are in gs.h. */
#ifndef GS_GPU_TIMING_H
#define GS_GPU_TIMING_H

#include "gs.h"

void gs_cupti_callbacks(int on); /* pause/resume: correlation callbacks */
void gs_cupti_start_late(void);  /* GPUSPY_START=paused: the first window starts CUPTI */
void gs_cupti_flush(void);       /* the completed GPU records, now (a thread of gpuspy's own) */
int gs_control_defers_cupti(void); /* control.c: 1 while CUPTI is to wait for a window */

unsigned gs_events_start(void);          /* GSPY_GPU_TIMING_events or why not */
void gs_events_phase(unsigned kind, uint32_t name_id); /* a phase begins or ends */
void gs_events_exit(void);

#endif
