/* SPDX-License-Identifier: MIT */
/*
 * Python frames without the GIL (GPUSPY_PYTHON_FRAMES=1). PyTorch's
 * bindings release the GIL around each operation, so the CUDA calls it
 * makes come from a thread that holds no GIL, where the C API may not be
 * called. The thread's own frame chain is still there, and nothing but
 * that thread changes it while it is inside gpuspy: this reads it directly,
 * as py-spy does from outside the process, as (code object, line) pairs.
 *
 * The layout is not assumed from headers of one CPython version: where a
 * thread state keeps its current frame, where a frame keeps its code, its
 * caller and its instruction, where a code object keeps its names, first
 * line and line table, and where a str keeps its characters are learned
 * once, holding the GIL, by comparing what the C API says of the caller's
 * own stack with what memory holds. Each probe of a guessed pointer goes
 * through write() to a pipe, so that a wrong guess costs EFAULT, not a
 * fault. Unless every part is found and agrees for every frame of that
 * stack, raw reading stays off. The start-up hook (python/sitecustomize.py)
 * calls gpuspy_python_frames_learn() through ctypes.PyDLL, which keeps the
 * GIL; without it (GPUSPY_TORCH=0), the first call stack taken holding the
 * GIL learns. CPython 3.11 and later (their frames and line table format).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs.h"
#include "pyframes.h"
#include "symbols.h"
#include "writer.h"

static struct {
	int on;                   /* learned: raw reading is on */
	int tried;
	int via_cframe;           /* 3.11/3.12: tstate->cframe->current_frame */
	size_t ts_off, cf_off;    /* the thread state's frame (or cframe) field, the cframe's frame field */
	size_t code_off, prev_off, ip_off; /* in an interpreter frame */
	size_t name_off, file_off, table_off, first_off; /* in a code object */
	size_t code_start;        /* the code object's size: its code units follow */
	size_t str_data;          /* a compact ASCII str's characters */
	const void *code_type, *str_type, *bytes_type;
	const void *skip[4];      /* codes of frames the C API passes over (3.12's entry shim) */
	unsigned nskip;
	void *(*this_state)(void); /* PyGILState_GetThisThreadState */
	int (*is_init)(void);
} L;

/* ---- learning, holding the GIL ------------------------------------------------- */

static int probe_fd[2] = { -1, -1 };

/* n bytes at addr into out, or -1 if addr is not readable. */
static int peek(const void *addr, void *out, size_t n)
{
	ssize_t w = write(probe_fd[1], addr, n);
	if (w == (ssize_t)n)
		return read(probe_fd[0], out, n) == (ssize_t)n ? 0 : -1;
	/* Cut short by an unreadable page: what did go in comes out, so that
	 * the next probe reads its own bytes. */
	for (char sink[256]; w > 0;) {
		ssize_t r = read(probe_fd[0], sink, (size_t)w < sizeof(sink) ? (size_t)w : sizeof(sink));
		if (r <= 0)
			break;
		w -= r;
	}
	return -1;
}

static uintptr_t peekp(uintptr_t addr)
{
	uintptr_t v = 0;
	return addr && peek((const void *)addr, &v, sizeof(v)) == 0 ? v : 0;
}

/* A varint of the line table: 6 bits a byte, bit 6 set when more follow. */
static unsigned varint(const uint8_t *t, size_t n, size_t *i)
{
	unsigned v = 0, shift = 0;
	while (*i < n) {
		uint8_t b = t[(*i)++];
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64) || shift > 30)
			break;
	}
	return v;
}

/* The line of code unit `unit` from a 3.11+ location table (CPython's
 * Objects/locations.md); -1 when it has none. */
static int table_line(const uint8_t *t, size_t n, int first, size_t unit)
{
	int line = first;
	size_t at = 0, i = 0;
	while (i < n) {
		uint8_t h = t[i++];
		if (!(h & 0x80))
			return -1; /* not an entry's first byte */
		unsigned code = (h >> 3) & 15, len = (h & 7) + 1;
		int delta = 0, none = 0;
		if (code == 15) {
			none = 1;
		} else if (code == 14) {
			unsigned v = varint(t, n, &i);
			delta = v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
			varint(t, n, &i); /* end line */
			varint(t, n, &i); /* column */
			varint(t, n, &i); /* end column */
		} else if (code == 13) {
			unsigned v = varint(t, n, &i);
			delta = v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
		} else if (code >= 10) {
			delta = (int)code - 10;
			i += 2;
		} else {
			i += 1;
		}
		line += delta;
		if (unit < at + len)
			return none ? -1 : line;
		at += len;
	}
	return -1;
}

/* The line of frame f whose code is c, by the layout learned so far. */
static int raw_line(uintptr_t f, uintptr_t c)
{
	uintptr_t ip = *(const uintptr_t *)(f + L.ip_off);
	intptr_t size = *(const intptr_t *)(c + 16); /* ob_size: code units */
	uintptr_t start = c + L.code_start;
	if (ip < start || ip >= start + 2 * (uintptr_t)size)
		return -1;
	uintptr_t table = *(const uintptr_t *)(c + L.table_off);
	if (!table || *(const void *const *)(table + 8) != L.bytes_type)
		return -1;
	intptr_t tn = *(const intptr_t *)(table + 16);
	int first = *(const int *)(c + L.first_off);
	return table_line((const uint8_t *)(table + 32), (size_t)tn, first, (ip - start) / 2);
}

enum { LEARN_FRAMES = 6 };

struct truth {
	uintptr_t code[LEARN_FRAMES];
	int line[LEARN_FRAMES];
	unsigned n;
};

/* The first interpreter frame of thread state ts whose code is want: by
 * the field at L.ts_off (and L.cf_off), trying every offset. */
static uintptr_t find_top(uintptr_t ts, uintptr_t want)
{
	for (size_t off = 0; off < 512; off += 8) {
		uintptr_t v = peekp(ts + off);
		if (!v)
			continue;
		for (int via = 0; via < 2; via++)
			for (size_t cf = 0; cf < (via ? 24 : 8); cf += 8) {
				uintptr_t f = via ? peekp(v + cf) : v;
				if (!f)
					continue;
				for (size_t co = 0; co < 64; co += 8)
					if (peekp(f + co) == want) {
						L.ts_off = off;
						L.via_cframe = via;
						L.cf_off = cf;
						L.code_off = co;
						return f;
					}
			}
	}
	return 0;
}

/* The caller field: following it from f reaches each frame of the truth
 * in order, passing over at most two others each time (whose codes are
 * remembered as frames to skip). The frames found go to out. */
static int find_prev(uintptr_t f, const struct truth *t, uintptr_t *out)
{
	for (size_t po = 0; po < 96; po += 8) {
		if (po == L.code_off)
			continue;
		uintptr_t g = f, skip[4];
		unsigned nskip = 0, k = 1;
		out[0] = f;
		while (k < t->n) {
			g = peekp(g + po);
			unsigned extra = 0;
			while (g && peekp(g + L.code_off) != t->code[k] && extra < 2) {
				uintptr_t c = peekp(g + L.code_off);
				if (nskip < 4)
					skip[nskip++] = c;
				g = peekp(g + po);
				extra++;
			}
			if (!g || peekp(g + L.code_off) != t->code[k])
				break;
			out[k++] = g;
		}
		if (k == t->n) {
			L.prev_off = po;
			L.nskip = nskip;
			for (unsigned i = 0; i < nskip; i++)
				L.skip[i] = (const void *)skip[i];
			return 0;
		}
	}
	return -1;
}

/* A pointer field of every code object: where each holds its own value. */
static int field_of(const struct truth *t, uintptr_t *vals, size_t *out)
{
	for (size_t off = 24; off + 8 <= L.code_start; off += 8) {
		unsigned i = 0;
		while (i < t->n && *(const uintptr_t *)(t->code[i] + off) == vals[i])
			i++;
		if (i == t->n) {
			*out = off;
			return 0;
		}
	}
	return -1;
}

static struct {
	void *(*get_frame)(void);
	void *(*frame_code)(void *);
	void *(*frame_back)(void *);
	int (*frame_line)(void *);
	void *(*getattr)(void *, const char *);
	long (*as_long)(void *);
	const char *(*utf8)(void *);
	void (*decref)(void *);
	void *(*tstate)(void); /* this thread's current thread state, NULL when it holds no GIL */
	int (*gil)(void);
	int (*gc_disable)(void), (*gc_enable)(void); /* 3.10 on */
	const unsigned long *version;
} api;

/*
 * This thread's current thread state, or NULL. From 3.12 CPython keeps it
 * per thread (and a thread that released the GIL has none); before, the
 * one current state is the GIL holder's, whichever thread that is: it is
 * this thread's only when it is the state this thread was given
 * (PyGILState_GetThisThreadState), so a thread inside a sub-interpreter
 * before 3.12 is read from its main-interpreter state.
 */
static void *current_state(void)
{
	void *cur = api.tstate ? api.tstate() : NULL;
	if (!cur || (api.version && *api.version >= 0x030c0000))
		return cur;
	return L.this_state && cur == L.this_state() ? cur : NULL;
}

/*
 * Whether this thread holds the GIL: it has a current thread state.
 * Not PyGILState_Check, which says yes to every thread once any
 * sub-interpreter was made (it stops checking), and the frame functions
 * then read a thread state that is not there.
 */
int gs_py_holds_gil(void)
{
	if (api.tstate)
		return current_state() != NULL;
	return api.gil && api.gil();
}

/*
 * The frame functions of the C API make frame objects on 3.11 and later
 * (the interpreter's frames are not objects until asked for), and making
 * one may start a collection: finalizers and weakref callbacks would run
 * inside the traced call, in the middle of whatever called it (a realloc
 * of a list's items, a CUDA call of a binding holding the GIL). The
 * collector is held off while they run; 1: it was on, for gs_py_gc_resume.
 */
int gs_py_gc_pause(void)
{
	return api.gc_disable && api.gc_enable ? api.gc_disable() : 0;
}

void gs_py_gc_resume(int was_on)
{
	if (was_on)
		api.gc_enable();
}

int gs_pyframes_on(void)
{
	return __atomic_load_n(&L.on, __ATOMIC_ACQUIRE);
}

void gs_pyframes_lookup(void)
{
	void *h = RTLD_DEFAULT;
	api.get_frame = gs_real_dlsym(h, "PyEval_GetFrame");
	api.frame_code = gs_real_dlsym(h, "PyFrame_GetCode");
	api.frame_back = gs_real_dlsym(h, "PyFrame_GetBack");
	api.frame_line = gs_real_dlsym(h, "PyFrame_GetLineNumber");
	api.getattr = gs_real_dlsym(h, "PyObject_GetAttrString");
	api.as_long = gs_real_dlsym(h, "PyLong_AsLong");
	api.utf8 = gs_real_dlsym(h, "PyUnicode_AsUTF8");
	api.decref = gs_real_dlsym(h, "Py_DecRef");
	api.gil = gs_real_dlsym(h, "PyGILState_Check");
	api.tstate = gs_real_dlsym(h, "PyThreadState_GetUnchecked"); /* 3.13 on */
	if (!api.tstate)
		api.tstate = gs_real_dlsym(h, "_PyThreadState_UncheckedGet");
	api.gc_disable = gs_real_dlsym(h, "PyGC_Disable");
	api.gc_enable = gs_real_dlsym(h, "PyGC_Enable");
	api.version = gs_real_dlsym(h, "Py_Version"); /* 3.11 on */
	L.this_state = gs_real_dlsym(h, "PyGILState_GetThisThreadState");
	L.is_init = gs_real_dlsym(h, "Py_IsInitialized");
	L.code_type = gs_real_dlsym(h, "PyCode_Type");
	L.str_type = gs_real_dlsym(h, "PyUnicode_Type");
	L.bytes_type = gs_real_dlsym(h, "PyBytes_Type");
}

/* Long (about 120 lines): one pass over the interpreter's layout, each
 * offset learned in turn from the one before; split, the order it depends on
 * would be spread over helpers. */
GS_API int gpuspy_python_frames_learn(void)
{
	void *(*get_frame)(void) = api.get_frame;
	void *(*frame_code)(void *) = api.frame_code;
	void *(*frame_back)(void *) = api.frame_back;
	int (*frame_line)(void *) = api.frame_line;
	void *(*getattr)(void *, const char *) = api.getattr;
	long (*as_long)(void *) = api.as_long;
	const char *(*utf8)(void *) = api.utf8;
	void (*decref)(void *) = api.decref;
	const unsigned long *version = api.version;
	if (!(gs_cfg.stacks & GSPY_STACKS_PYTHON))
		return -1; /* GPUSPY_PYTHON_FRAMES is off */
	if (__atomic_exchange_n(&L.tried, 1, __ATOMIC_ACQ_REL))
		return L.on ? 0 : -1; /* once: the start-up hook, else the first stack holding the GIL */
	if (!get_frame || !frame_code || !frame_back || !frame_line || !getattr || !as_long || !utf8 || !decref ||
	    !L.this_state || !L.is_init || !L.code_type || !L.str_type || !L.bytes_type || !version ||
	    *version < 0x030b0000 || !gs_py_holds_gil())
		return -1;
	if (probe_fd[0] < 0 && pipe2(probe_fd, O_CLOEXEC) != 0)
		return -1;
	int gc = gs_py_gc_pause(); /* the walk below makes frame objects */
	/* The truth: this stack through the C API. */
	struct truth t = { .n = 0 };
	void *f = get_frame(), *owned = NULL;
	while (f && t.n < LEARN_FRAMES) {
		void *c = frame_code(f);
		t.code[t.n] = (uintptr_t)c;
		t.line[t.n] = frame_line(f);
		t.n++;
		decref(c); /* the frame keeps it */
		void *b = frame_back(f);
		if (owned)
			decref(owned);
		f = owned = b;
	}
	if (owned)
		decref(owned);
	int ok = -1;
	uintptr_t frames[LEARN_FRAMES];
	uintptr_t ts = (uintptr_t)L.this_state();
	/* The code object's fixed part: its type's basic size (code units follow). */
	L.code_start = (size_t)*(const intptr_t *)((const char *)L.code_type + 32);
	if (t.n < 3 || !ts || L.code_start < 64 || L.code_start > 1024)
		goto out;
	uintptr_t top = find_top(ts, t.code[0]);
	if (!top || find_prev(top, &t, frames) != 0)
		goto out;
	/* The code object's names, line table and first line. */
	uintptr_t names[LEARN_FRAMES], files[LEARN_FRAMES], tables[LEARN_FRAMES];
	for (unsigned i = 0; i < t.n; i++) {
		void *q = getattr((void *)t.code[i], "co_qualname"), *fi = getattr((void *)t.code[i], "co_filename");
		void *tb = getattr((void *)t.code[i], "co_linetable");
		names[i] = (uintptr_t)q;
		files[i] = (uintptr_t)fi;
		tables[i] = (uintptr_t)tb;
		for (void **p = (void *[]){ q, fi, tb }, **e = p + 3; p < e; p++)
			if (*p)
				decref(*p); /* the code keeps them */
	}
	if (field_of(&t, names, &L.name_off) || field_of(&t, files, &L.file_off) ||
	    field_of(&t, tables, &L.table_off))
		goto out;
	int found = 0;
	for (size_t off = 24; off + 4 <= L.code_start && !found; off += 4) {
		unsigned i = 0;
		for (; i < t.n; i++) {
			void *fl = getattr((void *)t.code[i], "co_firstlineno");
			long v = fl ? as_long(fl) : -1;
			if (fl)
				decref(fl);
			if (*(const int *)(t.code[i] + off) != (int)v)
				break;
		}
		if (i == t.n) {
			L.first_off = off;
			found = 1;
		}
	}
	if (!found)
		goto out;
	/* The instruction: the field whose line is the C API's for every frame. */
	found = 0;
	for (size_t off = 0; off < 96 && !found; off += 8) {
		if (off == L.code_off || off == L.prev_off)
			continue;
		L.ip_off = off;
		unsigned i = 0;
		for (; i < t.n; i++) {
			uintptr_t ip = peekp(frames[i] + off);
			if (ip < t.code[i] + L.code_start || raw_line(frames[i], t.code[i]) != t.line[i])
				break;
		}
		found = i == t.n;
	}
	if (!found)
		goto out;
	/* A compact ASCII str's characters, by this stack's function names. */
	found = 0;
	const char *s = utf8((void *)names[0]);
	for (size_t off = 32; s && off <= 64 && !found; off += 8)
		if (!memcmp((const char *)names[0] + off, s, strlen(s) + 1))
			L.str_data = off, found = 1;
	if (!found)
		goto out;
	ok = 0;
out:
	gs_py_gc_resume(gc);
	/* The probes are done: no descriptor of gpuspy's stays open (and the
	 * pipe is free for a fault's, gs_pyframes_lines, once reading is on). */
	close(probe_fd[0]);
	close(probe_fd[1]);
	probe_fd[0] = probe_fd[1] = -1;
	if (ok == 0) {
		__atomic_store_n(&L.on, 1, __ATOMIC_RELEASE);
		return 0;
	}
	if (gs_optu(GS_OPT_DEBUG))
		gs_warn("Python frames without the GIL: layout not learned; only calls holding the GIL get them");
	return -1;
}

/* ---- reading, without the GIL ------------------------------------------------ */

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
GS_FORK_LOCK(pyframes, names_lock);
#define NAMES_CAP 4096
static struct { uintptr_t code; uint32_t id; } names[NAMES_CAP];

/* A compact ASCII str's characters, or "?". */
static const char *str_of(uintptr_t o)
{
	if (!o || *(const void *const *)(o + 8) != L.str_type)
		return "?";
	uint8_t state = *(const uint8_t *)(o + 32);
	if (!(state & 0x20) || !(state & 0x40)) /* compact, ascii */
		return "?";
	return (const char *)(o + L.str_data);
}

static uint32_t raw_code_id(uintptr_t c)
{
	uint32_t k = (uint32_t)((c >> 4) * 2654435761u) & (NAMES_CAP - 1), id = 0;
	pthread_mutex_lock(&names_lock);
	for (uint32_t i = 0; i < 8; i++, k = (k + 1) & (NAMES_CAP - 1)) {
		if (names[k].code == c) {
			id = names[k].id;
			break;
		}
		if (!names[k].code) {
			char buf[1024];
			snprintf(buf, sizeof(buf), "%s (%s)", str_of(*(const uintptr_t *)(c + L.name_off)),
				 str_of(*(const uintptr_t *)(c + L.file_off)));
			id = gs_intern(buf);
			if (id) {
				names[k].code = c;
				names[k].id = id;
			}
			break;
		}
	}
	pthread_mutex_unlock(&names_lock);
	return id;
}

/* This thread's innermost interpreter frame, 0 when reading is off. */
static uintptr_t top_frame(void)
{
	if (!__atomic_load_n(&L.on, __ATOMIC_ACQUIRE) || !L.is_init())
		return 0;
	/* Holding the GIL, the state it runs on (a sub-interpreter's, from
	 * 3.12); else the one this thread was given. */
	uintptr_t ts = (uintptr_t)current_state();
	if (!ts)
		ts = (uintptr_t)L.this_state();
	uintptr_t f = ts ? *(const uintptr_t *)(ts + L.ts_off) : 0;
	if (f && L.via_cframe)
		f = *(const uintptr_t *)(f + L.cf_off);
	return f;
}

/* Frame f's code object, 0 for one the C API passes over. */
static uintptr_t own_code(uintptr_t f)
{
	uintptr_t c = *(const uintptr_t *)(f + L.code_off);
	if (!c || *(const void *const *)(c + 8) != L.code_type)
		return 0;
	for (unsigned i = 0; i < L.nskip; i++)
		if ((const void *)c == L.skip[i])
			return 0;
	return c;
}

static uintptr_t caller(uintptr_t f)
{
	return *(const uintptr_t *)(f + L.prev_off);
}

unsigned gs_pyframes_raw(uint32_t (*out)[2], unsigned max)
{
	unsigned n = 0, steps = 0;
	for (uintptr_t f = top_frame(); f && n < max && steps < 256; f = caller(f), steps++) {
		uintptr_t c = own_code(f);
		int line = c ? raw_line(f, c) : -1;
		uint32_t id = line >= 0 ? raw_code_id(c) : 0;
		if (id) {
			out[n][0] = id;
			out[n][1] = (uint32_t)line;
			n++;
		}
	}
	return n;
}

unsigned gs_pyframes_where(uintptr_t (*out)[2], unsigned max)
{
	unsigned n = 0, steps = 0;
	for (uintptr_t f = top_frame(); f && n < max && steps < 64; f = caller(f), steps++) {
		uintptr_t c = own_code(f);
		if (c) {
			out[n][0] = c;
			out[n][1] = *(const uintptr_t *)(f + L.ip_off);
			n++;
		}
	}
	return n;
}

/* raw_line for a frame that may be gone: code object c at instruction ip,
 * every word read through the probe. -1 when c is no code object now. */
static int probed_line(uintptr_t c, uintptr_t ip)
{
	if (peekp(c + 8) != (uintptr_t)L.code_type)
		return -1;
	intptr_t size = (intptr_t)peekp(c + 16);
	uintptr_t start = c + L.code_start, table = peekp(c + L.table_off);
	if (size <= 0 || ip < start || ip >= start + 2 * (uintptr_t)size || !table ||
	    peekp(table + 8) != (uintptr_t)L.bytes_type)
		return -1;
	intptr_t tn = (intptr_t)peekp(table + 16);
	int first = 0, line = -1;
	if (tn <= 0 || tn > (1 << 20) || peek((const void *)(c + L.first_off), &first, sizeof(first)))
		return -1;
	uint8_t *t = malloc((size_t)tn);
	size_t got = 0;
	while (t && got < (size_t)tn) { /* a pipe's worth at a time */
		size_t k = (size_t)tn - got < 4096 ? (size_t)tn - got : 4096;
		if (peek((const void *)(table + 32 + got), t + got, k))
			break;
		got += k;
	}
	if (t && got == (size_t)tn)
		line = table_line(t, (size_t)tn, first, (ip - start) / 2);
	free(t);
	return line;
}

/* str_of through the probe, into buf: "?" unless o is a compact ASCII str
 * still (its first cap - 1 characters). */
static const char *probed_str(uintptr_t o, char *buf, size_t cap)
{
	uint8_t state = 0;
	snprintf(buf, cap, "?");
	if (!o || peekp(o + 8) != (uintptr_t)L.str_type || peek((const void *)(o + 32), &state, 1) ||
	    !(state & 0x20) || !(state & 0x40))
		return buf;
	intptr_t len = (intptr_t)peekp(o + 16);
	if (len <= 0 || (size_t)len >= cap || peek((const void *)(o + L.str_data), buf, (size_t)len))
		return snprintf(buf, cap, "?"), buf;
	buf[len] = 0;
	return buf;
}

/* raw_code_id for a code object that may be gone: its names read through
 * the probe, and not cached (its address may hold another since). */
static uint32_t probed_code_id(uintptr_t c)
{
	char name[256], file[512], buf[1024];
	snprintf(buf, sizeof(buf), "%s (%s)", probed_str(peekp(c + L.name_off), name, sizeof(name)),
		 probed_str(peekp(c + L.file_off), file, sizeof(file)));
	return gs_intern(buf);
}

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
GS_FORK_LOCK(pyframes_probe, probe_lock);

unsigned gs_pyframes_lines(const uintptr_t (*where)[2], unsigned n, uint32_t (*out)[2])
{
	unsigned k = 0;
	if (!n || !__atomic_load_n(&L.on, __ATOMIC_ACQUIRE))
		return 0;
	/* Best effort: another thread's at it (or this one, from a handler),
	 * no line. A write or read is a cancellation point: none while the
	 * lock is held. Non-blocking: a probe never waits on the pipe. */
	int cs = gs_cancel_off();
	if (pthread_mutex_trylock(&probe_lock) == 0) {
		if (probe_fd[0] < 0 && pipe2(probe_fd, O_CLOEXEC | O_NONBLOCK) == 0) {
			for (unsigned i = 0; i < n; i++) {
				int line = probed_line(where[i][0], where[i][1]);
				uint32_t id = line >= 0 ? probed_code_id(where[i][0]) : 0;
				if (id) {
					out[k][0] = id;
					out[k][1] = (uint32_t)line;
					k++;
				}
			}
			close(probe_fd[0]);
			close(probe_fd[1]);
			probe_fd[0] = probe_fd[1] = -1;
		}
		pthread_mutex_unlock(&probe_lock);
	}
	gs_cancel_restore(cs);
	return k;
}
