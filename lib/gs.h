/* SPDX-License-Identifier: MIT */
/*
 * Internal interface of libgpuspy: the per-thread state, the record path
 * used by every hook (gs_begin / gs_end), the real-function table and the
 * helpers the hook families share. Never installed.
 *
 * The rest of the library's interface is a header per module, included
 * where it is used: writer.h (the trace file), stacks.h, gpu_timing.h
 * (CUPTI, CUDA events), symbols.h (real functions, devices, names),
 * phase.h, memmap.h, host_alloc.h; options.h (every GPUSPY_ variable) and
 * module.h (each module's setup, file and fork hooks, which core.c and
 * writer.c call in order without naming them).
 *
 * The hot path of an intercepted call is: gs_begin() (TLS depth check,
 * enabled check, one clock read), the real call, gs_end() (one clock read,
 * the record packed into this thread's chunk, one store-release). No lock,
 * no allocation, no system call.
 */
#ifndef GS_H
#define GS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>

#include "gpuspy/format.h"
#include "options.h"

#define GS_API __attribute__((visibility("default")))
#define GS_LIKELY(x) __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Per-thread state. */
#define GS_LAUNCH_PY 6 /* Python frames a launch keeps (gs_tls.launch_py) */
struct gs_tls {
	/* Line 0: what every wrapped call reads or writes besides the two
	 * records (the struct is cache-line aligned: a nested call touches
	 * this line alone, a recorded one four). */
	unsigned depth;          /* wrapped calls active on this thread */
	int recording;           /* the outermost call is being recorded */
	uint32_t cupti_corr;     /* set by CUPTI's callback in the driver call */
	uint32_t outer_ra;       /* the outermost call's return address (low
				  * 32 bits), for gs_stale */
	int device;              /* cached current device, -1 unknown */
	uint32_t used, cap;      /* bytes used / available after the chunk's header */
	uint32_t nrec;           /* records in the chunk */
	uint32_t gen;            /* file generation the chunk belongs to (gs_g.gen) */
	int device_known;        /* device is this thread's current context's */
	struct gspy_chunk *chunk;
	void *ctx;               /* the context this thread last made current
				  * through gpuspy (cuCtxSetCurrent) */
	uintptr_t outer_sp;      /* the outermost wrapped call's stack, for gs_stale */
	/* Lines 1-3. */
	struct gspy_pack_base base; /* the chunk's last record, as gspy_pack keeps it */
	struct gspy_record rec;  /* the record being built */
	/* Cold. */
	uint64_t claim;          /* claim number of chunk (flight recorder) */
	uint32_t tid;
	uint32_t seq;            /* next chunk number */
	uint32_t device_misses;  /* calls answered -1 from the cache */
	uint32_t stacks_n;       /* stacks unwound by glibc so far (stacks.c) */
	uint32_t launch_n;       /* launches seen, for stack sampling */
	uint64_t launch_next;    /* raw clock: the next launch to get a stack (sampling by time) */
	/* The last launch's Python frames, innermost first (code object,
	 * instruction), kept cheaply in case its kernel faults (stacks.c). */
	uintptr_t launch_py[GS_LAUNCH_PY][2];
	uint64_t launch_start;   /* that launch's start, raw clock */
	uint8_t launch_npy;
	uint8_t site_written;    /* the fault's launch site is in the trace */
	uint8_t host_kept;       /* host allocations of this thread wait in hook_host.c
				  * for its first chunk (made before the file) */
	uint8_t gone;            /* the thread is ending: its chunk was handed on
				  * (writer.c); later calls hand theirs on too */
	uint8_t opening;         /* this thread made the file and starts the modules */
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct gs_tls, base) == 64, "gs_tls's hot fields fill line 0");

/* initial-exec: one %fs-relative access instead of a descriptor call. The
 * block is small enough for glibc's static TLS surplus when the library is
 * dlopen'ed (CUDA_INJECTION64_PATH) rather than preloaded. */
extern __thread struct gs_tls gs_tls __attribute__((tls_model("initial-exec")));

/* Global state (core.c). */
struct gs_global {
	int disabled;        /* GPUSPY_DISABLE or internal failure: pass through; atomic (a handler sets it) */
	int clock;           /* enum gspy_clock */
	uint32_t gen;        /* bumped when the trace file changes (fork) */
	int capturing;       /* stream captures open now, process-wide (hook_graph.c) */
	int cupti;           /* CUPTI activity is collecting */
	int ring;            /* flight recorder: GPUSPY_MODE=ring */
	int cuda_seen;       /* a CUDA context was current on some thread */
	int forked;          /* a fork child of a process that used CUDA: CUDA
			      * and CUPTI are not usable here */
	int paused;          /* gpuspy_pause(): calls pass through unrecorded */
	int events;          /* GPUSPY_CUPTI=events: GPU time from CUDA events */
	int file_open;       /* the trace file is open (gs_writer_open); set by
			      * gs_writer_ready once the mapping is ready:
			      * GS_FILE_STARTING while the modules start
			      * (CUPTI), then GS_FILE_OPEN */
	uint32_t stack_kinds; /* 1 << kind for the kinds that get call stacks */
	const volatile uint64_t *alive; /* 1 in this process; reads 0 in a child
				      * forked without fork handlers (writer.c) */
} __attribute__((aligned(64))); /* what every call reads: one cache line */
_Static_assert(sizeof(struct gs_global) == 64, "gs_global is one cache line");
extern struct gs_global gs_g;
/* The process whose trace file is open: set by the writer when it makes
 * the file; a fork child until it makes its own has its parent's. */
extern pid_t gs_file_pid;
/* The process gpuspy set itself up in: the constructor's, then each fork
 * child's (its fork handlers, or gs_forked_child called by the writer in a
 * raw fork's child). Another pid is a child that shares or copies this
 * memory unseen (vfork, clone): it must leave gpuspy's state alone. */
extern pid_t gs_pid;

/* Configuration (core.c), read once from the environment. */
struct gs_config {
	char dir[512];        /* GPUSPY_DIR */
	uint64_t buffer_bytes; /* GPUSPY_BUFFER_MB */
	int clock;            /* GPUSPY_CLOCK: tsc|mono|auto */
	int quiet;            /* GPUSPY_QUIET */
	uint32_t stacks;      /* GSPY_STACKS_* that are on */
	uint32_t stack_depth; /* GPUSPY_STACK_DEPTH */
	uint32_t stack_launch_every; /* GPUSPY_STACK_LAUNCHES: 1 in N, 0 none */
	uint64_t stack_launch_period_ns;    /* GPUSPY_STACK_LAUNCH_PERIOD, unless the above is set; 0 none */
	uint64_t stack_launch_period_ticks; /* the same in clock units */
	uint64_t stack_min_ns;    /* GPUSPY_STACK_MIN, 0 = every call */
	uint64_t stack_min_ticks; /* the same in the record clock's units (stacks.c) */
	uint64_t wait_stack_min_ns;    /* for waits: GPUSPY_STACK_MIN, or 10 us by default */
	uint64_t wait_stack_min_ticks; /* the same in clock units */
	uint64_t host_alloc_min; /* GPUSPY_HOST_ALLOC_MIN, 0 = off */
};
extern struct gs_config gs_cfg;

/* Reads the options once; cheap after the first call. 1 when they are
 * read, 0 while another call on this thread is reading them (or, after a
 * bounded wait, another thread): the caller passes its call through. */
int gs_init(void);
int gs_once(int *state, uint32_t *tid, void (*fn)(void)); /* see core.c */
void gs_forked_child(void); /* this process is a fork child: start afresh */
/* gpuspy's own message (log.c): a note in the trace, and a line of the
 * log GPUSPY_LOG names (none by default: never the program's stderr
 * unless asked). errno is left as it was. */
void gs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* gs_warn's message from a signal handler: a b c (NULL: none), no
 * formatting, async-signal-safe. */
void gs_warn_raw(const char *a, const char *b, const char *c);
/* Opens the log GPUSPY_LOG names; gs_init calls it once the options are
 * parsed, before its first warning. */
void gs_log_setup(void);
/* Every GPUSPY_ variable the library reads, parsed once by gs_init
 * (options.h): gs_opt[GS_OPT_STACK_DEPTH].u. */
extern struct gs_opt_val gs_opt[GS_OPT_N];
static inline uint64_t gs_optu(enum gs_opt_id i)
{
	return gs_opt[i].u;
}
int gs_start_thread(void *(*fn)(void *), void *arg, const char *name, size_t stack);
uint64_t gs_mono_ns(void);
/* Waits on a futex while *word holds val, until gs_mono_ns() reads
 * until_ns: 0 once it holds another value, -1 at the deadline. The one
 * bounded wait of gpuspy's threads and exit paths; async-signal-safe,
 * errno kept. */
int gs_wait_while(const uint32_t *word, uint32_t val, uint64_t until_ns);

/* FNV-1a of n bytes. */
static inline uint64_t gs_fnv1a(const void *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
	return h;
}

static inline uint64_t gs_now(void)
{
	if (GS_LIKELY(gs_g.clock == GSPY_CLOCK_TSC))
		return __builtin_ia32_rdtsc();
	return gs_mono_ns();
}

/* gpuspy's own locks, each named once next to its definition with
 * GS_FORK_LOCK: the fork handlers (core.c) take them all before fork() so
 * that no thread missing in the child holds one there, and the child
 * starts them afresh. */
#include <pthread.h>
#define GS_FORK_LOCK(id, mutex) \
	__attribute__((section("gs_fork_locks"), used)) static pthread_mutex_t *const gs_fork_lock_##id = &(mutex)

/*
 * Cancellation off around gpuspy's work that holds a lock (or a once
 * state) across a cancellation point (open, read, write, close,
 * fallocate, nanosleep, a driver call that may block): a program thread
 * cancelled there would die holding it, and every later call of the
 * process would wait on it for ever. A cancel that arrives meanwhile
 * stays pending and is acted on at the thread's next cancellation point,
 * as it would have been untraced. Never on the hot path.
 */
static inline int gs_cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void gs_cancel_restore(int old)
{
	int was;
	pthread_setcancelstate(old, &was);
}

/* The record path's rare extras, out of line (record.c), so that this
 * header names no module: a call's stack, CUPTI's correlation and the
 * mark of a call captured into a graph (gs_end, which gs_end_rare commits
 * the record for, with the stack walk's time); the events mode's note of
 * the stream a phase used (gs_begin_on). */
void gs_end_rare(struct gs_tls *t, struct gspy_record *r);
void gs_begin_rare(unsigned api, uint64_t stream);

struct CUDA_MEMCPY3D_st;
void gs_copy_rec_3d(struct gspy_record *r, const struct CUDA_MEMCPY3D_st *p); /* hook_memcpy.c */

/* Writer (writer.c). */
int gs_writer_ready(void);        /* opens the file on first use; 0 = ok */
enum { GS_FILE_CLOSED, GS_FILE_OPEN, GS_FILE_STARTING }; /* gs_g.file_open */
/* The file is open but its modules still start (CUPTI): a call that would
 * launch before CUPTI collects waits for it, as the opening thread does. */
void gs_wait_started(void); /* core.c */

/* The trace file is open (no side effect): read on every call, beside
 * disabled and paused. Acquire: pairs with gs_writer_ready's release, so
 * the mapping is there for whoever sees it open. */
static inline int gs_writer_open(void)
{
	return __atomic_load_n(&gs_g.file_open, __ATOMIC_ACQUIRE);
}

/* Packs r into this thread's chunk (writer.c). One copy for every hook, not
 * inlined into each: the encoder is the largest code on the record path,
 * and a program alternates between hooks (three launch entry points on a
 * PyTorch step), each of which would otherwise bring its own copy into the
 * instruction cache. */
void gs_commit_own(struct gs_tls *t, const struct gspy_record *r, uint64_t own);
/* r, and no time of gpuspy's own after it (format.h's own). */
static inline void gs_commit(struct gs_tls *t, const struct gspy_record *r)
{
	gs_commit_own(t, r, 0);
}

/*
 * Start a wrapped call. Returns the record to fill when this call is the
 * outermost wrapped call on this thread and tracing is on, else NULL. Every
 * gs_begin() is paired with exactly one gs_end().
 */
/*
 * A wrapped call that never returned: a signal handler or a callback that
 * (sig)longjmps out of it leaves the depth raised, and every later call of
 * the thread would look nested and go unrecorded. Each outermost call keeps
 * its wrapper's CFA and the return address stored just below it (x86-64:
 * at CFA - 8, pushed by the call; it stays there while the call is active,
 * whatever the call does). A later call on the same stack (within 16 MiB:
 * a handler on an alternate stack is elsewhere) finds the outermost call
 * gone when it is at or above that CFA, or, below it (where calls really
 * nested in the outermost one are), when that return address is no longer
 * there: the frames made since the jump wrote over it (their own return
 * addresses, saved registers, locals). Residual: a frame that only
 * reserved the word there (an array it never wrote that far) leaves the
 * old address, and its calls still look nested (docs/limitations.md). The
 * address is read only while the thread's own earlier call made it a live
 * stack word, on the stack the current call runs on.
 */
#define GS_SAME_STACK (16u << 20)
static inline uint32_t gs_ra_at(uintptr_t cfa)
{
	return (uint32_t)*(const volatile uintptr_t *)(cfa - sizeof(uintptr_t));
}

static inline int gs_stale(const struct gs_tls *t, uintptr_t cfa)
{
	uintptr_t up = cfa - t->outer_sp; /* wraps when cfa is below */
	if (up < GS_SAME_STACK)
		return 1;
	return -up < GS_SAME_STACK && gs_ra_at(t->outer_sp) != t->outer_ra;
}

/* The thread is inside a wrapped call (one that is still there): the
 * caller's call is nested in it. A stale depth is dropped here. */
static inline __attribute__((always_inline)) int gs_nested(uintptr_t cfa)
{
	struct gs_tls *t = &gs_tls;
	if (t->depth == 0)
		return 0;
	if (GS_UNLIKELY(gs_stale(t, cfa))) {
		t->depth = 0;
		t->recording = 0;
		return 0;
	}
	return 1;
}

/* gpuspy's own work that may call wrapped functions (allocations, loader
 * calls): they pass through as nested calls. */
static inline void gs_hold(void)
{
	struct gs_tls *t = &gs_tls;
	if (t->depth++ == 0) {
		t->outer_sp = (uintptr_t)__builtin_dwarf_cfa();
		t->outer_ra = gs_ra_at(t->outer_sp);
	}
}

static inline void gs_release(void)
{
	if (GS_LIKELY(gs_tls.depth))
		gs_tls.depth--;
}

static inline __attribute__((always_inline)) struct gspy_record *gs_begin_(unsigned api, unsigned kind,
									    int even_paused)
{
	struct gs_tls *t = &gs_tls;
	uintptr_t sp = (uintptr_t)__builtin_dwarf_cfa();
	if (gs_nested(sp)) {
		t->depth++;
		return NULL;
	}
	t->depth = 1;
	t->outer_sp = sp;
	t->outer_ra = gs_ra_at(sp);
	if (GS_UNLIKELY(__atomic_load_n(&gs_g.disabled, __ATOMIC_RELAXED)))
		return NULL;
	if (GS_UNLIKELY(__atomic_load_n(&gs_g.paused, __ATOMIC_RELAXED)) && !even_paused) {
		/* Paused from the start too (GPUSPY_START=paused): the first
		 * call makes the file, where `gpuspy start` finds the process. */
		if (GS_UNLIKELY(!gs_writer_open()))
			gs_writer_ready();
		return NULL;
	}
	int open = gs_writer_open();
	if (GS_UNLIKELY(open != GS_FILE_OPEN)) {
		if (!open && gs_writer_ready() != 0)
			return NULL;
		gs_wait_started();
	}
	struct gspy_record *r = &t->rec;
	memset(r, 0, sizeof(*r));
	r->api = (uint16_t)api;
	r->kind = (uint8_t)kind;
	r->device = -1;
	t->recording = 1;
	if (GS_UNLIKELY(gs_g.cupti))
		t->cupti_corr = 0;
	r->start = gs_now();
	return r;
}

static inline __attribute__((always_inline)) struct gspy_record *gs_begin(unsigned api, unsigned kind)
{
	return gs_begin_(api, kind, 0);
}

/* gs_begin for a launch, copy or memset about to go on `stream` (the
 * events mode marks the stream as used by the current phase). Inlined like
 * gs_begin: the call's CFA must be the wrapper's, whose frame lasts as
 * long as the call (gs_stale reads its return address). */
static inline __attribute__((always_inline)) struct gspy_record *gs_begin_on(unsigned api, unsigned kind, uint64_t stream)
{
	struct gspy_record *r = gs_begin(api, kind);
	if (GS_UNLIKELY(gs_g.events) && r)
		gs_begin_rare(api, stream);
	return r;
}

/* Finish a wrapped call; r is what gs_begin returned. The fast path makes
 * no call that could touch errno; gs_commit's slow path keeps it. */
static inline void gs_end(struct gspy_record *r, int result)
{
	struct gs_tls *t = &gs_tls;
	if (r) {
		r->end = gs_now();
		r->result = result;
		t->recording = 0;
		if (GS_UNLIKELY((gs_g.stack_kinds & (1u << r->kind)) || t->cupti_corr || result ||
				(__atomic_load_n(&gs_g.capturing, __ATOMIC_RELAXED) && (r->flags & GSPY_FLAG_ASYNC))))
			gs_end_rare(t, r);
		else
			gs_commit(t, r);
	}
	if (GS_LIKELY(t->depth))
		t->depth--;
}

/* The record of the outermost call when this one is nested in it. */
static inline struct gspy_record *gs_outer(unsigned kind)
{
	struct gs_tls *t = &gs_tls;
	if (t->depth > 1 && t->recording && t->rec.kind == kind)
		return &t->rec;
	return NULL;
}

/* Real functions (symbols.c). */
extern void *gs_real_tab[GSPY_API_COUNT];
void *gs_real_resolve(unsigned api);
static inline void *gs_real(unsigned api)
{
	void *p = __atomic_load_n(&gs_real_tab[api], __ATOMIC_RELAXED);
	return GS_LIKELY(p != NULL) ? p : gs_real_resolve(api);
}
#define GS_REAL(sym) ((__typeof__(&sym))gs_real(GSPY_API_##sym))

#endif /* GS_H */
