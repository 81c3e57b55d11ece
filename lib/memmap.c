/* SPDX-License-Identifier: MIT */
/*
 * What gpuspy knows about addresses: every device, managed and pinned range
 * that a recorded call created. Copies use it to tell a pinned host buffer
 * from a pageable one and to resolve the direction of unified-address
 * copies; frees use it to know how many bytes went away.
 *
 * A sorted array under a sequence lock: writers (allocations and frees,
 * already slow calls) serialise on a mutex; readers (copies, on the hot
 * path) never block and retry if a writer moved the array under them.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "gs.h"
#include "memmap.h"
#include "module.h"

#define MAP_CAP (1u << 16)

static struct {
	pthread_mutex_t lock;
	uint64_t seq; /* odd while a writer is changing the array */
	uint32_t n;
	uint64_t base[MAP_CAP];
	uint64_t size[MAP_CAP];
	uint32_t meta[MAP_CAP]; /* mem | (device + 1) << 8 */
	int overflow_warned;
} m = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(memmap, m.lock);

static uint32_t lower_bound(uint32_t n, uint64_t addr)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (__atomic_load_n(&m.base[mid], __ATOMIC_RELAXED) < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void write_begin(void)
{
	pthread_mutex_lock(&m.lock);
	__atomic_store_n(&m.seq, m.seq + 1, __ATOMIC_RELAXED);
	/* The odd sequence is visible before any entry changes. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void write_end(void)
{
	/* Entries are in place before the sequence turns even. */
	__atomic_store_n(&m.seq, m.seq + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&m.lock);
}

static void set_at(uint32_t i, uint64_t b, uint64_t s, uint32_t meta)
{
	__atomic_store_n(&m.base[i], b, __ATOMIC_RELAXED);
	__atomic_store_n(&m.size[i], s, __ATOMIC_RELAXED);
	__atomic_store_n(&m.meta[i], meta, __ATOMIC_RELAXED);
}

void gs_memmap_add(uint64_t base, uint64_t size, unsigned mem, int device)
{
	if (!base)
		return;
	int full = 0;
	write_begin();
	uint32_t n = m.n;
	uint32_t i = lower_bound(n, base);
	uint32_t meta = mem | (uint32_t)(device + 1) << 8;
	if (i < n && m.base[i] == base) {
		set_at(i, base, size, meta); /* reused address: replace */
	} else if (n < MAP_CAP) {
		for (uint32_t j = n; j > i; j--)
			set_at(j, m.base[j - 1], m.size[j - 1], m.meta[j - 1]);
		set_at(i, base, size, meta);
		__atomic_store_n(&m.n, n + 1, __ATOMIC_RELAXED);
	} else if (!m.overflow_warned) {
		m.overflow_warned = full = 1;
	}
	write_end();
	/* Said after the lock: the log's open and write are cancellation
	 * points, and a thread cancelled there would leave the mutex held and
	 * the sequence odd, every later allocation waiting on it and every
	 * copy spinning. Cancellation off too, so the call returns as the
	 * real one does and the line is written; a pending cancel is acted on
	 * at the thread's next cancellation point. */
	if (full) {
		int cancel = gs_cancel_off();
		gs_warn("more than %u live allocations; later ones are not tracked", MAP_CAP);
		gs_cancel_restore(cancel);
	}
}

int gs_memmap_remove(uint64_t base, struct gs_range *out)
{
	int found = 0;
	write_begin();
	uint32_t n = m.n;
	uint32_t i = lower_bound(n, base);
	if (i < n && m.base[i] == base) {
		if (out) {
			out->base = base;
			out->size = m.size[i];
			out->mem = (uint8_t)(m.meta[i] & 0xff);
			out->device = (int16_t)((int)(m.meta[i] >> 8) - 1);
		}
		for (uint32_t j = i; j + 1 < n; j++)
			set_at(j, m.base[j + 1], m.size[j + 1], m.meta[j + 1]);
		__atomic_store_n(&m.n, n - 1, __ATOMIC_RELAXED);
		found = 1;
	}
	write_end();
	return found;
}

/* The fork handlers held the lock across fork(), so no writer was half
 * way; should they have given up waiting for it, the entries a writer was
 * moving may be off, but no reader spins on an odd sequence. */
static void memmap_forked(void)
{
	m.seq &= ~1ull;
}

int gs_memmap_find(uint64_t addr, struct gs_range *out)
{
	for (;;) {
		uint64_t s0 = __atomic_load_n(&m.seq, __ATOMIC_ACQUIRE);
		if (s0 & 1)
			continue;
		uint32_t n = __atomic_load_n(&m.n, __ATOMIC_RELAXED);
		if (n > MAP_CAP)
			n = MAP_CAP;
		int found = 0;
		/* Last range whose base is <= addr. */
		uint32_t i = lower_bound(n, addr + 1);
		if (i > 0) {
			uint64_t b = __atomic_load_n(&m.base[i - 1], __ATOMIC_RELAXED);
			uint64_t s = __atomic_load_n(&m.size[i - 1], __ATOMIC_RELAXED);
			uint32_t meta = __atomic_load_n(&m.meta[i - 1], __ATOMIC_RELAXED);
			if (addr >= b && addr - b < s) {
				out->base = b;
				out->size = s;
				out->mem = (uint8_t)(meta & 0xff);
				out->device = (int16_t)((int)(meta >> 8) - 1);
				found = 1;
			}
		}
		/* Entries were read before the sequence is checked again. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&m.seq, __ATOMIC_RELAXED) == s0)
			return found;
	}
}

void gs_copy_dir(struct gspy_record *r, unsigned dst_mem, int dst_dev,
		 unsigned src_mem, int src_dev)
{
	int dst_host = dst_mem == GSPY_MEM_pinned || dst_mem == GSPY_MEM_pageable;
	int src_host = src_mem == GSPY_MEM_pinned || src_mem == GSPY_MEM_pageable;
	if (dst_host && src_host) {
		r->dir = GSPY_DIR_h2h;
		r->mem = (uint8_t)(src_mem == GSPY_MEM_pinned && dst_mem == GSPY_MEM_pinned
					   ? GSPY_MEM_pinned : GSPY_MEM_pageable);
	} else if (src_host) {
		r->dir = GSPY_DIR_h2d;
		r->mem = (uint8_t)src_mem;
		r->device = (int16_t)dst_dev;
	} else if (dst_host) {
		r->dir = GSPY_DIR_d2h;
		r->mem = (uint8_t)dst_mem;
		r->device = (int16_t)src_dev;
	} else {
		r->dir = (dst_dev >= 0 && src_dev >= 0 && dst_dev != src_dev) ? GSPY_DIR_p2p
									     : GSPY_DIR_d2d;
		r->device = (int16_t)(src_dev >= 0 ? src_dev : dst_dev);
	}
}

GS_MODULE(memmap, 10, .forked = memmap_forked);
