/* SPDX-License-Identifier: MIT */
/* Phases (phase.c). */
#ifndef GS_PHASE_H
#define GS_PHASE_H

#include "gs.h"

void gs_phase(unsigned api, unsigned kind, const char *name);
GS_API void gpuspy_torch_phase(const char *name, unsigned long long step, int begin);
/* Name ids for phases (interned once each), and a phase record by id. */
uint32_t gs_phase_name(const char *name);
uint32_t gs_phase_id(unsigned api, unsigned kind, uint32_t name_id);
/* Pause (0) or resume (1) the records, with their marks; 1 if it changed.
 * Through gs_recording (control.c), which also tells CUPTI and the header. */
int gs_phase_recording(int on);

#endif
