/* SPDX-License-Identifier: MIT */
/*
 * Symbolization of recorded call stacks with libdwfl, offline: the trace's
 * module entries say which file was loaded at which bias, and libdwfl reads
 * that file's symbols and DWARF (or its separate debug file, by build id).
 */
#include <pthread.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"
#include "read/demangle.h"
#include "read/symbolize.h"

struct module {
	uint64_t start, end, bias;
	const char *path;
	const unsigned char *build_id;
	int build_id_len;
};

/* uint64 key -> pointer, open addressing (power-of-two size, half full). */
struct u64map {
	struct u64slot {
		uint64_t key;
		void *val;
		int used;
	} *v;
	size_t n, cap;
};

struct gs_symbolizer {
	const struct gs_trace *t;
	struct module *mods;
	size_t nmods;
	struct u64map pcs;    /* return address -> rendered frame */
	struct u64map stacks; /* stack id -> struct gs_stack (NULL: not a stack) */
};

struct gs_symbolizer *gs_sym_open(const struct gs_trace *t)
{
	struct gs_symbolizer *s = xcalloc(1, sizeof(*s));
	s->t = t;
	size_t cap = 0;
	for (uint32_t id = gs_trace_next_entry(t, 0); id; id = gs_trace_next_entry(t, id)) {
		const unsigned char *d;
		uint32_t len;
		struct gspy_module_entry m;
		if (!gs_trace_entry(t, id, &d, &len) || len < sizeof(m) || d[0] != GSPY_ENTRY_MODULE)
			continue;
		memcpy(&m, d, sizeof(m));
		if (s->nmods == cap) {
			cap = cap ? cap * 2 : 64;
			struct module *n = realloc(s->mods, cap * sizeof(*n));
			if (!n)
				break;
			s->mods = n;
		}
		s->mods[s->nmods++] = (struct module){ m.start, m.end, m.bias, (const char *)d + sizeof(m),
						       d + offsetof(struct gspy_module_entry, build_id),
						       m.build_id_len <= sizeof(m.build_id) ? m.build_id_len : 0 };
	}
	return s;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	/* No section_address: it is for ET_REL modules only. */
};

/*
 * One libdwfl handle per distinct file (path and build id), shared by
 * every trace that loaded it, with the file reported at bias 0: a frame's
 * address minus its module's bias in that trace is what it looks up. A
 * handle per trace, with all of the trace's modules reported, kept ~16 MiB
 * a trace (200 traces of one job took 3.3 GB); files are opened only when
 * a frame needs them. Handles live to the process's exit (the elfutils
 * dwfl_end() problem in gs_sym_close), bounded by the files, not traces.
 */
static struct file_dwfl {
	char *path;
	unsigned char id[24];
	int idlen;
	Dwfl *d;
	Dwfl_Module *m; /* NULL: not a usable file, or another build than the trace's */
} *files;
static size_t nfiles, files_cap;

static Dwfl_Module *module_file(const struct module *mi)
{
	for (size_t i = 0; i < nfiles; i++)
		if (files[i].idlen == mi->build_id_len && !memcmp(files[i].id, mi->build_id, (size_t)mi->build_id_len) &&
		    !strcmp(files[i].path, mi->path))
			return files[i].m;
	if (nfiles == files_cap) {
		files_cap = files_cap ? 2 * files_cap : 64;
		files = xrealloc(files, files_cap * sizeof(*files));
	}
	struct file_dwfl *f = &files[nfiles++];
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(mi->path);
	f->idlen = mi->build_id_len;
	memcpy(f->id, mi->build_id, (size_t)mi->build_id_len);
	/* A path must be a regular file (a hostile trace may name /dev/tty)
	 * and, when the trace has its build id, the same build: a library
	 * updated since would give wrong names, so its frames stay
	 * module+offset. */
	const char *p = mi->path;
	struct stat st;
	if (p[0] != '/' || stat(p, &st) != 0 || !S_ISREG(st.st_mode) || !(f->d = dwfl_begin(&callbacks)))
		return NULL;
	dwfl_report_begin(f->d);
	const char *base = strrchr(p, '/');
	Dwfl_Module *m = dwfl_report_elf(f->d, base ? base + 1 : p, p, -1, 0, false);
	dwfl_report_end(f->d, NULL, NULL);
	const unsigned char *id;
	GElf_Addr vaddr;
	if (m && mi->build_id_len) {
		int n = dwfl_module_build_id(m, &id, &vaddr);
		if (n != mi->build_id_len || memcmp(id, mi->build_id, (size_t)n) != 0) {
			fprintf(stderr, "gpuspy: warning: %s changed since the trace was "
				"taken (build id differs); its frames are not symbolized\n", p);
			m = NULL;
		}
	}
	f->m = m;
	return m;
}

static const struct module *module_of(const struct gs_symbolizer *s, uint64_t a)
{
	for (size_t i = s->nmods; i-- > 0;)
		if (a >= s->mods[i].start && a < s->mods[i].end)
			return &s->mods[i];
	return NULL;
}

static const char *basename_of(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

/* Where pc's function called the outermost function inlined at pc: the
 * line of the frame's own function ("main (app.c:31)"), where the line
 * table gives the inlined body's ("main (cuda_runtime.h:879)", the
 * runtime's cudaMalloc<T> template). 0 when pc is in no inlined code. */
static int inlined_call_site(Dwfl_Module *m, uint64_t rel, const char **file, int *line)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(m, rel, &bias);
	Dwarf_Die *scopes = NULL;
	int n = cu ? dwarf_getscopes(cu, rel - bias, &scopes) : 0;
	if (n > 0) {
		/* Those are the innermost scope and its definition's parents;
		 * the chain of inlined calls out to the function is its own. */
		Dwarf_Die inner = scopes[0];
		free(scopes);
		scopes = NULL;
		n = dwarf_getscopes_die(&inner, &scopes);
	}
	int outer = -1; /* scopes run from the innermost out */
	for (int i = 0; i < n && dwarf_tag(&scopes[i]) != DW_TAG_subprogram; i++)
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine)
			outer = i;
	Dwarf_Attribute a;
	Dwarf_Word fidx = 0, ln = 0;
	Dwarf_Files *srcs = NULL;
	size_t nsrcs = 0;
	const char *f = NULL;
	if (outer >= 0 && dwarf_formudata(dwarf_attr(&scopes[outer], DW_AT_call_file, &a), &fidx) == 0 &&
	    dwarf_formudata(dwarf_attr(&scopes[outer], DW_AT_call_line, &a), &ln) == 0 && ln > 0 &&
	    dwarf_getsrcfiles(cu, &srcs, &nsrcs) == 0 && fidx < nsrcs)
		f = dwarf_filesrc(srcs, fidx, NULL, NULL);
	free(scopes);
	if (!f)
		return 0;
	*file = f;
	*line = (int)ln;
	return 1;
}

/* Frames of a module: "function+0xOFF (module)", "module+0xOFF", or the
 * module's name itself. */
static int in_module(const char *f, const char *mod)
{
	size_t n = strlen(mod);
	if (!strncmp(f, mod, n))
		return 1;
	const char *p = strrchr(f, '(');
	return p && !strncmp(p + 1, mod, n);
}

/* Modules (by the start of their file name) that are not the program's;
 * lib: a library's, which never holds the program's own code (not "cupy"
 * or "_C.cpython", names a program's own module may take). */
static const struct { const char *mod, *owner; int lib; } mods[] = {
	{ "libcuda.so", "the CUDA driver", 1 }, { "libcudart.so", "the CUDA runtime", 1 },
	{ "libcublas", "cuBLAS", 1 }, { "libcudnn", "cuDNN", 1 }, { "libnccl", "NCCL", 1 },
	{ "libcufft", "cuFFT", 1 }, { "libcurand", "cuRAND", 1 }, { "libcusparse", "cuSPARSE", 1 },
	{ "libcusolver", "cuSOLVER", 1 }, { "libnvrtc", "NVRTC", 1 }, { "libnvJitLink", "nvJitLink", 1 },
	{ "libc10", "PyTorch", 1 }, { "libtorch", "PyTorch", 1 }, { "libshm", "PyTorch", 1 },
	{ "_C.cpython", "PyTorch", 0 }, { "xla_", "XLA", 0 }, { "libxla", "XLA", 1 }, { "libjax", "JAX", 1 },
	{ "_jax", "JAX", 0 }, { "jaxlib", "JAX", 0 }, { "cupy", "CuPy", 0 },
	{ "libpython3", "the Python interpreter", 1 }, { "python3", "the Python interpreter", 0 },
	{ "libstdc++", "the C++ library", 1 }, { "libc.so", "the C library", 1 },
	{ "libgcc_s", "the C library", 1 }, { "libpthread", "the C library", 1 },
	{ "ld-linux", "the loader", 1 }, { "libffi", "ctypes", 1 }, { "libgpuspy", "gpuspy", 1 },
};

/* The Python interpreter's executable: "python3", "python3.11". */
static int python_executable(const char *name)
{
	if (strncmp(name, "python3", 7))
		return 0;
	size_t digits = name[7] == '.' ? strspn(name + 8, "0123456789") : 0;
	return !name[7] || (digits && !name[8 + digits]);
}

/* A library's module, or the interpreter's executable: its frames keep
 * their module, not their line. */
static int library_module(const char *name)
{
	if (python_executable(name))
		return 1;
	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++)
		if (mods[i].lib && !strncmp(name, mods[i].mod, strlen(mods[i].mod)))
			return 1;
	return 0;
}

const char *gs_module_owner(const char *f)
{
	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++)
		if (in_module(f, mods[i].mod))
			return mods[i].owner;
	/* A compiled Python module ("runtime.cpython-312-x86_64-linux-gnu.so",
	 * CuPy's and others'): the program's own line is the Python frame
	 * that called into it. */
	const char *ext = strstr(f, ".cpython-");
	if (ext && strstr(ext, ".so"))
		return "a Python extension module";
	return NULL;
}

/* One return address, rendered. */
static char *render_pc(struct gs_symbolizer *s, uint64_t pc)
{
	uint64_t a = pc ? pc - 1 : 0; /* the call instruction, not the return */
	const struct module *mod = module_of(s, a);
	Dwfl_Module *m = mod ? module_file(mod) : NULL;
	uint64_t rel = mod ? a - mod->bias : a; /* the file is reported at bias 0 */
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *fn = m ? dwfl_module_addrinfo(m, rel, &off, &sym, NULL, NULL, NULL) : NULL;
	Dwfl_Line *l = m ? dwfl_module_getsrc(m, rel) : NULL;
	int line = 0;
	const char *file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
	if (file && fn)
		inlined_call_site(m, rel, &file, &line);
	char buf[4096];
	/* A library's frame keeps its module, not its line, where its debug
	 * information is at hand (a Python built from source, libc6-dbg): the
	 * report tells the program's own frames from theirs by module,
	 * "run_mod+0x8f (python3.11)", where "run_mod (pythonrun.c:1731)"
	 * would pass for the program's. */
	if (fn && file && line > 0 && !(mod && library_module(basename_of(mod->path))))
		snprintf(buf, sizeof(buf), "%s (%s:%d)", gs_demangle(fn), basename_of(file), line);
	else if (fn)
		snprintf(buf, sizeof(buf), "%s+0x%llx (%s)", gs_demangle(fn), (unsigned long long)off,
			 mod ? basename_of(mod->path) : "?");
	else if (mod)
		snprintf(buf, sizeof(buf), "%s+0x%llx", basename_of(mod->path),
			 (unsigned long long)(a - mod->bias));
	else
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)a);
	return xstrdup(buf);
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	return x ^ (x >> 33);
}

/* The slot of key; *fresh says it was just added (its value is NULL). */
static void **map_slot(struct u64map *m, uint64_t key, int *fresh)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct u64slot *v = xcalloc(cap, sizeof(*v));
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->v[i].used)
				continue;
			size_t k = hash64(m->v[i].key) & (cap - 1);
			while (v[k].used)
				k = (k + 1) & (cap - 1);
			v[k] = m->v[i];
		}
		free(m->v);
		m->v = v;
		m->cap = cap;
	}
	size_t k = hash64(key) & (m->cap - 1);
	for (; m->v[k].used; k = (k + 1) & (m->cap - 1))
		if (m->v[k].key == key) {
			*fresh = 0;
			return &m->v[k].val;
		}
	m->v[k].used = 1;
	m->v[k].key = key;
	m->n++;
	*fresh = 1;
	return &m->v[k].val;
}

static const char *frame_text(struct gs_symbolizer *s, uint64_t pc)
{
	int fresh;
	void **v = map_slot(&s->pcs, pc, &fresh);
	if (fresh)
		*v = render_pc(s, pc);
	return *v;
}

/* "function (file)" and a line -> "function (file:line)". */
static char *python_frame(const char *code, uint32_t line)
{
	char buf[2048];
	size_t n = strlen(code);
	if (n >= 2 && code[n - 1] == ')' && n < sizeof(buf) - 16)
		snprintf(buf, sizeof(buf), "%.*s:%u)", (int)(n - 1), code, line);
	else
		snprintf(buf, sizeof(buf), "%s:%u", code, line);
	return xstrdup(buf);
}

static struct gs_stack *build(struct gs_symbolizer *s, uint32_t id)
{
	const unsigned char *d;
	uint32_t len;
	struct gspy_stack_entry h;
	if (!gs_trace_entry(s->t, id, &d, &len) || len < sizeof(h) || d[0] != GSPY_ENTRY_STACK)
		return NULL;
	memcpy(&h, d, sizeof(h));
	if (len != sizeof(h) + (size_t)h.native * 8 + (size_t)h.python * 8)
		return NULL;
	struct gs_stack *st = xcalloc(1, sizeof(*st));
	st->frames = xcalloc((size_t)h.native + h.python + 1, sizeof(char *));
	const unsigned char *p = d + sizeof(h), *py = p + (size_t)h.native * 8;
	/* Python frames take the place of the interpreter's own frames. */
	for (uint32_t i = 0; i < h.native; i++) {
		uint64_t pc;
		memcpy(&pc, p + (size_t)i * 8, 8);
		const char *f = frame_text(s, pc);
		if (h.python && !strncmp(f, "_PyEval_EvalFrame", 17))
			break;
		st->frames[st->n++] = xstrdup(f);
	}
	for (uint32_t i = 0; i < h.python; i++) {
		uint32_t pair[2];
		memcpy(pair, py + (size_t)i * 8, 8);
		st->frames[st->n++] = python_frame(gs_trace_string(s->t, pair[0]), pair[1]);
	}
	return st;
}

const struct gs_stack *gs_sym_stack(struct gs_symbolizer *s, uint32_t id)
{
	if (!s || !id)
		return NULL;
	/* The file handles (module_file) and elfutils' are shared by the
	 * traces, which gpuspy report reads on several threads. */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int fresh;
	void **v = map_slot(&s->stacks, id, &fresh);
	if (fresh) {
		pthread_mutex_lock(&lock);
		*v = build(s, id);
		pthread_mutex_unlock(&lock);
	}
	return *v;
}

void gs_sym_close(struct gs_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->pcs.cap; i++)
		free(s->pcs.v[i].val);
	for (size_t i = 0; i < s->stacks.cap; i++) {
		struct gs_stack *st = s->stacks.v[i].val;
		if (!st)
			continue;
		for (uint32_t j = 0; j < st->n; j++)
			free(st->frames[j]);
		free(st->frames);
		free(st);
	}
	free(s->pcs.v);
	free(s->stacks.v);
	free(s->mods);
	/* The file handles stay (module_file): after a separate debug file
	 * was read (Debian's libc6-dbg, found by build id), elfutils 0.188
	 * frees an invalid pointer in dwfl_end() about 1 run in 20 (seen
	 * here, with address randomisation). */
	free(s);
}
