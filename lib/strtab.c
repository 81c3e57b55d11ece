/* SPDX-License-Identifier: MIT */
/*
 * The trace file's string table (strtab.h): kernel, phase and file names
 * and call stacks, each stored once and referenced by id. Its bytes live
 * in the file's mapping, which writer.c attaches and, at the trim at exit,
 * has them moved down (gs_strtab_move); its length and index live
 * here, in process memory: nothing it addresses by is read back from the
 * file, which its owner may write while the program runs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "gs.h"
#include "module.h"
#include "strtab.h"
#include "writer.h"

static struct {
	pthread_mutex_t lock;     /* appends */
	char *tab;                /* in the mapping; NULL before the file */
	uint64_t size, used;      /* under the lock; the trim moves the table under it too */
	struct gspy_header *hdr;  /* strtab_used mirrors used, for readers */
} st = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(strtab, st.lock);

/*
 * The string table keeps each distinct entry once: an index of the entries
 * written (open addressing on a hash of the bytes, checked against the
 * bytes in the file) answers an entry already there with its id. Callers
 * keep their own caches in front of it, but those are small and lossy (a
 * full cache, a name past its slot's length): without the index, a name
 * missed there was appended again on every call, and XLA's per-thunk
 * NVTX names filled the 16 MiB table within seconds, after which every
 * new phase name and call stack was lost. Past INDEX_FULL entries the
 * index stops growing and entries are appended as they come.
 */
#define INDEX_SLOTS (1u << 18)
#define INDEX_FULL (INDEX_SLOTS / 4 * 3)
static struct {
	struct { uint32_t id, hash; } *slot; /* id 0: empty; mmap'ed at first use */
	uint32_t n;
} ix;

/* With st.lock held: the id of an entry equal to (data, len), or 0 and, in
 * *free_slot, where to note a new one (-1: the index is full). */
static uint32_t index_find(const void *data, size_t len, uint32_t hash, long *free_slot)
{
	*free_slot = -1;
	if (!ix.slot) {
		void *m = mmap(NULL, INDEX_SLOTS * sizeof(*ix.slot), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 0;
		ix.slot = m;
	}
	const char *tab = st.tab;
	for (uint32_t k = hash & (INDEX_SLOTS - 1);; k = (k + 1) & (INDEX_SLOTS - 1)) {
		uint32_t id = ix.slot[k].id;
		if (!id) {
			if (ix.n < INDEX_FULL)
				*free_slot = k;
			return 0;
		}
		/* The length is read back from the file, which its owner may
		 * have written: compared only within what this process wrote. */
		uint32_t l;
		memcpy(&l, tab + id - 1, 4);
		if (ix.slot[k].hash == hash && l == len && id - 1 + 4 + (uint64_t)len <= st.used &&
		    !memcmp(tab + id - 1 + 4, data, len))
			return id;
	}
}

static uint32_t intern(const void *data, size_t len)
{
	if (gs_writer_ready() != 0)
		return 0;
	size_t need = (4 + len + 1 + 3) & ~(size_t)3;
	uint64_t h64 = gs_fnv1a(data, len);
	uint32_t hash = (uint32_t)(h64 ^ (h64 >> 32));
	long slot;
	pthread_mutex_lock(&st.lock);
	uint32_t id = index_find(data, len, hash, &slot);
	uint64_t used = st.used;
	if (!id && st.tab && used + need <= st.size) {
		char *p = st.tab + used;
		uint32_t l = (uint32_t)len;
		memcpy(p, &l, 4);
		memcpy(p + 4, data, len);
		memset(p + 4 + len, 0, need - 4 - len);
		st.used = used + need;
		/* The bytes are in place before readers may look at them. */
		__atomic_store_n(&st.hdr->strtab_used, used + need, __ATOMIC_RELEASE);
		id = (uint32_t)used + 1;
		if (slot >= 0) {
			ix.slot[slot].id = id;
			ix.slot[slot].hash = hash;
			ix.n++;
		}
	}
	pthread_mutex_unlock(&st.lock);
	return id;
}

/* One string-table entry: u32 length, the bytes, NUL, padding; its id is
 * its offset + 1. */
uint32_t gs_intern_bytes(const void *data, size_t len)
{
	/* gpuspy's own work, even called outside a hook (an NVTX range's name,
	 * gpuspy_pause's phase): the index's mmap and the file's making pass
	 * through the host hooks, never recorded as the program's (whose
	 * stack would intern again under st.lock: a thread waiting on itself). */
	gs_hold();
	uint32_t id = intern(data, len);
	gs_release();
	return id;
}

uint32_t gs_intern(const char *s)
{
	return gs_intern_bytes(s, strnlen(s, 4096));
}

void gs_strtab_attach(char *tab, uint64_t size, struct gspy_header *h)
{
	pthread_mutex_lock(&st.lock);
	st.tab = tab;
	st.size = size;
	st.used = 0;
	st.hdr = h;
	pthread_mutex_unlock(&st.lock);
}

/*
 * The trim at exit: the table's used bytes move from base + from to base +
 * to, lower in the same mapping, unless the two would overlap (readers in
 * other processes may be reading the old place: it stays intact until the
 * file is cut). Under the lock, so that appenders wait and then append at
 * the new place; ids are offsets within the table and the index compares
 * against the bytes through st.tab: both stay valid.
 */
uint64_t gs_strtab_move(char *base, uint64_t from, uint64_t *at, uint64_t slack)
{
	pthread_mutex_lock(&st.lock);
	uint64_t used = st.used, to = *at;
	if (!st.tab || st.tab != base + from) { /* not this file's table */
		pthread_mutex_unlock(&st.lock);
		return 0;
	}
	if (to > from || (to < from && to + used > from))
		to = from; /* would overlap: it stays where it is */
	uint64_t size = (used + slack + 4095) & ~(uint64_t)4095;
	if (size > st.size)
		size = st.size;
	if (to != from)
		memcpy(base + to, base + from, used);
	__atomic_store_n(&st.hdr->strtab_size, size, __ATOMIC_RELAXED);
	/* The bytes are in place before the header says where they are. */
	__atomic_store_n(&st.hdr->strtab_offset, to, __ATOMIC_RELEASE);
	st.tab = base + to;
	st.size = size;
	pthread_mutex_unlock(&st.lock);
	*at = to;
	return size;
}

/* A fork child writes a file of its own: the parent's entries are not in it. */
static void strtab_forked(void)
{
	if (ix.slot)
		munmap(ix.slot, INDEX_SLOTS * sizeof(*ix.slot));
	ix.slot = NULL;
	ix.n = 0;
	st.tab = NULL;
	st.size = st.used = 0;
	st.hdr = NULL;
	pthread_mutex_init(&st.lock, NULL);
}

GS_MODULE(strtab, 21, .forked = strtab_forked);
