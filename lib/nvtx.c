/* SPDX-License-Identifier: MIT */
/*
 * NVTX ranges as phases. libgpuspy is an NVTX injection library: when it is
 * preloaded it sets NVTX_INJECTION64_PATH to itself (only if unset), and
 * every NVTX instance in the process (each shared library that uses the
 * header-only NVTX v3 initialises separately) calls InitializeInjectionNvtx2
 * on its first NVTX call; gpuspy then fills that instance's CORE and CORE2
 * callback tables. Push/pop and start/end ranges become phase_begin /
 * phase_end records, marks become marks.
 *
 * NVTX ranges nest per thread (and per domain); gpuspy's phases are
 * process-wide, so each thread's NVTX stack remembers which of its ranges
 * were recorded and closes exactly those, by name.
 *
 * Filters: GPUSPY_NVTX=0 (off), GPUSPY_NVTX_DOMAINS=a,b ("default" is the
 * default domain), GPUSPY_NVTX_RANGES=glob,glob (range names),
 * GPUSPY_NVTX_NESTING=innermost (every range, the default) | outermost
 * (only ranges opened at nesting depth 0 of their thread),
 * GPUSPY_NVTX_LIBRARY=outermost (the default: a library's range opened
 * inside another library range of the thread is not recorded, as XLA's
 * per-thunk ranges inside the module it runs) | all.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "libranges.h"

#include "gs.h"
#include "phase.h"
#include "symbols.h"
#include "module.h"

struct nvtxDomainRegistration_st {
	char name[64];
	int accepted;
};

struct nvtxStringRegistration_st {
	char s[128];
	int lib; /* a library's range name (gspy_library_range) */
	/* Its phase name id in this process's trace file, found at its first
	 * range: (file generation << 32) | id, 0 until then. */
	uint64_t phase;
};

/*
 * A registered string's handle is its entry's address with bit 0 set when
 * it names a library's range: XLA's twenty thunk ranges a step are told
 * apart from a user's without reading their entries, each in a cache line
 * of its own. Handles are opaque to the program (NVTX's are NULL without a
 * tool); entries are at least 8-byte aligned.
 */
static inline nvtxStringHandle_t handle_of(struct nvtxStringRegistration_st *e)
{
	return (nvtxStringHandle_t)((uintptr_t)e | (uintptr_t)!!e->lib);
}

static inline struct nvtxStringRegistration_st *entry_of(nvtxStringHandle_t h)
{
	return (struct nvtxStringRegistration_st *)((uintptr_t)h & ~(uintptr_t)1);
}

static inline int handle_is_library(nvtxStringHandle_t h)
{
	return (int)((uintptr_t)h & 1);
}

#define MAX_DOMAINS 256
/* Registered strings: XLA registers one per kernel and instruction of
 * every module it builds (tens of thousands), and the same names again
 * for each module that shares them. Kept once each (a hash of the text),
 * in chunks allocated as they fill, up to MAX_STRINGS; past that, one
 * handle that says so. */
#define STR_CHUNK 1024
#define MAX_STRINGS (64 * STR_CHUNK)
#define STR_HASH (2 * MAX_STRINGS) /* slots: index + 1, 0 = empty */
#define STARTED 1024

static struct {
	pthread_mutex_t lock;
	int outermost;
	int library_all; /* GPUSPY_NVTX_LIBRARY=all */
	char domains[512];  /* GPUSPY_NVTX_DOMAINS, or "" for all */
	char ranges[512];   /* GPUSPY_NVTX_RANGES, or "" for all */
	int default_accepted;
	struct nvtxDomainRegistration_st dom[MAX_DOMAINS];
	unsigned ndom;
	struct nvtxStringRegistration_st *str[MAX_STRINGS / STR_CHUNK];
	uint32_t *str_hash;
	unsigned nstr;
	struct { uint64_t id; uint32_t name_id; } started[STARTED];
	uint64_t next_id;
} nv = { .lock = PTHREAD_MUTEX_INITIALIZER };
GS_FORK_LOCK(nvtx, nv.lock);

/*
 * This thread's NVTX stack: for each open range, its domain and the name
 * recorded for it (0 when it was filtered out). Allocated on the thread's
 * first range, so that the static TLS gpuspy needs stays small (it may be
 * dlopen'ed as an injection library), 64 entries, doubled when a range
 * opens at the top, up to DEPTH_MAX; the depth, the capacity and the
 * library ranges open are kept beside the pointer, in one TLS line. A range
 * opened at DEPTH_MAX or deeper (or when no memory was left) is counted in
 * the header (nvtx_too_deep) and not recorded, and the pop that closes it
 * records nothing: every begin recorded keeps its own end.
 */
#define DEPTH_MAX 4096
struct nvtx_entry {
	nvtxDomainHandle_t dom;
	uint32_t name_id;
	uint8_t lib; /* a library's range */
};
static __thread struct nvtx_thread {
	struct nvtx_entry *e;
	int depth;             /* ranges open, kept or not */
	int cap;               /* entries allocated: ranges at levels >= cap are not kept */
	int libs;              /* library ranges open (of those kept) */
} nt __attribute__((tls_model("initial-exec"), aligned(32)));

/* The trace file's header, for the count of ranges nested too deep; ranges
 * counted before the file was open wait in too_deep_early. */
static struct gspy_header *nv_hdr;
static uint64_t too_deep_early;

static void too_deep_flush(struct gspy_header *h)
{
	uint64_t n = __atomic_exchange_n(&too_deep_early, 0, __ATOMIC_RELAXED);
	if (n)
		__atomic_fetch_add(&h->nvtx_too_deep, n, __ATOMIC_RELAXED);
}

static void too_deep_count(void)
{
	struct gspy_header *h = __atomic_load_n(&nv_hdr, __ATOMIC_ACQUIRE);
	if (h) {
		__atomic_fetch_add(&h->nvtx_too_deep, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_add(&too_deep_early, 1, __ATOMIC_RELAXED);
	/* The file may have opened meanwhile, after its flush. */
	if ((h = __atomic_load_n(&nv_hdr, __ATOMIC_ACQUIRE)))
		too_deep_flush(h);
}

static void nvtx_opened(struct gspy_header *h)
{
	/* Pairs with the acquire loads: the header is there for the counter. */
	__atomic_store_n(&nv_hdr, h, __ATOMIC_RELEASE);
	too_deep_flush(h);
}

static void nvtx_forked(void)
{
	nv_hdr = NULL; /* the parent's file is unmapped in the child */
	too_deep_early = 0;
}

/* A range opens at level t->cap: 1 when the stack now has room for it. Only
 * at the top of what is kept: a level past it is a range nested in one that
 * was not kept, and cannot be kept either. */
static __attribute__((noinline, cold)) int grow(struct nvtx_thread *t, int level)
{
	if (level != t->cap || t->cap >= DEPTH_MAX)
		return 0;
	int cap = t->cap ? 2 * t->cap : 64;
	gs_hold(); /* gpuspy's memory, not the program's host allocation */
	struct nvtx_entry *e = realloc(t->e, (size_t)cap * sizeof(*e));
	gs_release();
	if (!e)
		return 0;
	t->e = e;
	t->cap = cap;
	return 1;
}

static int in_list(const char *list, const char *name, int glob)
{
	if (!*list)
		return 1;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (glob ? fnmatch(t, name, 0) == 0 : strcmp(t, name) == 0)
			return 1;
	return 0;
}

static void message(const nvtxEventAttributes_t *a, char *out, size_t cap)
{
	out[0] = 0;
	if (!a)
		return;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		if (a->message.ascii)
			snprintf(out, cap, "%s", a->message.ascii);
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		if (a->message.unicode) {
			size_t i = 0;
			for (; i + 1 < cap && a->message.unicode[i]; i++)
				out[i] = a->message.unicode[i] < 128 ? (char)a->message.unicode[i] : '?';
			out[i] = 0;
		}
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		if (a->message.registered)
			snprintf(out, cap, "%s", entry_of(a->message.registered)->s);
		break;
	default:
		break;
	}
}

static void wide(const wchar_t *w, char *out, size_t cap)
{
	size_t i = 0;
	for (; w && i + 1 < cap && w[i]; i++)
		out[i] = w[i] < 128 ? (char)w[i] : '?';
	out[i] = 0;
}

static int accepted(nvtxDomainHandle_t d, const char *name)
{
	if (!(d ? d->accepted : nv.default_accepted))
		return 0;
	return in_list(nv.ranges, name, 1);
}

/* The phase name id of a registered string, looked up once per trace file
 * (a fork child's file has its own ids): XLA names every thunk's range by
 * one, tens of times a step, and a lookup by text takes two locks. */
static uint32_t registered_id(struct nvtxStringRegistration_st *r)
{
	uint64_t v = __atomic_load_n(&r->phase, __ATOMIC_RELAXED);
	uint32_t gen = (uint32_t)gs_g.gen;
	if ((uint32_t)v && (uint32_t)(v >> 32) == gen)
		return (uint32_t)v;
	uint32_t id = gs_phase_name(r->s);
	if (id)
		__atomic_store_n(&r->phase, (uint64_t)gen << 32 | id, __ATOMIC_RELAXED);
	return id;
}

/* An event's name: a registered string as it is (*h its handle), else
 * copied into b. Its entry is not read. Registered is XLA's way, and the
 * cold branch is placed out of the push's straight line. */
static inline __attribute__((always_inline)) const char *text_of(const nvtxEventAttributes_t *a, char *b,
								  size_t cap, nvtxStringHandle_t *h)
{
	*h = NULL;
	if (GS_LIKELY(a && a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered)) {
		*h = a->message.registered;
		return entry_of(*h)->s;
	}
	message(a, b, cap);
	return b;
}

static uint32_t name_of(const char *name, nvtxStringHandle_t h)
{
	return h ? registered_id(entry_of(h)) : gs_phase_name(name);
}

/* ---- push / pop --------------------------------------------------------- */

/* Inlined into each entry point (XLA uses one): a push is one function's
 * code, five cache lines where three small functions took six
 * (bench/jax_step_instr.sh). */
static inline __attribute__((always_inline)) int push(unsigned api, nvtxDomainHandle_t d, const char *name,
						      nvtxStringHandle_t h)
{
	struct nvtx_thread *t = &nt;
	int level = t->depth;
	t->depth = level + 1;
	uint32_t id = 0;
	int lib = !nv.library_all && (h ? handle_is_library(h) : gspy_library_range(name));
	/* The cheap tests first: XLA opens about twenty ranges inside each
	 * module's range, every step, none of them recorded. */
	int want = !(lib && t->libs > 0) && !(nv.outermost && level > 0);
	if (GS_UNLIKELY(level >= t->cap) && !grow(t, level)) {
		if (want && accepted(d, name))
			too_deep_count();
		return level;
	}
	if (want && accepted(d, name))
		id = gs_phase_id(api, GSPY_KIND_phase_begin, name_of(name, h));
	t->e[level] = (struct nvtx_entry){ .dom = d, .name_id = id, .lib = (uint8_t)lib };
	t->libs += lib;
	return level;
}

static inline __attribute__((always_inline)) int pop(unsigned api, nvtxDomainHandle_t d)
{
	struct nvtx_thread *t = &nt;
	/* The innermost range was not kept (too deep): it was not recorded
	 * either, and ends here unrecorded. */
	if (GS_UNLIKELY(t->depth > t->cap))
		return --t->depth;
	struct nvtx_entry *e = t->e;
	/* The innermost open range of this domain on this thread. */
	int top = t->depth;
	int i = top - 1;
	while (i >= 0 && e[i].dom != d)
		i--;
	if (i < 0)
		return -1;
	uint32_t id = e[i].name_id;
	t->libs -= e[i].lib;
	if (i < top - 1) /* not the innermost range: those above move down */
		memmove(&e[i], &e[i + 1], (size_t)(top - 1 - i) * sizeof(e[0]));
	t->depth--;
	if (id)
		gs_phase_id(api, GSPY_KIND_phase_end, id);
	return t->depth;
}

static int NVTX_API push_a(const char *m) { return push(GSPY_API_nvtxRangePush, NULL, m ? m : "", NULL); }
static int NVTX_API push_w(const wchar_t *m) { char b[128]; wide(m, b, sizeof(b)); return push(GSPY_API_nvtxRangePush, NULL, b, NULL); }
static int NVTX_API push_ex(const nvtxEventAttributes_t *a)
{
	char b[128];
	nvtxStringHandle_t h;
	const char *name = text_of(a, b, sizeof(b), &h);
	return push(GSPY_API_nvtxRangePush, NULL, name, h);
}
static int NVTX_API pop_default(void) { return pop(GSPY_API_nvtxRangePop, NULL); }
static int NVTX_API dom_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char b[128];
	nvtxStringHandle_t h;
	const char *name = text_of(a, b, sizeof(b), &h);
	return push(GSPY_API_nvtxRangePush, d, name, h);
}
static int NVTX_API dom_pop(nvtxDomainHandle_t d) { return pop(GSPY_API_nvtxRangePop, d); }

/* ---- start / end: ranges that may end on another thread ------------------- */

static nvtxRangeId_t start(nvtxDomainHandle_t d, const char *name, nvtxStringHandle_t h)
{
	pthread_mutex_lock(&nv.lock);
	nvtxRangeId_t id = ++nv.next_id;
	pthread_mutex_unlock(&nv.lock);
	if (!accepted(d, name))
		return id;
	uint32_t nid = gs_phase_id(GSPY_API_nvtxRangeStart, GSPY_KIND_phase_begin, name_of(name, h));
	pthread_mutex_lock(&nv.lock);
	nv.started[id % STARTED].id = id;
	nv.started[id % STARTED].name_id = nid;
	pthread_mutex_unlock(&nv.lock);
	return id;
}

static void end(nvtxRangeId_t id)
{
	uint32_t nid = 0;
	pthread_mutex_lock(&nv.lock);
	if (nv.started[id % STARTED].id == id) {
		nid = nv.started[id % STARTED].name_id;
		nv.started[id % STARTED].id = 0;
	}
	pthread_mutex_unlock(&nv.lock);
	if (nid)
		gs_phase_id(GSPY_API_nvtxRangeEnd, GSPY_KIND_phase_end, nid);
}

static nvtxRangeId_t NVTX_API start_a(const char *m) { return start(NULL, m ? m : "", NULL); }
static nvtxRangeId_t NVTX_API start_w(const wchar_t *m) { char b[128]; wide(m, b, sizeof(b)); return start(NULL, b, NULL); }
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a)
{
	char b[128];
	nvtxStringHandle_t h;
	const char *name = text_of(a, b, sizeof(b), &h);
	return start(NULL, name, h);
}
static void NVTX_API end_default(nvtxRangeId_t id) { end(id); }
static nvtxRangeId_t NVTX_API dom_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char b[128];
	nvtxStringHandle_t h;
	const char *name = text_of(a, b, sizeof(b), &h);
	return start(d, name, h);
}
static void NVTX_API dom_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { (void)d; end(id); }

/* ---- marks ------------------------------------------------------------------- */

static void mark(nvtxDomainHandle_t d, const char *name, nvtxStringHandle_t h)
{
	if (accepted(d, name))
		gs_phase_id(GSPY_API_nvtxMark, GSPY_KIND_mark, name_of(name, h));
}

static void NVTX_API mark_a(const char *m) { mark(NULL, m ? m : "", NULL); }
static void NVTX_API mark_w(const wchar_t *m) { char b[128]; wide(m, b, sizeof(b)); mark(NULL, b, NULL); }
static void NVTX_API mark_ex(const nvtxEventAttributes_t *a)
{
	char b[128];
	nvtxStringHandle_t h;
	const char *name = text_of(a, b, sizeof(b), &h);
	mark(NULL, name, h);
}
static void NVTX_API dom_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char b[128];
	nvtxStringHandle_t h;
	const char *name = text_of(a, b, sizeof(b), &h);
	mark(d, name, h);
}

/* ---- domains and registered strings --------------------------------------------- */

static nvtxDomainHandle_t domain(const char *name)
{
	nvtxDomainHandle_t d = NULL;
	pthread_mutex_lock(&nv.lock);
	for (unsigned i = 0; i < nv.ndom; i++)
		if (!strcmp(nv.dom[i].name, name))
			d = &nv.dom[i];
	if (!d && nv.ndom < MAX_DOMAINS) {
		d = &nv.dom[nv.ndom++];
		snprintf(d->name, sizeof(d->name), "%s", name);
		d->accepted = in_list(nv.domains, name, 0);
	}
	pthread_mutex_unlock(&nv.lock);
	return d;
}

static nvtxDomainHandle_t NVTX_API dom_create_a(const char *n) { return domain(n ? n : ""); }
static nvtxDomainHandle_t NVTX_API dom_create_w(const wchar_t *n) { char b[64]; wide(n, b, sizeof(b)); return domain(b); }
static void NVTX_API dom_destroy(nvtxDomainHandle_t d) { (void)d; /* handles stay valid: ranges may still refer to them */ }

static struct nvtxStringRegistration_st str_full = { "(more than 65536 NVTX strings)", 1, 0 };

static nvtxStringHandle_t reg(const char *s)
{
	char text[sizeof(str_full.s)];
	snprintf(text, sizeof(text), "%s", s);
	uint64_t h = gs_fnv1a(text, strlen(text)); /* of what is kept */
	nvtxStringHandle_t out = &str_full;
	pthread_mutex_lock(&nv.lock);
	/* The tables are gpuspy's memory (512 KiB and 144 KiB a chunk of
	 * strings), not the program's host allocations. */
	gs_hold();
	if (!nv.str_hash)
		nv.str_hash = calloc(STR_HASH, sizeof(*nv.str_hash));
	for (size_t k = h % STR_HASH, probes = 0; nv.str_hash && probes < STR_HASH; k = (k + 1) % STR_HASH, probes++) {
		uint32_t v = nv.str_hash[k];
		if (v) {
			struct nvtxStringRegistration_st *e = &nv.str[(v - 1) / STR_CHUNK][(v - 1) % STR_CHUNK];
			if (strcmp(e->s, text))
				continue;
			out = e;
			break;
		}
		unsigned i = nv.nstr;
		if (i >= MAX_STRINGS)
			break;
		if (!nv.str[i / STR_CHUNK] && !(nv.str[i / STR_CHUNK] = calloc(STR_CHUNK, sizeof(**nv.str))))
			break;
		out = &nv.str[i / STR_CHUNK][i % STR_CHUNK];
		memcpy(out->s, text, sizeof(text));
		out->lib = gspy_library_range(text);
		nv.str_hash[k] = ++nv.nstr;
		break;
	}
	gs_release();
	pthread_mutex_unlock(&nv.lock);
	return handle_of(out);
}

static nvtxStringHandle_t NVTX_API reg_a(nvtxDomainHandle_t d, const char *s) { (void)d; return reg(s ? s : ""); }
static nvtxStringHandle_t NVTX_API reg_w(nvtxDomainHandle_t d, const wchar_t *s) { (void)d; char b[128]; wide(s, b, sizeof(b)); return reg(b); }

/* ---- injection entry point ------------------------------------------------------- */

static void set(NvtxFunctionTable t, unsigned n, unsigned id, NvtxFunctionPointer fn)
{
	if (t && id <= n && t[id])
		*t[id] = fn;
}

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static int nvtx_on; /* GPUSPY_NVTX, read once by gs_nvtx_setup from gs_init */

static void read_config(void)
{
	nv.outermost = gs_optu(GS_OPT_NVTX_NESTING) == 1; /* innermost|outermost */
	nv.library_all = gs_optu(GS_OPT_NVTX_LIBRARY) == 1; /* outermost|all */
	const char *v = gs_opt[GS_OPT_NVTX_DOMAINS].s;
	snprintf(nv.domains, sizeof(nv.domains), "%s", v ? v : "");
	v = gs_opt[GS_OPT_NVTX_RANGES].s;
	snprintf(nv.ranges, sizeof(nv.ranges), "%s", v ? v : "");
	nv.default_accepted = in_list(nv.domains, "default", 0);
}

GS_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
GS_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	gs_init();
	if (gs_g.disabled || !nvtx_on || !get)
		return 0;
	pthread_once(&cfg_once, read_config);
	const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;
	NvtxFunctionTable t = NULL;
	unsigned n = 0;
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t)
		return 0;
	set(t, n, NVTX_CBID_CORE_MarkEx, (NvtxFunctionPointer)mark_ex);
	set(t, n, NVTX_CBID_CORE_MarkA, (NvtxFunctionPointer)mark_a);
	set(t, n, NVTX_CBID_CORE_MarkW, (NvtxFunctionPointer)mark_w);
	set(t, n, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)start_ex);
	set(t, n, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)start_a);
	set(t, n, NVTX_CBID_CORE_RangeStartW, (NvtxFunctionPointer)start_w);
	set(t, n, NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)end_default);
	set(t, n, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)push_ex);
	set(t, n, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a);
	set(t, n, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)push_w);
	set(t, n, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)pop_default);
	t = NULL;
	if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t) {
		set(t, n, NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)dom_mark_ex);
		set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)dom_start_ex);
		set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)dom_end);
		set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)dom_push_ex);
		set(t, n, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)dom_pop);
		set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)reg_a);
		set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, (NvtxFunctionPointer)reg_w);
		set(t, n, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)dom_create_a);
		set(t, n, NVTX_CBID_CORE2_DomainCreateW, (NvtxFunctionPointer)dom_create_w);
		set(t, n, NVTX_CBID_CORE2_DomainDestroy, (NvtxFunctionPointer)dom_destroy);
	}
	return 1;
}

/* Called from gpuspy's constructor: point NVTX at this library, unless the
 * user chose another injection. */
static void nvtx_setup(void)
{
	nvtx_on = (int)gs_optu(GS_OPT_NVTX);
	if (!nvtx_on || getenv("NVTX_INJECTION64_PATH"))
		return;
	char path[PATH_MAX];
	const char *self = gs_self_name();
	if (self && realpath(self, path))
		setenv("NVTX_INJECTION64_PATH", path, 0);
}

GS_MODULE(nvtx, 50, .setup = nvtx_setup, .opened = nvtx_opened, .forked = nvtx_forked);
