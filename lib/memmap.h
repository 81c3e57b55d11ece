/* SPDX-License-Identifier: MIT */
/* Memory ranges (memmap.c): what we know of an address, and the direction of a copy. */
#ifndef GS_MEMMAP_H
#define GS_MEMMAP_H

#include "gs.h"

struct gs_range {
	uint64_t base, size;
	uint8_t mem;  /* enum gspy_mem */
	int16_t device;
};
void gs_memmap_add(uint64_t base, uint64_t size, unsigned mem, int device);
int gs_memmap_remove(uint64_t base, struct gs_range *out);
int gs_memmap_find(uint64_t addr, struct gs_range *out);
/* Classify a pointer for a copy: GSPY_MEM_device/managed/pinned/pageable. */
unsigned gs_classify(uint64_t addr, int *device);
/* Fill rec->dir and rec->mem for a copy between two classified ends. */
void gs_copy_dir(struct gspy_record *r, unsigned dst_mem, int dst_dev,
		 unsigned src_mem, int src_dev);

#endif
