/* SPDX-License-Identifier: MIT */
/*
 * How calls reach gpuspy's wrappers (docs/design.md#interception): exported symbols,
 * dlsym/dlvsym on any handle, and cuGetProcAddress / cudaGetDriverEntryPoint
 * including cuGetProcAddress's lookup of itself. Also the real functions
 * behind each wrapper, and the small driver queries the hooks share
 * (current device, kernel names, pointer kinds).
 *
 * The real dlsym and dlvsym are found by reading libc's dynamic symbol
 * table, so that gpuspy's own lookups never pass through its own hooks.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cuda_api.h"

#include "gs.h"
#include "module.h"
#include "host_alloc.h"
#include "symbols.h"
#include "host.h"

/* The dlsym path runs inside a sanitizer runtime's own start-up (it looks
 * up the real functions with dlsym before its shadow memory exists), so it
 * must not be instrumented. */
#define GS_EARLY __attribute__((no_sanitize("address", "undefined", "thread")))

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

struct hook {
	const char *name;
	char base[48];   /* name without _ptds/_ptsz and _vN */
	int version;
	int ptds;
	unsigned kind;
	void *wrapper;   /* our exported definition */
};

static struct hook hooks[GSPY_API_COUNT] = {
#define GSPY_X(sym, k, ver) { .name = #sym, .version = ver, .kind = GSPY_KIND_##k },
	GSPY_API_LIST(GSPY_X)
#undef GSPY_X
};

void *gs_real_tab[GSPY_API_COUNT];
static dlsym_fn real_dlsym;
static dlvsym_fn real_dlvsym;
static int sym_state; /* sym_init: gs_once's states */
static uint32_t sym_tid;
static uint64_t mismatches;
/* What wrap() decided, for GPUSPY_DEBUG: wrapped, already gpuspy's, not a
 * real function (listed before gpuspy, or in no object). */
static uint64_t wrapped, already_ours, refused;

/* libgpuspy's own image, as the linker laid it out: no dladdr, no loader
 * lock. A DSO's first segment starts at address 0, so the ELF header's
 * address is the load base. */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));
extern ElfW(Dyn) _DYNAMIC[];

int gs_in_self(const void *p)
{
	return (uintptr_t)p >= (uintptr_t)&__ehdr_start && (uintptr_t)p < (uintptr_t)_end;
}

/* ---- the real dlsym, from libc's own symbol table ---------------------- */

struct elf_find {
	const char *lib;
	void *dlsym, *dlvsym;
};

/* String helpers for the early path: libc's are intercepted by sanitizers,
 * whose real pointers are not set up yet when they call dlsym. */
GS_EARLY static int early_eq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

GS_EARLY static int early_contains(const char *hay, const char *needle)
{
	for (; *hay; hay++) {
		const char *h = hay, *n = needle;
		while (*n && *h == *n)
			h++, n++;
		if (!*n)
			return 1;
	}
	return 0;
}

GS_EARLY static uintptr_t dyn_ptr(uintptr_t base, uintptr_t p)
{
	return p < base ? base + p : p; /* glibc relocates .dynamic in place */
}

GS_EARLY static size_t gnu_hash_count(const uint32_t *h)
{
	uint32_t nb = h[0], off = h[1], bloom = h[2];
	const uint32_t *buckets = (const uint32_t *)((const uint64_t *)(h + 4) + bloom);
	const uint32_t *chain = buckets + nb;
	uint32_t max = 0;
	for (uint32_t i = 0; i < nb; i++)
		if (buckets[i] > max)
			max = buckets[i];
	if (max < off)
		return off;
	while (!(chain[max - off] & 1))
		max++;
	return (size_t)max + 1;
}

/* One loaded object's dynamic symbol table. */
struct dyn_tables {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Half) *versym;
	size_t nsyms;
};

GS_EARLY static int dyn_tables(uintptr_t base, const ElfW(Dyn) *dyn, struct dyn_tables *t)
{
	t->symtab = NULL;
	t->strtab = NULL;
	t->versym = NULL;
	t->nsyms = 0;
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = dyn_ptr(base, dyn->d_un.d_ptr);
		switch (dyn->d_tag) {
		case DT_SYMTAB: t->symtab = (const ElfW(Sym) *)p; break;
		case DT_STRTAB: t->strtab = (const char *)p; break;
		case DT_VERSYM: t->versym = (const ElfW(Half) *)p; break;
		case DT_HASH: t->nsyms = ((const uint32_t *)p)[1]; break;
		case DT_GNU_HASH:
			if (!t->nsyms)
				t->nsyms = gnu_hash_count((const uint32_t *)p);
			break;
		}
	}
	return t->symtab && t->strtab;
}

/* Looks dlsym and dlvsym up in one loaded object's dynamic symbol table. */
GS_EARLY static int scan_object(uintptr_t base, const ElfW(Dyn) *dyn, struct elf_find *f)
{
	struct dyn_tables t;
	if (!dyn_tables(base, dyn, &t))
		return 0;
	for (size_t i = 0; i < t.nsyms; i++) {
		const ElfW(Sym) *s = &t.symtab[i];
		if (s->st_value == 0 || ELF64_ST_TYPE(s->st_info) != STT_FUNC)
			continue;
		int hidden = t.versym && (t.versym[i] & 0x8000);
		void **slot = NULL;
		if (early_eq(t.strtab + s->st_name, "dlsym"))
			slot = &f->dlsym;
		else if (early_eq(t.strtab + s->st_name, "dlvsym"))
			slot = &f->dlvsym;
		/* Prefer the default version; a compat one does as well. */
		if (slot && (!*slot || !hidden))
			*slot = (void *)(base + s->st_value);
	}
	return f->dlsym != NULL;
}

/* The loaded objects come from the dynamic linker's own list (_r_debug):
 * dl_iterate_phdr is intercepted by sanitizers and unusable while they
 * start up, which is when they call dlsym. */
GS_EARLY static void find_real_dl(void)
{
	static const char *const libs[] = { "libc.so.6", "libdl.so.2" };
	for (size_t i = 0; i < 2 && !real_dlsym; i++) {
		struct elf_find f = { .lib = libs[i] };
		for (const struct link_map *m = _r_debug.r_map; m && !f.dlsym; m = m->l_next)
			if (m->l_name && early_contains(m->l_name, f.lib))
				scan_object(m->l_addr, m->l_ld, &f);
		real_dlsym = (dlsym_fn)f.dlsym;
		real_dlvsym = (dlvsym_fn)f.dlvsym;
	}
}

/* One defined function of one loaded object, by name (default version
 * preferred); NULL if absent. */
GS_EARLY static void *object_sym(uintptr_t base, const ElfW(Dyn) *dyn, const char *name)
{
	struct dyn_tables t;
	if (!dyn_tables(base, dyn, &t))
		return NULL;
	void *found = NULL;
	for (size_t i = 0; i < t.nsyms; i++) {
		const ElfW(Sym) *s = &t.symtab[i];
		if (s->st_value == 0 || s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC ||
		    !early_eq(t.strtab + s->st_name, name))
			continue;
		found = (void *)(base + s->st_value);
		if (!t.versym || !(t.versym[i] & 0x8000))
			break;
	}
	return found;
}

/*
 * The definition the dynamic linker would bind `name` to if neither
 * libgpuspy nor libgpuspy-host.so defined it (RTLD_NEXT from the shim),
 * found without calling dlsym: the C allocator's hooks need their real
 * functions before dlsym can run (dlsym allocates).
 */
GS_EARLY void *gs_next_sym(const char *name)
{
	/* First the objects after us; then, when gpuspy was dlopen'ed
	 * (CUDA_INJECTION64_PATH) and is last in the list, those before it. */
	for (int pass = 0; pass < 2; pass++) {
		int after_self = 0;
		for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
			if (m->l_ld == _DYNAMIC) {
				after_self = 1;
				continue;
			}
			if (pass == 0 && !after_self)
				continue;
			void *p = object_sym(m->l_addr, m->l_ld, name);
			if (p && (early_eq(name, GS_HOST_SHIM_MARK) ||
				  !object_sym(m->l_addr, m->l_ld, GS_HOST_SHIM_MARK)))
				return p;
		}
	}
	return NULL;
}

const char *gs_self_name(void)
{
	for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next)
		if (m->l_ld == _DYNAMIC)
			return m->l_name && *m->l_name ? m->l_name : NULL;
	return NULL;
}

/* The wrapper table: base names and our own definitions, read from
 * libgpuspy's dynamic symbol table (not dlopen of itself: that would run
 * its constructor, and so gs_init, inside a lookup gs_init may be making). */
static void sym_init(void)
{
	if (!real_dlsym) {
		gs_warn("cannot find the real dlsym; tracing off");
		gs_g.disabled = 1;
		return;
	}
	for (unsigned i = 0; i < GSPY_API_COUNT; i++) {
		struct hook *h = &hooks[i];
		snprintf(h->base, sizeof(h->base), "%s", h->name);
		size_t n = strlen(h->base);
		h->ptds = n > 5 && (!strcmp(h->base + n - 5, "_ptds") || !strcmp(h->base + n - 5, "_ptsz"));
		if (h->ptds) /* written after the version: cuMemcpy2DAsync_v2_ptsz */
			h->base[n -= 5] = 0;
		size_t d = n; /* then the version, _vN for any N (cuCtxCreate_v4) */
		while (d > 2 && h->base[d - 1] >= '0' && h->base[d - 1] <= '9')
			d--;
		if (d < n && h->base[d - 1] == 'v' && h->base[d - 2] == '_')
			h->base[d - 2] = 0;
		/* The host allocator's names are libgpuspy-host.so's, not ours. */
		h->wrapper = gs_api_host(i) ? NULL : object_sym((uintptr_t)&__ehdr_start, _DYNAMIC, h->name);
	}
}

/* 1 when the wrapper table is ready; 0 on the thread building it (a
 * re-entry) or after gs_once's bounded wait: then nothing is wrapped. */
static int sym_ready(void)
{
	if (!real_dlsym)
		find_real_dl();
	return gs_once(&sym_state, &sym_tid, sym_init);
}

void *gs_real_dlsym(void *handle, const char *name)
{
	if (!real_dlsym)
		find_real_dl();
	return real_dlsym ? real_dlsym(handle, name) : NULL;
}

/* libcuda's own definitions, found through dl_iterate_phdr (whose lock a
 * dlopen holds only while it links a library in, never while it runs
 * constructors) rather than dlopen or dlsym, which take the loader lock:
 * a hook must never wait on a thread that may wait on it. */
/* One loaded object (a dl_iterate_phdr entry): its dynamic section, and
 * in *holds whether one of its segments holds addr. */
static const ElfW(Dyn) *object_dyn(const struct dl_phdr_info *info, uintptr_t addr, int *holds)
{
	const ElfW(Dyn) *dyn = NULL;
	*holds = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		else if (ph->p_type == PT_LOAD && addr - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			*holds = 1;
	}
	return dyn;
}

struct object_find {
	const char *soname; /* basename prefix, or NULL: the object holding addr */
	uintptr_t addr;
	uintptr_t base;
	const ElfW(Dyn) *dyn;
	int index, self_index; /* positions in the loader's list */
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct object_find *f = arg;
	int holds;
	const ElfW(Dyn) *dyn = object_dyn(info, f->addr, &holds);
	if (dyn == _DYNAMIC)
		f->self_index = f->index;
	f->index++;
	const char *n = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	n = n ? n + 1 : info->dlpi_name;
	if (f->soname ? n && strncmp(n, f->soname, strlen(f->soname)) == 0 : holds) {
		f->base = info->dlpi_addr;
		f->dyn = dyn;
		return f->index; /* stops the walk */
	}
	return 0;
}

/* libcuda's place, once it is loaded (it is never unloaded). */
static int libcuda_obj(uintptr_t *base, const ElfW(Dyn) **dyn)
{
	static uintptr_t b;
	static const ElfW(Dyn) *d;
	if (!__atomic_load_n(&d, __ATOMIC_ACQUIRE)) {
		struct object_find f = { .soname = "libcuda.so", .self_index = -1 };
		if (!dl_iterate_phdr(find_object, &f) || !f.dyn)
			return 0;
		/* Threads may race here: each stores the same values. */
		__atomic_store_n(&b, f.base, __ATOMIC_RELAXED);
		__atomic_store_n(&d, f.dyn, __ATOMIC_RELEASE); /* after b */
	}
	*dyn = __atomic_load_n(&d, __ATOMIC_ACQUIRE);
	*base = __atomic_load_n(&b, __ATOMIC_RELAXED);
	return 1;
}

static void *libcuda_sym(const char *name)
{
	uintptr_t base;
	const ElfW(Dyn) *dyn;
	void *p = libcuda_obj(&base, &dyn) ? object_sym(base, dyn, name) : NULL;
	return gs_in_self(p) ? NULL : p;
}

/* Whether p may be stored as a real function: not inside libgpuspy, and
 * in an object the loader lists after libgpuspy (an object before it, the
 * program or an interposer preloaded ahead, leads back to gpuspy's
 * wrappers), or in libcuda itself wherever it stands (gpuspy dlopen'ed as
 * an injection library comes after it). */
static int real_candidate(void *p)
{
	if (!p || gs_in_self(p))
		return 0;
	struct object_find f = { .addr = (uintptr_t)p, .self_index = -1 };
	if (!dl_iterate_phdr(find_object, &f))
		return 0; /* in no object: an answer we cannot place */
	if (f.self_index >= 0) /* the walk met libgpuspy first */
		return 1;
	uintptr_t base;
	const ElfW(Dyn) *dyn;
	return libcuda_obj(&base, &dyn) && base == f.base;
}

int gs_api_ptds(unsigned api)
{
	return sym_ready() ? hooks[api].ptds : 0;
}

void *gs_driver_fn(const char *name)
{
	void *p = libcuda_sym(name);
	if (!p) {
		p = gs_real_dlsym(RTLD_NEXT, name);
		if (gs_in_self(p))
			p = NULL;
	}
	return p;
}

/* RTLD_NEXT asked by another object (an interposer preloaded before or
 * after gpuspy, a wrapper library) means the next definition after *that
 * object*: found here, since the real dlsym called from libgpuspy would
 * answer relative to libgpuspy. The answer is handed back as it is, never
 * wrapped nor stored as a real function: the asker is in the chain of
 * calls already (gpuspy before it calls it; it, before gpuspy, reaches
 * gpuspy's own definition next), and wrapping or storing it makes
 * A -> gpuspy -> A -> ... recurse until the stack overflows. */
struct next_find {
	uintptr_t caller;
	const char *name;
	int past_caller;
	void *found;
};

static int find_next(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct next_find *f = arg;
	int holds;
	const ElfW(Dyn) *dyn = object_dyn(info, f->caller, &holds);
	if (holds) {
		f->past_caller = 1;
		return 0;
	}
	if (f->past_caller && dyn)
		f->found = object_sym(info->dlpi_addr, dyn, f->name);
	return f->found != NULL;
}

static void *next_after(const void *caller, const char *name)
{
	struct next_find f = { .caller = (uintptr_t)caller, .name = name };
	dl_iterate_phdr(find_next, &f);
	return f.found;
}

/* Stands in for a real function that cannot be found (no CUDA library):
 * the caller gets CUDA_ERROR_UNKNOWN / cudaErrorUnknown (both 999). On
 * x86-64 any arguments may be passed to it. */
static int missing_real(void)
{
	return 999;
}

#define driver_name(n) ((n)[0] == 'c' && (n)[1] == 'u' && (n)[2] != 'd') /* cu*, not cuda* */
/* The real function behind wrapper api: the next definition after
 * libgpuspy (an interposer preloaded after it, or the library), else
 * libcuda's own. Never an address inside libgpuspy: a libcuda linked
 * without -Bsymbolic, or an interposer, can answer with gpuspy's own
 * wrapper, and calling that as the real function recurses until the stack
 * overflows. */
void *gs_real_resolve(unsigned api)
{
	const char *name = hooks[api].name;
	void *p;
	if (driver_name(name)) {
		/* A driver entry point: found without the loader lock (only
		 * interposers and libcuda define these names). */
		p = next_after((const void *)gs_real_resolve, name);
		if (!p)
			p = libcuda_sym(name);
	} else {
		/* A runtime one: dlsym's RTLD_NEXT, the only answer that knows
		 * the loader's global scope (one of several copies of cudart
		 * may be the program's; its lock is the one the runtime's own
		 * lazy start-up takes), else the first listed: a cudart only a
		 * library dlopen'ed RTLD_LOCAL needs (each call got 999). */
		p = gs_real_dlsym(RTLD_NEXT, name);
		if (!p || gs_in_self(p))
			p = next_after((const void *)gs_real_resolve, name);
	}
	if (gs_in_self(p))
		p = NULL;
	if (p) {
		void *expect = NULL;
		__atomic_compare_exchange_n(&gs_real_tab[api], &expect, p, 0, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
	}
	p = __atomic_load_n(&gs_real_tab[api], __ATOMIC_RELAXED);
	return p ? p : (void *)missing_real;
}

/*
 * Hand out the wrapper of hook i for the real function p. The first real
 * pointer seen for a hook is the one its wrapper calls; a different one
 * later (another copy of the library, an ABI we misjudged) passes through.
 * p inside libgpuspy is one of its wrappers already; p from an object the
 * loader lists before libgpuspy is an interposer's, which leads back to
 * gpuspy: both pass through and are never stored.
 */
static void *proc_alternate(unsigned i, void *p);

static void *wrap(unsigned i, void *p)
{
	if (p && gs_in_self(p))
		__atomic_fetch_add(&already_ours, 1, __ATOMIC_RELAXED);
	if (!p || gs_in_self(p) || !sym_ready())
		return p;
	struct hook *h = &hooks[i];
	if (!h->wrapper || !real_candidate(p)) {
		__atomic_fetch_add(&refused, 1, __ATOMIC_RELAXED);
		return p;
	}
	void *expect = NULL;
	if (!__atomic_compare_exchange_n(&gs_real_tab[i], &expect, p, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED) &&
	    expect != p) {
		void *alt = proc_alternate(i, p);
		if (alt) {
			__atomic_fetch_add(&wrapped, 1, __ATOMIC_RELAXED);
			return alt;
		}
		__atomic_fetch_add(&mismatches, 1, __ATOMIC_RELAXED);
		return p;
	}
	__atomic_fetch_add(&wrapped, 1, __ATOMIC_RELAXED);
	return h->wrapper;
}

GS_EARLY static int by_name(const char *name)
{
	if (!name || !((name[0] == 'c' && name[1] == 'u') || name[0] == '_'))
		return -1;
	for (unsigned i = 0; i < GSPY_API_COUNT; i++)
		if (early_eq(hooks[i].name, name))
			return (int)i;
	return -1;
}

/* cuGetProcAddress semantics: the newest ABI variant not newer than
 * `version`, the per-thread one when asked and when it exists. *newest:
 * the newest variant gpuspy knows of that name, whatever the flags. */
static int by_proc(const char *symbol, long version, uint64_t flags, int *newest)
{
	*newest = 0;
	if (!sym_ready() || !symbol || symbol[0] != 'c' || symbol[1] != 'u')
		return -1;
	int want = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	int best[2] = { -1, -1 };
	for (unsigned i = 0; i < GSPY_API_COUNT; i++) {
		struct hook *h = &hooks[i];
		if (h->version == 0 || strcmp(h->base, symbol) != 0)
			continue;
		if (h->version > *newest)
			*newest = h->version;
		if (h->version > version)
			continue;
		if (best[h->ptds] < 0 || hooks[best[h->ptds]].version < h->version)
			best[h->ptds] = (int)i;
	}
	return want && best[1] >= 0 ? best[1] : best[0];
}

/* ---- route 2: dlsym / dlvsym ------------------------------------------- */

/*
 * p, a lookup's answer for hook i, unless it is gpuspy's own export of a
 * name nothing else defines (a runtime's: in the global scope, where the
 * loader looks; no CUDA library, or one too old): a program that probes
 * for CUDA (dlsym(RTLD_DEFAULT, "cudaMalloc")) takes its path without it.
 * A weak reference the loader bound at load time gets gpuspy's export.
 */
static void *unless_absent(unsigned i, void *p)
{
	if (!p || !gs_in_self(p))
		return p;
	void *q = driver_name(hooks[i].name) ? gs_real_resolve(i) : gs_real_dlsym(RTLD_NEXT, hooks[i].name);
	return q && q != (void *)missing_real && !gs_in_self(q) ? p : NULL;
}

GS_EARLY GS_API void *dlsym(void *handle, const char *name)
{
	if (!real_dlsym)
		find_real_dl(); /* idempotent: a race only repeats the search */
	if (!real_dlsym)
		return NULL;
	int i = by_name(name);
	if (i < 0) /* a sibling call keeps the caller's return address for RTLD_NEXT */
		return real_dlsym(handle, name);
	if (handle == RTLD_NEXT)
		return unless_absent((unsigned)i, next_after(__builtin_return_address(0), name));
	void *p = real_dlsym(handle, name);
	return wrap((unsigned)i, unless_absent((unsigned)i, p));
}

GS_EARLY GS_API void *dlvsym(void *handle, const char *name, const char *version)
{
	if (!real_dlsym)
		find_real_dl();
	if (!real_dlvsym)
		return NULL;
	int i = by_name(name);
	if (i < 0)
		return real_dlvsym(handle, name, version);
	if (handle == RTLD_NEXT) /* CUDA's names carry no symbol versions */
		return unless_absent((unsigned)i, next_after(__builtin_return_address(0), name));
	void *p = real_dlvsym(handle, name, version);
	return wrap((unsigned)i, unless_absent((unsigned)i, p));
}

/* ---- route 3: cuGetProcAddress and cudaGetDriverEntryPoint ------------- */

/* Where an answer can be asked for again: a cuGetProcAddress of either ABI
 * (v2: of five arguments). */
struct asker {
	void *gpa;
	int v2;
};

/* What `a` answers for (symbol, version, flags), NULL on an error. The
 * status goes to a variable of ours: the caller's are the first answer's. */
static void *ask_again(const struct asker *a, const char *symbol, int version, uint64_t flags)
{
	void *p = NULL;
	CUdriverProcAddressQueryResult q;
	CUresult rc = a->v2 ? ((__typeof__(&cuGetProcAddress_v2))a->gpa)(symbol, &p, version, flags, &q)
			    : ((__typeof__(&cuGetProcAddress))a->gpa)(symbol, &p, version, flags);
	return rc == CUDA_SUCCESS ? p : NULL;
}

/*
 * The answer *pfn to (symbol, version, flags), wrapped when gpuspy knows
 * its ABI. Past every variant gpuspy knows of the name, the driver may
 * answer in an ABI gpuspy never heard of (cuda-python 13 declares a
 * cuLaunchHostFunc_v2 of four arguments): wrapped, the call would go
 * through the old ABI's wrapper, and the new function, stored as the old
 * hook's real one, be called by the exported old name too. So the question
 * is put again at the version of the variant gpuspy would hand out: the
 * same pointer is wrapped; another is handed back as it is, never stored.
 */
static void wrap_proc(const char *symbol, void **pfn, long version, uint64_t flags, const struct asker *a)
{
	if (!pfn || !*pfn)
		return;
	int newest;
	int i = by_proc(symbol, version, flags, &newest);
	if (i < 0)
		return;
	if (version > newest && ask_again(a, symbol, hooks[i].version, flags) != *pfn) {
		__atomic_fetch_add(&mismatches, 1, __ATOMIC_RELAXED);
		return;
	}
	*pfn = wrap((unsigned)i, *pfn);
}

static CUresult proc_v1(void *real, const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	gs_init();
	CUresult rc = ((__typeof__(&cuGetProcAddress))real)(symbol, pfn, cudaVersion, flags);
	if (rc == CUDA_SUCCESS)
		wrap_proc(symbol, pfn, cudaVersion, flags, &(struct asker){ real, 0 });
	return rc;
}

static CUresult proc_v2(void *real, const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			CUdriverProcAddressQueryResult *status)
{
	gs_init();
	CUresult rc = ((__typeof__(&cuGetProcAddress_v2))real)(symbol, pfn, cudaVersion, flags, status);
	if (rc == CUDA_SUCCESS)
		wrap_proc(symbol, pfn, cudaVersion, flags, &(struct asker){ real, 1 });
	return rc;
}

GS_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
				 cuuint64_t flags)
{
	return proc_v1(GS_REAL(cuGetProcAddress), symbol, pfn, cudaVersion, flags);
}

GS_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
				    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	return proc_v2(GS_REAL(cuGetProcAddress_v2), symbol, pfn, cudaVersion, flags, status);
}

/*
 * A second cuGetProcAddress: a tool that injects itself into the driver
 * (Nsight Compute) answers the runtime's lookup of "cuGetProcAddress" with
 * its own, which is not the real function the wrapper already has. Handed
 * out unwrapped, the runtime's whole table (~440 entry points) would bypass
 * gpuspy: so each such answer gets a wrapper of its own, up to PROC_ALTS
 * per ABI, each calling the function it was made for.
 */
#define PROC_ALTS 4
static void *alt_v1[PROC_ALTS], *alt_v2[PROC_ALTS];

#define ALT(k)                                                                                              \
	static CUresult alt_v1_##k(const char *s, void **p, int v, cuuint64_t f)                            \
	{                                                                                                   \
		return proc_v1(alt_v1[k], s, p, v, f);                                                      \
	}                                                                                                   \
	static CUresult alt_v2_##k(const char *s, void **p, int v, cuuint64_t f,                            \
				   CUdriverProcAddressQueryResult *q)                                       \
	{                                                                                                   \
		return proc_v2(alt_v2[k], s, p, v, f, q);                                                   \
	}
ALT(0)
ALT(1)
ALT(2)
ALT(3)
#undef ALT

/* A wrapper for p, another cuGetProcAddress (hook i), or NULL when all are
 * taken. */
static void *proc_alternate(unsigned i, void *p)
{
	static void *const w1[PROC_ALTS] = { (void *)alt_v1_0, (void *)alt_v1_1, (void *)alt_v1_2, (void *)alt_v1_3 };
	static void *const w2[PROC_ALTS] = { (void *)alt_v2_0, (void *)alt_v2_1, (void *)alt_v2_2, (void *)alt_v2_3 };
	void **slots = i == GSPY_API_cuGetProcAddress ? alt_v1 : i == GSPY_API_cuGetProcAddress_v2 ? alt_v2 : NULL;
	if (!slots)
		return NULL;
	for (int k = 0; k < PROC_ALTS; k++) {
		void *expect = NULL;
		if (__atomic_compare_exchange_n(&slots[k], &expect, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
		    expect == p)
			return slots == alt_v1 ? w1[k] : w2[k];
	}
	return NULL;
}

/* The version the runtime asks the driver at: its own, looked up once
 * (dlsym takes the loader's lock). Threads may race here: each stores the
 * same value. */
static long runtime_version(void)
{
	static int cached;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v)
		return v;
	int (*rv)(int *) = (int (*)(int *))gs_real_dlsym(RTLD_NEXT, "cudaRuntimeGetVersion");
	if (!rv || rv(&v) != 0 || v <= 0)
		v = CUDA_VERSION;
	__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	return v;
}

/* The driver's own cuGetProcAddress, where the runtime's answers come
 * from: for the runtime's lookups, asked again (wrap_proc). */
static struct asker driver_asker(void)
{
	void *p = GS_REAL(cuGetProcAddress_v2);
	if (p != (void *)missing_real)
		return (struct asker){ p, 1 };
	return (struct asker){ GS_REAL(cuGetProcAddress), 0 }; /* missing_real: no answer */
}

/* The runtime answers these through its own cuGetProcAddress, which is
 * usually ours already; anything that still comes back unwrapped is wrapped
 * here. */
GS_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
					   unsigned long long flags,
					   enum cudaDriverEntryPointQueryResult *driverStatus)
{
	gs_init();
	__typeof__(&cudaGetDriverEntryPoint) real = GS_REAL(cudaGetDriverEntryPoint);
	cudaError_t rc = real(symbol, funcPtr, flags, driverStatus);
	if (rc == 0 && funcPtr && *funcPtr && !gs_in_self(*funcPtr)) {
		struct asker a = driver_asker();
		wrap_proc(symbol, funcPtr, runtime_version(), flags, &a);
	}
	return rc;
}

GS_API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
						    unsigned int cudaVersion, unsigned long long flags,
						    enum cudaDriverEntryPointQueryResult *driverStatus)
{
	gs_init();
	__typeof__(&cudaGetDriverEntryPointByVersion) real = GS_REAL(cudaGetDriverEntryPointByVersion);
	cudaError_t rc = real(symbol, funcPtr, cudaVersion, flags, driverStatus);
	if (rc == 0 && funcPtr && *funcPtr && !gs_in_self(*funcPtr)) {
		struct asker a = driver_asker();
		wrap_proc(symbol, funcPtr, cudaVersion, flags, &a);
	}
	return rc;
}

/* The event kind of an intercepted entry point, by exported name. */
unsigned gs_api_kind(const char *name)
{
	for (unsigned i = 0; i < GSPY_API_COUNT; i++)
		if (!strcmp(hooks[i].name, name))
			return hooks[i].kind;
	return GSPY_KIND_none;
}

/* GPUSPY_DEBUG: at the end, how the entry points were handed out. */
static void symbols_end(void)
{
	if (!gs_optu(GS_OPT_DEBUG))
		return;
	gs_warn("pid %d: entry points handed out: %llu wrapped, %llu gpuspy's already, %llu unwrapped "
		"(real pointer differed), %llu passed through (not a real function)",
		(int)getpid(), (unsigned long long)__atomic_load_n(&wrapped, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&already_ours, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&mismatches, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&refused, __ATOMIC_RELAXED));
}

GS_MODULE(symbols, 120, .end = symbols_end);
