/* SPDX-License-Identifier: MIT */
/*
 * Host memory family: malloc, calloc, realloc, free, posix_memalign,
 * aligned_alloc, mmap and munmap. Off by default; with
 * GPUSPY_HOST_ALLOC_MIN=BYTES, allocations of at least that size are
 * recorded (kind alloc/free, mem host) with their call stacks, so that the
 * reader can tie a pageable copy to the line that allocated its buffer.
 *
 * libgpuspy defines none of the names: they are in libgpuspy-host.so
 * (host_shim.c), preloaded after it only when host allocations are
 * recorded, each a jump to gpuspy_host_NAME here. Without it a traced
 * process's allocations never pass through gpuspy (the wrappers cost ~5 us
 * a step of a launch-bound PyTorch loop in place, even off). The real
 * functions are the next definitions after libgpuspy and the shim (what
 * RTLD_NEXT would give from the shim: glibc, or an allocator the program
 * links), found without dlsym, which itself allocates. Calls made inside
 * another hook (the unwinder, the driver inside cudaMalloc, the trace
 * writer) pass through unrecorded. errno is kept exactly as the real
 * function left it.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs.h"
#include "host_alloc.h"
#include "stacks.h"
#include "symbols.h"
#include "writer.h"
#include "module.h"
#include "host.h"

static uint64_t host_min; /* 0 = off */

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef int (*memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_fn)(size_t, size_t);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);

static void *real_of(unsigned api)
{
	void *p = __atomic_load_n(&gs_real_tab[api], __ATOMIC_RELAXED);
	if (GS_LIKELY(p != NULL))
		return p;
	static const char *const names[] = {
#define GSPY_X(sym, k, v) #sym,
		GSPY_HOST_API_LIST(GSPY_X)
#undef GSPY_X
	};
	p = gs_next_sym(names[api - GSPY_API_malloc]);
	if (!p)
		abort(); /* no C allocator behind us: nothing sane to return */
	__atomic_store_n(&gs_real_tab[api], p, __ATOMIC_RELAXED);
	return p;
}
#define REAL(sym, type) ((type)real_of(GSPY_API_##sym))

/* ---- live recorded blocks: address -> size --------------------------------- */

#define LIVE_CAP (1u << 16)
#define TOMB 1ull
static struct {
	uint64_t addr; /* 0 free, TOMB removed */
	uint64_t size;
} live[LIVE_CAP];

static uint32_t slot_of(uint64_t a)
{
	return (uint32_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 48) & (LIVE_CAP - 1);
}

static void live_put(uint64_t a, uint64_t size)
{
	for (uint32_t i = 0, k = slot_of(a); i < 256; i++, k = (k + 1) & (LIVE_CAP - 1)) {
		uint64_t cur = __atomic_load_n(&live[k].addr, __ATOMIC_RELAXED);
		if ((cur == 0 || cur == TOMB) &&
		    __atomic_compare_exchange_n(&live[k].addr, &cur, a, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			__atomic_store_n(&live[k].size, size, __ATOMIC_RELEASE);
			return;
		}
	}
	/* Full around here: the block's free will not be recorded. */
}

/* Removes a before the real free runs, so that a thread that gets the same
 * address back cannot have its entry removed by us. */
static uint64_t live_take(uint64_t a)
{
	for (uint32_t i = 0, k = slot_of(a); i < 256; i++, k = (k + 1) & (LIVE_CAP - 1)) {
		uint64_t cur = __atomic_load_n(&live[k].addr, __ATOMIC_ACQUIRE);
		if (cur == 0)
			return 0;
		if (cur == a) {
			uint64_t size = __atomic_load_n(&live[k].size, __ATOMIC_ACQUIRE);
			if (__atomic_compare_exchange_n(&live[k].addr, &cur, TOMB, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED))
				return size;
			return 0;
		}
	}
	return 0;
}

/* ---- before the trace file exists --------------------------------------------- */

/*
 * A process's trace file is created by its first CUDA call (or phase), so
 * that a process that never makes one (a compiler, a shell the program
 * runs) writes nothing and starts nothing: no file, thread, signal handler
 * or CUPTI. Host allocations made before that are kept here while they
 * live, with their native stack (Python frames need the file's string
 * table), and their own thread writes them at its first chunk. A block
 * freed before the file exists is forgotten: no CUDA work can have read it.
 */
#define PEND_CAP 4096u
#define PEND_BUSY 1ull /* addr while its entry is being written */
struct pend {
	uint64_t addr; /* 0 free, PEND_BUSY being written, else the block */
	uint64_t bytes, start, end;
	uint32_t tid;
	uint16_t api, npc;
	uint64_t pc[GSPY_STACK_MAX];
};
static struct pend *pend_tab;   /* PEND_CAP entries, mapped at first use */
static uint64_t pend_count;     /* entries held */
static uint64_t pend_lost;      /* allocations not kept: no room */

static struct pend *pend_table(void)
{
	struct pend *t = __atomic_load_n(&pend_tab, __ATOMIC_ACQUIRE);
	if (t)
		return t;
	size_t len = PEND_CAP * sizeof(struct pend);
	void *m = REAL(mmap, mmap_fn)(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	/* Zeroed pages before other threads can see the table. */
	if (!__atomic_compare_exchange_n(&pend_tab, &t, (struct pend *)m, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		REAL(munmap, munmap_fn)(m, len);
		return t;
	}
	return (struct pend *)m;
}

/* Keeps the block p (NULL: the call failed) of n bytes that api returned,
 * called at start; returns p with the call's errno. */
static void *pend_put(unsigned api, void *p, uint64_t n, uint64_t start)
{
	int e = errno;
	uint64_t end = gs_now();
	if (!p || GS_UNLIKELY(__atomic_load_n(&gs_g.disabled, __ATOMIC_RELAXED)) || __atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED)) {
		errno = e;
		return p;
	}
	uint64_t a = (uint64_t)(uintptr_t)p;
	gs_hold(); /* what the unwinder allocates passes through */
	live_put(a, n);
	struct pend *tab = pend_table();
	struct pend *slot = NULL;
	for (uint32_t i = 0, k = slot_of(a) & (PEND_CAP - 1); tab && i < 256; i++, k = (k + 1) & (PEND_CAP - 1)) {
		uint64_t cur = 0;
		if (__atomic_compare_exchange_n(&tab[k].addr, &cur, PEND_BUSY, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			slot = &tab[k];
			break;
		}
	}
	if (slot) {
		slot->bytes = n;
		slot->start = start;
		slot->end = end;
		slot->tid = (uint32_t)syscall(SYS_gettid);
		slot->api = (uint16_t)api;
		slot->npc = (uint16_t)gs_stack_pcs(slot->pc);
		__atomic_fetch_add(&pend_count, 1, __ATOMIC_RELAXED);
		gs_tls.host_kept = 1; /* its first chunk is a fresh one (writer.c) */
		/* The entry is whole before anyone can take it. */
		__atomic_store_n(&slot->addr, a, __ATOMIC_RELEASE);
	} else {
		__atomic_fetch_add(&pend_lost, 1, __ATOMIC_RELAXED);
	}
	gs_release();
	errno = e;
	return p;
}

/* Forgets the kept block a (freed before the file exists). */
static void pend_take(uint64_t a)
{
	struct pend *tab = __atomic_load_n(&pend_tab, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0, k = slot_of(a) & (PEND_CAP - 1); tab && i < 256; i++, k = (k + 1) & (PEND_CAP - 1)) {
		uint64_t cur = a;
		if (__atomic_compare_exchange_n(&tab[k].addr, &cur, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_fetch_sub(&pend_count, 1, __ATOMIC_RELAXED);
			return;
		}
	}
}

static int by_start(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Thread t's first chunk is open: its kept allocations go in, oldest first. */
static void host_first_chunk(struct gs_tls *t)
{
	t->host_kept = 0;
	struct pend *tab = __atomic_load_n(&pend_tab, __ATOMIC_ACQUIRE);
	if (!tab || !__atomic_load_n(&pend_count, __ATOMIC_RELAXED))
		return;
	gs_hold(); /* the sort buffer and the stacks' interning pass through */
	uint64_t (*mine)[2] = malloc(PEND_CAP * sizeof(*mine)); /* (start, index) */
	if (!mine) {
		gs_release();
		return;
	}
	uint32_t n = 0;
	for (uint32_t k = 0; k < PEND_CAP; k++)
		if (__atomic_load_n(&tab[k].addr, __ATOMIC_ACQUIRE) > PEND_BUSY && tab[k].tid == t->tid) {
			mine[n][0] = tab[k].start;
			mine[n++][1] = k;
		}
	qsort(mine, n, sizeof(*mine), by_start);
	for (uint32_t i = 0; i < n; i++) {
		struct pend *e = &tab[mine[i][1]];
		uint64_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
		if (a <= PEND_BUSY)
			continue;
		struct gspy_record r;
		memset(&r, 0, sizeof(r));
		r.api = e->api;
		r.kind = GSPY_KIND_alloc;
		r.mem = GSPY_MEM_host;
		r.device = -1;
		r.start = e->start;
		r.end = e->end;
		r.u.mem.bytes = e->bytes;
		r.u.mem.addr = a;
		r.stack_id = e->npc ? gs_stack_id_of(e->pc, e->npc) : 0;
		/* Ours now; a free that got here first keeps it from being written. */
		if (!__atomic_compare_exchange_n(&e->addr, &a, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		__atomic_fetch_sub(&pend_count, 1, __ATOMIC_RELAXED);
		gs_commit(t, &r);
	}
	free(mine);
	gs_release();
}

static int pend_answered; /* host_exiting has counted them */

/* Host allocations from before the file that no thread wrote (their thread
 * ended first, or there was no room to keep them): lost, and counted apart
 * from events dropped for want of room in the buffer. Counted once (an exit
 * path may run twice); async-signal-safe. */
static void host_exiting(struct gspy_header *h)
{
	if (__atomic_exchange_n(&pend_answered, 1, __ATOMIC_RELAXED))
		return;
	__atomic_fetch_add(&h->host_unwritten,
			   __atomic_load_n(&pend_count, __ATOMIC_RELAXED) + __atomic_load_n(&pend_lost, __ATOMIC_RELAXED),
			   __ATOMIC_RELAXED);
}

/* A fork child: what its parent kept is the parent's to write. */
static void host_forked(void)
{
	struct pend *tab = pend_tab;
	for (uint32_t k = 0; tab && k < PEND_CAP; k++)
		tab[k].addr = 0;
	pend_count = pend_lost = 0;
	pend_answered = 0;
}

/* ---- recording ------------------------------------------------------------ */

static void note_alloc(struct gspy_record *r, void *p, uint64_t bytes)
{
	if (!r)
		return;
	r->u.mem.bytes = bytes;
	r->u.mem.addr = (uint64_t)(uintptr_t)p;
	r->mem = GSPY_MEM_host;
	if (p)
		live_put((uint64_t)(uintptr_t)p, bytes);
}

static void note_free(struct gspy_record *r, void *p, uint64_t bytes)
{
	if (!r)
		return;
	r->u.mem.bytes = bytes;
	r->u.mem.addr = (uint64_t)(uintptr_t)p;
	r->mem = GSPY_MEM_host;
}

/* An allocation under way: recorded once the trace file exists, else kept
 * from `start` until it does (pend_put). */
struct host_call {
	unsigned api;
	int kept;
	struct gspy_record *r; /* recorded: gs_begin's record (paired with gs_end) */
	uint64_t start;        /* kept: when the call began */
};

static inline struct host_call host_begin(unsigned api)
{
	struct host_call c = { api, !gs_writer_open(), NULL, 0 };
	if (c.kept)
		c.start = gs_now();
	else
		c.r = gs_begin(api, GSPY_KIND_alloc);
	return c;
}

/* Its end: p (NULL on failure) and n bytes; the real call's errno is kept. */
static void *host_done(const struct host_call *c, void *p, uint64_t n)
{
	if (c->kept)
		return pend_put(c->api, p, n, c->start);
	int e = errno;
	note_alloc(c->r, p, n);
	gs_end(c->r, p ? 0 : e);
	errno = e;
	return p;
}

static inline int big(size_t n)
{
	return GS_UNLIKELY(host_min != 0) && n >= host_min && gs_tls.depth == 0;
}

GS_API void *gpuspy_host_malloc(size_t n)
{
	if (GS_LIKELY(!big(n)))
		return REAL(malloc, malloc_fn)(n);
	struct host_call c = host_begin(GSPY_API_malloc);
	return host_done(&c, REAL(malloc, malloc_fn)(n), n);
}

GS_API void *gpuspy_host_calloc(size_t k, size_t n)
{
	size_t total;
	if (GS_LIKELY(__builtin_mul_overflow(k, n, &total) || !big(total)))
		return REAL(calloc, calloc_fn)(k, n);
	struct host_call c = host_begin(GSPY_API_calloc);
	return host_done(&c, REAL(calloc, calloc_fn)(k, n), total);
}

static void free_block(unsigned api, void *p, uint64_t size)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_free);
	note_free(r, p, size);
	gs_end(r, 0);
}

GS_API void gpuspy_host_free(void *p)
{
	uint64_t size;
	if (GS_LIKELY(!host_min) || !p || !(size = live_take((uint64_t)(uintptr_t)p)) || gs_tls.depth) {
		REAL(free, free_fn)(p);
		return;
	}
	if (!gs_writer_open()) {
		pend_take((uint64_t)(uintptr_t)p);
		REAL(free, free_fn)(p);
		return;
	}
	int e = errno;
	struct gspy_record *r = gs_begin(GSPY_API_free, GSPY_KIND_free);
	REAL(free, free_fn)(p);
	note_free(r, p, size);
	gs_end(r, 0);
	errno = e;
}

GS_API void *gpuspy_host_realloc(void *old, size_t n)
{
	if (GS_LIKELY(!host_min) || gs_tls.depth)
		return REAL(realloc, realloc_fn)(old, n);
	uint64_t was = old ? live_take((uint64_t)(uintptr_t)old) : 0;
	if (!was && n < host_min)
		return REAL(realloc, realloc_fn)(old, n);
	if (!gs_writer_open()) {
		if (was)
			pend_take((uint64_t)(uintptr_t)old);
		uint64_t t0 = gs_now();
		void *q = REAL(realloc, realloc_fn)(old, n);
		if (!q && n && was) {
			int e = errno;
			live_put((uint64_t)(uintptr_t)old, was); /* failed: the old block lives on */
			errno = e;
		}
		return n >= host_min ? pend_put(GSPY_API_realloc, q, n, t0) : q;
	}
	int e0 = errno;
	if (was)
		free_block(GSPY_API_realloc, old, was);
	errno = e0;
	struct gspy_record *r = n >= host_min ? gs_begin(GSPY_API_realloc, GSPY_KIND_alloc) : NULL;
	void *p = REAL(realloc, realloc_fn)(old, n);
	int e = errno;
	if (r)
		note_alloc(r, p, n);
	if (!p && n && was)
		live_put((uint64_t)(uintptr_t)old, was); /* failed: the old block lives on */
	if (r)
		gs_end(r, p ? 0 : e);
	errno = e;
	return p;
}

GS_API int gpuspy_host_posix_memalign(void **out, size_t align, size_t n)
{
	if (GS_LIKELY(!big(n)))
		return REAL(posix_memalign, memalign_fn)(out, align, n);
	int e = errno;
	struct host_call c = host_begin(GSPY_API_posix_memalign);
	int rc = REAL(posix_memalign, memalign_fn)(out, align, n);
	void *p = rc == 0 ? *out : NULL;
	/* host_done would take errno for the result: posix_memalign returns it. */
	if (c.kept) {
		pend_put(c.api, p, n, c.start);
		return rc;
	}
	note_alloc(c.r, p, n);
	gs_end(c.r, rc);
	errno = e;
	return rc;
}

GS_API void *gpuspy_host_aligned_alloc(size_t align, size_t n)
{
	if (GS_LIKELY(!big(n)))
		return REAL(aligned_alloc, aligned_fn)(align, n);
	struct host_call c = host_begin(GSPY_API_aligned_alloc);
	return host_done(&c, REAL(aligned_alloc, aligned_fn)(align, n), n);
}

GS_API void *gpuspy_host_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off)
{
	if (GS_LIKELY(!big(n)))
		return REAL(mmap, mmap_fn)(addr, n, prot, flags, fd, off);
	struct host_call c = host_begin(GSPY_API_mmap);
	void *p = REAL(mmap, mmap_fn)(addr, n, prot, flags, fd, off);
	return host_done(&c, p == MAP_FAILED ? NULL : p, n) ? p : MAP_FAILED;
}

GS_API int gpuspy_host_munmap(void *p, size_t n)
{
	uint64_t size;
	if (GS_LIKELY(!host_min) || !(size = live_take((uint64_t)(uintptr_t)p)) || gs_tls.depth)
		return REAL(munmap, munmap_fn)(p, n);
	if (!gs_writer_open()) {
		pend_take((uint64_t)(uintptr_t)p);
		return REAL(munmap, munmap_fn)(p, n);
	}
	struct gspy_record *r = gs_begin(GSPY_API_munmap, GSPY_KIND_free);
	int rc = REAL(munmap, munmap_fn)(p, n);
	int e = errno;
	if (rc != 0)
		live_put((uint64_t)(uintptr_t)p, size);
	/* A partial unmap is recorded as what it released. */
	note_free(r, p, n < size ? n : size);
	gs_end(r, rc == 0 ? 0 : e);
	errno = e;
	return rc;
}

/* GPUSPY_HOST_ALLOC_MIN. Called last in gs_init. */
static void host_setup(void)
{
	uint64_t min = gs_optu(GS_OPT_HOST_ALLOC_MIN); /* 0: unset, or not a size */
	if (!min)
		return;
	if (!gs_next_sym(GS_HOST_SHIM_MARK)) {
		gs_warn("GPUSPY_HOST_ALLOC_MIN is set but libgpuspy-host.so is not preloaded after "
			"libgpuspy.so (gpuspy run adds it); host allocations not recorded");
		return;
	}
	gs_cfg.host_alloc_min = min;
	__atomic_store_n(&host_min, min, __ATOMIC_RELEASE);
}

/* Last at setup: arms the host-allocation hooks. */
GS_MODULE(host, 110, .setup = host_setup, .first_chunk = host_first_chunk, .exiting = host_exiting,
	  .forked = host_forked);
