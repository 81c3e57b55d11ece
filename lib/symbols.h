/* SPDX-License-Identifier: MIT */
/* Real functions, devices, contexts and names (symbols.c, devices.c), beyond gs_real (gs.h). */
#ifndef GS_SYMBOLS_H
#define GS_SYMBOLS_H

#include "gs.h"

void *gs_real_dlsym(void *handle, const char *name);
const char *gs_self_name(void); /* libgpuspy's path as the loader has it; no lock */
int gs_in_self(const void *p);  /* p lies in libgpuspy's own image */
void *gs_next_sym(const char *name); /* RTLD_NEXT without dlsym */
void *gs_driver_fn(const char *name); /* unwrapped libcuda function */
int gs_api_ptds(unsigned api);        /* a _ptds/_ptsz (per-thread stream) entry point */

/* Devices, contexts and names (symbols.c). */
int gs_current_device(void);
unsigned gs_devices_seen(void);                 /* bit d: device d had work (devices.c) */
int gs_device_bus_id(int d, char *buf, int len); /* its PCI bus id: 0, or -1 */
uint32_t gs_kernel_name(uint64_t func); /* cached; 0 when unknown */
unsigned gs_api_kind(const char *name);

#endif
