/* SPDX-License-Identifier: MIT */
/*
 * Call stacks: where an allocation, a pageable copy or a wait came from
 * (with GPUSPY_STACKS=all, every copy and memset too).
 *
 * Native frames come from libunwind's unw_backtrace with its per-thread
 * cache, after a thread's first FIRST_STACKS stacks, which glibc's
 * backtrace() takes (see native_frames). libunwind is the local-only unwinder, the _ULx86_64_* symbols that a program
 * compiled with UNW_LOCAL_ONLY binds to (caching policy set on
 * _ULx86_64_local_addr_space). libunwind is dlopen'ed RTLD_LOCAL, never linked:
 * libunwind.so exports `backtrace` and `_Unwind_Backtrace`, and a linked
 * copy in the global scope could take those over from libc and libgcc for
 * the whole process. Without libunwind, glibc's backtrace() is used.
 *
 * Each distinct stack is stored once in the trace's string table (a binary
 * entry, see format.h) and records carry its id. The loaded objects a stack
 * touches are stored as module entries, so that the reader can symbolize
 * offline; nothing is symbolized here.
 *
 * Python frames (opt-in) are taken only when the calling thread holds the
 * GIL, through the stable C API, looked up in the process (no link to
 * libpython): no frame walking without the GIL, and nothing at all in a
 * process that is not Python.
 *
 * Recursion: stacks are taken inside gs_end(), with this thread's hook depth
 * still raised, so that the allocations libunwind, the loader and Python
 * make meanwhile pass through the host-allocation hooks unrecorded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gs.h"
#include "pyframes.h"
#include "stacks.h"
#include "symbols.h"
#include "writer.h"
#include "module.h"

typedef int (*backtrace_fn)(void **, int);
static backtrace_fn grab; /* libunwind's unw_backtrace, or glibc's backtrace */

/*
 * unw_backtrace's first call on a thread fills a 256 KiB trace cache for
 * that thread: 64 page faults, ~750 us on the development VM, against
 * ~0.3 us a stack after it; glibc's backtrace() costs ~1.8 us a stack from
 * the first (bench/stack_threads.sh). So a thread's first FIRST_STACKS
 * stacks come from glibc: a short-lived thread (a DataLoader worker's, a
 * thread pool's) never pays for the cache, and a long-lived one pays it
 * once, after glibc cost it about as much (ski rental). Both return the
 * same return addresses, so a site keeps one stack id.
 */
#define FIRST_STACKS 256

/*
 * The unwinder's own locks (libunwind's caches) are not gpuspy's: a fork
 * while another thread is inside unw_backtrace would leave one held for
 * ever in the child, whose first stack then hangs (1 child in ~3,600 of
 * tests/hostile/prog_fork_busy.c under load). So fork waits, a bounded
 * time, for the unwinds in progress, and no new one starts meanwhile (the
 * call gets no stack). Dekker-style: each side writes its own word, then
 * reads the other's, both sequentially consistent.
 */
static int unwinding, forking;

static void stacks_fork_prepare(void)
{
	__atomic_store_n(&forking, 1, __ATOMIC_SEQ_CST);
	for (int t = 0; t < 2000 && __atomic_load_n(&unwinding, __ATOMIC_SEQ_CST); t++) {
		struct timespec ts = { 0, 100000 }; /* at most ~200 ms */
		nanosleep(&ts, NULL);
	}
}

static void stacks_fork_done(void)
{
	__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
}

static inline int unwind_begin(void)
{
	__atomic_add_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&forking, __ATOMIC_SEQ_CST))
		return 1;
	__atomic_sub_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static inline void unwind_end(void)
{
	__atomic_sub_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
}
static uintptr_t self_lo, self_hi; /* our own code: frames skipped */

/* ---- distinct stacks ------------------------------------------------------ */

#define STK_CAP (1u << 16)
static struct {
	uint64_t hash; /* 0 = free */
	uint32_t id;   /* 0 while the entry is being written */
} tab[STK_CAP];

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint32_t store(const void *entry, size_t len);

/* The id of a stack by its hash: interned (with its modules) only the first
 * time, so a repeated stack costs one table probe. */
static uint32_t stack_id(uint64_t h, const void *entry, size_t len)
{
	h |= 1;
	for (uint32_t i = 0, k = (uint32_t)h & (STK_CAP - 1); i < 64; i++, k = (k + 1) & (STK_CAP - 1)) {
		uint64_t cur = __atomic_load_n(&tab[k].hash, __ATOMIC_ACQUIRE);
		if (cur == 0) {
			if (!__atomic_compare_exchange_n(&tab[k].hash, &cur, h, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE)) {
				if (cur != h)
					continue;
			} else {
				uint32_t id = store(entry, len);
				__atomic_store_n(&tab[k].id, id, __ATOMIC_RELEASE);
				return id;
			}
		}
		if (cur == h) {
			uint32_t id = __atomic_load_n(&tab[k].id, __ATOMIC_ACQUIRE);
			/* Another thread is still writing it: a second copy is harmless. */
			return id ? id : store(entry, len);
		}
	}
	return store(entry, len); /* table full: stored, not shared */
}

/* ---- modules ---------------------------------------------------------------- */

#define MOD_CAP 2048
static struct {
	pthread_mutex_t lock;
	uint32_t n;
	uint64_t start[MOD_CAP], end[MOD_CAP];
	unsigned long long adds; /* dlpi_adds when last scanned */
} mods = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(modules, mods.lock);

static int mod_known(uint64_t a)
{
	uint32_t n = __atomic_load_n(&mods.n, __ATOMIC_ACQUIRE);
	for (uint32_t i = n; i-- > 0;)
		if (a >= mods.start[i] && a < mods.end[i])
			return 1;
	return 0;
}

static int exec_range(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_LOAD || !(p->p_flags & PF_X))
			continue;
		uint64_t s = info->dlpi_addr + p->p_vaddr, e = s + p->p_memsz;
		if (s < *lo)
			*lo = s;
		if (e > *hi)
			*hi = e;
	}
	return *hi > *lo;
}

/* The object's GNU build id, from its loaded PT_NOTE segments. */
static void build_id(const struct dl_phdr_info *info, struct gspy_module_entry *m)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_NOTE)
			continue;
		const unsigned char *n = (const unsigned char *)(info->dlpi_addr + p->p_vaddr);
		const unsigned char *end = n + p->p_memsz;
		while (n + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)n;
			const unsigned char *name = n + sizeof(*h);
			const unsigned char *desc = name + ((h->n_namesz + 3) & ~3u);
			if (desc + h->n_descsz > end)
				break;
			if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    h->n_descsz <= sizeof(m->build_id)) {
				memcpy(m->build_id, desc, h->n_descsz);
				m->build_id_len = (uint8_t)h->n_descsz;
				return;
			}
			n = desc + ((h->n_descsz + 3) & ~3u);
		}
	}
}

/* Called with the loader's lock held: records every object not yet known.
 * Our lock is never held while waiting for the loader's. */
static int mod_scan(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uint64_t lo, hi;
	if (!exec_range(info, &lo, &hi) || mod_known(lo))
		return 0;
	char path[4096 + sizeof(struct gspy_module_entry)];
	struct gspy_module_entry *m = (void *)path;
	memset(m, 0, sizeof(*m));
	m->type = GSPY_ENTRY_MODULE;
	m->bias = info->dlpi_addr;
	m->start = lo;
	m->end = hi;
	build_id(info, m);
	char *name = path + sizeof(*m);
	size_t cap = sizeof(path) - sizeof(*m) - 1, n = 0;
	if (info->dlpi_name && info->dlpi_name[0]) {
		n = strnlen(info->dlpi_name, cap);
		memcpy(name, info->dlpi_name, n);
	} else { /* the main program */
		ssize_t k = readlink("/proc/self/exe", name, cap);
		n = k > 0 ? (size_t)k : 0;
	}
	name[n] = 0;
	pthread_mutex_lock(&mods.lock);
	if (!mod_known(lo) && mods.n < MOD_CAP && gs_intern_bytes(path, sizeof(*m) + n)) {
		mods.start[mods.n] = lo;
		mods.end[mods.n] = hi;
		__atomic_store_n(&mods.n, mods.n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&mods.lock);
	return 0;
}

static int adds_of(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
		*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* An address outside every known module: rescan, unless nothing was loaded
 * since the last scan (JIT code and the like stay unknown cheaply). */
static void mod_miss(void)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(adds_of, &adds);
	if (adds && adds == __atomic_load_n(&mods.adds, __ATOMIC_RELAXED))
		return;
	dl_iterate_phdr(mod_scan, NULL);
	__atomic_store_n(&mods.adds, adds, __ATOMIC_RELAXED);
}

/* A new stack: the modules its frames lie in are recorded first, then the
 * stack itself. */
static uint32_t store(const void *entry, size_t len)
{
	struct gspy_stack_entry h;
	memcpy(&h, entry, sizeof(h));
	const unsigned char *pcs = (const unsigned char *)entry + sizeof(h);
	for (unsigned i = 0; i < h.native; i++) {
		uint64_t pc;
		memcpy(&pc, pcs + (size_t)i * 8, 8);
		if (!mod_known(pc))
			mod_miss();
	}
	return gs_intern_bytes(entry, len);
}

/* ---- Python ------------------------------------------------------------------ */

static struct {
	int (*is_init)(void);
	void *(*get_frame)(void);
	void *(*frame_code)(void *);
	void *(*frame_back)(void *);
	int (*frame_line)(void *);
	void *(*getattr)(void *, const char *);
	const char *(*utf8)(void *);
	void (*decref)(void *);
	void (*err_clear)(void);
} py;
static int py_state; /* 0 not looked up, 1 usable, -1 not Python */

#define CODE_CAP 4096
static struct { void *code; uint32_t id; } codes[CODE_CAP]; /* under the GIL */

static void py_lookup(void)
{
	void *h = RTLD_DEFAULT;
#define PY(field, name) py.field = (__typeof__(py.field))gs_real_dlsym(h, name)
	PY(is_init, "Py_IsInitialized");
	PY(get_frame, "PyEval_GetFrame");
	PY(frame_code, "PyFrame_GetCode");
	PY(frame_back, "PyFrame_GetBack");
	PY(frame_line, "PyFrame_GetLineNumber");
	PY(getattr, "PyObject_GetAttrString");
	PY(utf8, "PyUnicode_AsUTF8");
	PY(decref, "Py_DecRef");
	PY(err_clear, "PyErr_Clear");
#undef PY
	int ok = py.is_init && py.get_frame && py.frame_code && py.frame_back &&
		 py.frame_line && py.getattr && py.utf8 && py.decref && py.err_clear;
	__atomic_store_n(&py_state, ok ? 1 : -1, __ATOMIC_RELEASE);
}

static const char *py_attr(void *o, const char *name, void **ref)
{
	*ref = py.getattr(o, name);
	if (!*ref) {
		py.err_clear();
		return NULL;
	}
	const char *s = py.utf8(*ref);
	if (!s)
		py.err_clear();
	return s;
}

/* "function (file)" of a code object, interned once. */
static uint32_t code_id(void *code)
{
	uint32_t k = (uint32_t)(((uintptr_t)code >> 4) * 2654435761u) & (CODE_CAP - 1);
	for (uint32_t i = 0; i < 8; i++, k = (k + 1) & (CODE_CAP - 1))
		if (codes[k].code == code)
			return codes[k].id;
		else if (!codes[k].code)
			break;
	void *nref = NULL, *fref = NULL;
	const char *name = py_attr(code, "co_qualname", &nref);
	if (!name) {
		if (nref)
			py.decref(nref);
		name = py_attr(code, "co_name", &nref);
	}
	const char *file = py_attr(code, "co_filename", &fref);
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s (%s)", name ? name : "?", file ? file : "?");
	if (nref)
		py.decref(nref);
	if (fref)
		py.decref(fref);
	uint32_t id = gs_intern(buf);
	codes[k].code = code;
	codes[k].id = id;
	return id;
}

/* Python frames of this thread, innermost first, as (code id, line). */
static unsigned py_frames(uint32_t (*out)[2], unsigned max)
{
	/* Looked up by the constructor: a dlsym here could wait on the
	 * loader's lock, held by a thread that waits on this one. */
	int st = __atomic_load_n(&py_state, __ATOMIC_ACQUIRE);
	if (st <= 0 || !py.is_init())
		return 0;
	if (!gs_py_holds_gil()) /* a binding released it: read the frames raw */
		return gs_pyframes_raw(out, max);
	gpuspy_python_frames_learn(); /* once, unless the start-up hook did */
	/* Read raw too once learned: it makes no object (see gs_py_gc_pause). */
	if (gs_pyframes_on())
		return gs_pyframes_raw(out, max);
	int gc = gs_py_gc_pause();
	unsigned n = 0;
	void *f = py.get_frame(); /* borrowed */
	int owned = 0;
	while (f && n < max) {
		void *code = py.frame_code(f); /* new reference */
		if (code) {
			out[n][0] = code_id(code);
			out[n][1] = (uint32_t)py.frame_line(f);
			py.decref(code);
			n++;
		}
		void *back = py.frame_back(f); /* new reference */
		if (owned)
			py.decref(f);
		f = back;
		owned = 1;
	}
	if (f && owned)
		py.decref(f);
	gs_py_gc_resume(gc);
	return n;
}

/* ---- capture ------------------------------------------------------------------- */

static void stack_note(struct gspy_record *r);

/* Takes r's stack; returns the time it took, raw clock. The traced call's
 * errno survives whatever the unwinder and the loader do. Inlined: it adds
 * no frame of gpuspy's to the walk. */
static inline __attribute__((always_inline)) uint64_t take(struct gspy_record *r)
{
	int e = errno;
	stack_note(r);
	/* Timed from the call's end (gs_end read the clock just before): the
	 * record carries it (the replay takes it off the gap after the call:
	 * one walk takes a microsecond, a cold one milliseconds), the header
	 * counts it (the report's own time). */
	uint64_t now = gs_now(), own = now > r->end ? now - r->end : 1;
	gs_writer_stack_cost(own);
	errno = e;
	return own;
}

uint64_t gs_stack_note(struct gspy_record *r)
{
	struct gs_tls *t = &gs_tls;
	/* A launch: one in N, or by time (a stack costs the thread at most
	 * one walk a period whatever its launch rate; the next is set below,
	 * once this one is taken). */
	uint64_t p = gs_cfg.stack_launch_period_ticks;
	int timed = r->kind == GSPY_KIND_launch && !gs_cfg.stack_launch_every;
	if (r->kind == GSPY_KIND_launch && !timed && t->launch_n++ % gs_cfg.stack_launch_every)
		return 0;
	if (timed && (!p || r->start < t->launch_next))
		return 0;
	/* By default only what the report's call sites use keeps a stack:
	 * allocations, frees, pageable copies and waits. Memsets (which only
	 * GPUSPY_STACKS=all puts in gs_g.stack_kinds) and other copies need
	 * GPUSPY_STACKS=all: on a launch-bound PyTorch loop they are two
	 * thirds of the stacks. A stream's wait on an event is the GPU's:
	 * the host does not stop, so it is no wait site either (XLA makes one
	 * every step, at ~12 us a stack through its deep C++ frames). */
	int other = r->kind == GSPY_KIND_memset || (r->kind == GSPY_KIND_copy && r->mem != GSPY_MEM_pageable) ||
		    (r->kind == GSPY_KIND_sync && (r->flags & GSPY_FLAG_ASYNC));
	if (other && !(gs_cfg.stacks & GSPY_STACKS_ALL))
		return 0;
	/* GPUSPY_STACK_MIN, as nsys's --cudabacktrace thresholds: a short
	 * call keeps no stack, unless it allocates, frees or copies pageable
	 * memory (the report's allocation and pageable copy sites stay whole).
	 * A host wait has its own, 10 us by default: one that returned sooner
	 * found the GPU done or nearly, which costs the step nothing a site
	 * could fix, while a stack through a framework's C++ costs about as
	 * much as the wait (XLA syncs two or three times a step, each under
	 * 1 us). The report counts the waits left without a site. */
	int wait = r->kind == GSPY_KIND_sync && !other;
	uint64_t min = wait ? gs_cfg.wait_stack_min_ticks
		       : other || r->kind == GSPY_KIND_launch ? gs_cfg.stack_min_ticks : 0;
	if (r->end - r->start < min)
		return 0;
	if (timed)
		/* half to one and a half periods on, from the clock's low bits,
		 * so that a step whose period divides it is not sampled at one
		 * launch of its own */
		t->launch_next = r->start + p / 2 + (r->start * 0x9E3779B97F4A7C15ull >> 20) % p;
	return take(r);
}

/* A sticky error fails every call after the fault, quickly: the stack of
 * each, however short, is where the fault surfaced (the report names the
 * first). The first FAULT_STACKS only: a program that keeps calling after
 * the fault (polling, retrying) does not pay a walk each time. Once stacks
 * are on (gs_g.stack_kinds is set last). */
#define FAULT_STACKS 16
uint64_t gs_stack_fault(struct gspy_record *r)
{
	static unsigned taken;
	if (__atomic_load_n(&gs_g.stack_kinds, __ATOMIC_ACQUIRE) &&
	    __atomic_fetch_add(&taken, 1, __ATOMIC_RELAXED) < FAULT_STACKS)
		return take(r);
	if (__atomic_load_n(&gs_g.stack_kinds, __ATOMIC_ACQUIRE) & (1u << r->kind))
		return gs_stack_note(r); /* past them: as any call of its kind */
	return 0;
}

/* Frames to walk beyond the depth kept: gpuspy's own, which are dropped
 * (stack_note, gs_stack_note or gs_stack_fault, gs_end_rare and the hook:
 * 4, plus one to spare; a stack walked through more keeps fewer of its
 * outermost frames, never wrong ones). Every frame walked costs: PyTorch's
 * stacks are deeper than the cap. */
#define OWN_FRAMES 5

struct stack_buf {
	struct gspy_stack_entry h;
	uint64_t pc[GSPY_STACK_MAX];
	uint32_t py[GSPY_STACK_MAX][2];
};

/* The calling thread's native frames, gpuspy's own dropped: at most max
 * PCs into pc, innermost first; returns how many. Inlined, so that it adds
 * no frame of its own to what it walks. */
static inline __attribute__((always_inline)) unsigned native_frames(uint64_t *pc, unsigned max)
{
	void *buf[GSPY_STACK_MAX + OWN_FRAMES];
	int n = 0;
	if ((gs_cfg.stacks & GSPY_STACKS_NATIVE) && grab && unwind_begin()) {
		struct gs_tls *t = &gs_tls;
		backtrace_fn f = grab;
		if (f != backtrace && t->stacks_n < FIRST_STACKS) {
			t->stacks_n++;
			f = backtrace;
		}
		n = f(buf, (int)max + OWN_FRAMES);
		unwind_end();
	}
	/* gpuspy's own frames go, and a frame above them that is not the
	 * program's either (a sanitizer's backtrace interceptor): the stack
	 * starts after the last of gpuspy's among the first few. */
	unsigned k = 0, i = 0;
	for (unsigned j = 0; j < (unsigned)n && j < OWN_FRAMES + 1; j++)
		if ((uintptr_t)buf[j] >= self_lo && (uintptr_t)buf[j] < self_hi)
			i = j + 1;
	for (; i < (unsigned)n && k < max; i++)
		pc[k++] = (uint64_t)(uintptr_t)buf[i];
	return k;
}

/* The id of k native frames in e->pc followed by np Python (code, line)
 * pairs packed right after them; 0 for an empty stack. */
static uint32_t entry_id(struct stack_buf *e, unsigned k, unsigned np)
{
	if (!k && !np)
		return 0;
	uint64_t h = 0;
	for (unsigned i = 0; i < k; i++)
		h = mix(h, e->pc[i]);
	const uint32_t(*pairs)[2] = (const uint32_t(*)[2])(void *)&e->pc[k];
	for (unsigned j = 0; j < np; j++)
		h = mix(h, (uint64_t)pairs[j][0] << 32 | pairs[j][1]);
	memset(&e->h, 0, sizeof(e->h));
	e->h.type = GSPY_ENTRY_STACK;
	e->h.native = (uint8_t)k;
	e->h.python = (uint8_t)np;
	h = mix(h, (uint64_t)k << 8 | np);
	return stack_id(h, e, sizeof(e->h) + k * 8 + np * 8);
}

static void stack_note(struct gspy_record *r)
{
	struct stack_buf e;
	unsigned depth = gs_cfg.stack_depth;
	unsigned k = native_frames(e.pc, depth);
	unsigned np = 0;
	if (gs_cfg.stacks & GSPY_STACKS_PYTHON) {
		np = py_frames(e.py, depth);
		/* Pack the Python pairs right after the native frames (e.py
		 * directly follows e.pc, so this stays inside e). */
		memmove(&e.pc[k], e.py, np * sizeof(e.py[0]));
	}
	r->stack_id = entry_id(&e, k, np);
}

/* Not counted in the header's stacks_taken/stacks_time: there is no file
 * yet to count them in. */
unsigned gs_stack_pcs(uint64_t *pc)
{
	if (!(gs_g.stack_kinds & (1u << GSPY_KIND_alloc)))
		return 0;
	int e = errno;
	unsigned k = native_frames(pc, gs_cfg.stack_depth);
	errno = e;
	return k;
}

void gs_stack_launch_where(struct gs_tls *t, const struct gspy_record *r)
{
	t->launch_npy = (uint8_t)gs_pyframes_where(t->launch_py, GS_LAUNCH_PY);
	t->launch_start = r->start;
}

void gs_stack_fault_site(struct gs_tls *t)
{
	if (t->site_written || !t->launch_npy)
		return;
	t->site_written = 1;
	int e = errno;
	struct stack_buf b;
	uint32_t(*pairs)[2] = (uint32_t(*)[2])(void *)&b.pc[0]; /* no native frames: right after the header */
	unsigned n = gs_pyframes_lines((const uintptr_t(*)[2])t->launch_py, t->launch_npy, pairs);
	uint32_t id = n ? entry_id(&b, 0, n) : 0, name = id ? gs_intern(GSPY_MARK_FAULT_SITE) : 0;
	if (name) {
		struct gspy_record m;
		memset(&m, 0, sizeof(m));
		m.kind = GSPY_KIND_mark;
		m.api = GSPY_API_gpuspy_mark;
		m.device = -1;
		m.start = m.end = t->launch_start;
		m.name_id = name;
		m.stack_id = id;
		gs_commit(t, &m);
	}
	errno = e;
}

uint32_t gs_stack_id_of(const uint64_t *pc, unsigned n)
{
	struct stack_buf e;
	if (n > GSPY_STACK_MAX)
		n = GSPY_STACK_MAX;
	memcpy(e.pc, pc, n * sizeof(*pc));
	int er = errno;
	uint32_t id = entry_id(&e, n, 0);
	errno = er;
	return id;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	uint64_t lo, hi;
	if (exec_range(info, &lo, &hi) && me >= lo && me < hi) {
		self_lo = lo;
		self_hi = hi;
		return 1;
	}
	return 0;
}

static int stack_on, stack_all, stack_glibc; /* the options, for gs_stacks_load */

/* GPUSPY_STACK_MIN's default for waits (nsys's --cudabacktrace default is
 * 80 us for every kind; waits this short are the GPU already done). */
#define WAIT_STACK_MIN_NS 10000ull

/* GPUSPY_STACKS, GPUSPY_STACK_DEPTH, GPUSPY_STACK_LAUNCHES, GPUSPY_STACK_MIN,
 * GPUSPY_PYTHON_FRAMES. Called once from gs_init. */
static void stacks_setup(void)
{
	uint64_t w = gs_optu(GS_OPT_STACKS); /* 0: off; bits on|all|glibc */
	gs_cfg.stack_depth = (unsigned)gs_optu(GS_OPT_STACK_DEPTH);
	gs_cfg.stack_launch_every = (unsigned)gs_optu(GS_OPT_STACK_LAUNCHES);
	/* GPUSPY_STACK_LAUNCHES set, 0 too, replaces sampling by time. */
	int every = gs_opt[GS_OPT_STACK_LAUNCHES].set && !gs_opt[GS_OPT_STACK_LAUNCHES].bad;
	gs_cfg.stack_launch_period_ns = every ? 0 : gs_optu(GS_OPT_STACK_LAUNCH_PERIOD);
	gs_cfg.stack_min_ns = gs_optu(GS_OPT_STACK_MIN);
	/* Unset, waits have their own threshold; set, it is every kind's. */
	int set = gs_opt[GS_OPT_STACK_MIN].set && !gs_opt[GS_OPT_STACK_MIN].bad;
	gs_cfg.wait_stack_min_ns = set ? gs_cfg.stack_min_ns : WAIT_STACK_MIN_NS;
	int python = (int)gs_optu(GS_OPT_PYTHON_FRAMES);
	stack_on = w != 0;
	stack_all = (w & 2) != 0;
	stack_glibc = (w & 4) != 0;
	if (stack_on) /* what the file's header says; the kinds follow in gs_stacks_load */
		gs_cfg.stacks = GSPY_STACKS_NATIVE | (python ? GSPY_STACKS_PYTHON : 0) | (stack_all ? GSPY_STACKS_ALL : 0);
}

/* Fills the free descriptors under 100 with copies of one (held[], the
 * count returned), for a moment in which what opens next lands at 100 or
 * above. Only in a process of one thread (the constructor's, at start-up:
 * another thread would find no descriptor free, or have one of its own
 * closed by the release after it dup2()ed onto a held number) and a limit
 * that leaves room; else nothing is held. errno is kept. */
static int hold_low_fds(int held[100])
{
	int n = 0, e = errno;
	struct rlimit rl;
	char line[64];
	int threads = 0;
	int sfd = open("/proc/self/status", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	FILE *f = sfd >= 0 ? fdopen(sfd, "r") : NULL;
	if (!f && sfd >= 0)
		close(sfd);
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &threads) == 1)
			break;
	if (f)
		fclose(f);
	int fd = -1;
	if (threads == 1 && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= 1024)
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	while (fd >= 0 && fd < 100 && n < 100) {
		held[n++] = fd;
		fd = fcntl(held[0], F_DUPFD_CLOEXEC, 0);
	}
	if (fd >= 100)
		close(fd);
	errno = e;
	return n;
}

/* Loads the unwinder and turns stacks on: from the constructor only (a
 * dlopen in a hook could wait on the loader lock held by a thread that
 * waits on the hooked one). Calls made before it carry no stack. */
static void stacks_load(void)
{
	if (!stack_on)
		return;
	gs_hold(); /* what the loader calls (malloc) is not the program's */
	/* A dlopen here may call malloc.
	 * GPUSPY_STACKS=glibc skips libunwind (whose per-thread trace cache
	 * has a thread-exit destructor that ThreadSanitizer's runtime cannot
	 * take). */
	void *h = stack_glibc ? NULL : dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (h) {
		grab = (backtrace_fn)gs_real_dlsym(h, "unw_backtrace");
		int (*policy)(void *, int) = (__typeof__(policy))gs_real_dlsym(h, "_ULx86_64_set_caching_policy");
		void **as = (void **)gs_real_dlsym(h, "_ULx86_64_local_addr_space");
		/* libunwind's first call makes the pipe it keeps for the
		 * process's life (it checks an address by write()ing it there),
		 * at the lowest free numbers: 3 and 4, which a program expects
		 * free, may close, and may open its own files at, which
		 * libunwind would then read and write. The numbers under 100 are
		 * held for that moment, so that the pipe lands above them. */
		int held[100], n = hold_low_fds(held);
		if (policy && as)
			policy(*as, 2 /* UNW_CACHE_PER_THREAD */);
		else if (grab)
			grab((void *[4]){ 0 }, 4);
		while (n > 0)
			close(held[--n]);
	}
	if (!grab) {
		grab = backtrace;
		if (!stack_glibc)
			gs_warn("libunwind.so.8 not found; call stacks from glibc's backtrace()");
	}
	void *warm[4];
	backtrace(warm, 4); /* loads libgcc_s now rather than inside a hook */
	dl_iterate_phdr(find_self, (void *)(uintptr_t)gs_stack_note);
	if (gs_cfg.stacks & GSPY_STACKS_PYTHON) { /* the interpreter's functions, if this is Python */
		py_lookup();
		gs_pyframes_lookup();
	}
	int all = stack_all, launches = gs_cfg.stack_launch_every || gs_cfg.stack_launch_period_ns;
	/* Last: the hooks take stacks once they see their kind here. */
	__atomic_store_n(&gs_g.stack_kinds,
			 1u << GSPY_KIND_alloc | 1u << GSPY_KIND_free | 1u << GSPY_KIND_copy |
				 (all ? 1u << GSPY_KIND_memset : 0) | 1u << GSPY_KIND_sync | 1u << GSPY_KIND_map |
				 1u << GSPY_KIND_unmap | (launches ? 1u << GSPY_KIND_launch : 0),
			 __ATOMIC_RELEASE);
	gs_release();
}

static uint64_t ticks_of(uint64_t ns, const struct gspy_header *h)
{
	double ticks = (double)ns * h->tsc_hz / 1e9;
	return ticks < 1.8e19 ? (uint64_t)ticks : UINT64_MAX;
}

static void stacks_clock(struct gspy_header *h)
{
	gs_cfg.stack_min_ticks = ticks_of(gs_cfg.stack_min_ns, h);
	gs_cfg.wait_stack_min_ticks = ticks_of(gs_cfg.wait_stack_min_ns, h);
	gs_cfg.stack_launch_period_ticks = ticks_of(gs_cfg.stack_launch_period_ns, h);
}

/* The child of a fork writes a new file: every id is stale. */
static void stacks_forked(void)
{
	__atomic_store_n(&unwinding, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
	memset(tab, 0, sizeof(tab));
	mods.n = 0;
	mods.adds = 0;
	pthread_mutex_init(&mods.lock, NULL);
	memset(codes, 0, sizeof(codes));
}

GS_MODULE(stacks, 70, .setup = stacks_setup, .load = stacks_load, .opened = stacks_clock,
	  .fork_prepare = stacks_fork_prepare, .fork_parent = stacks_fork_done, .forked = stacks_forked);
