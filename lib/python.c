/* SPDX-License-Identifier: MIT */
/*
 * PyTorch phases without code changes: when libgpuspy is loaded into a
 * Python interpreter (and GPUSPY_TORCH is not 0), its constructor puts
 * gpuspy's Python helper directory first on PYTHONPATH, before the
 * interpreter reads it. The helper's sitecustomize.py hooks torch when it
 * is imported, removes the directory again and chains to the user's own
 * sitecustomize. Other processes are not touched.
 *
 * gpuspy_torch_fast() gives that helper its phase call as a Python builtin
 * (METH_FASTCALL) instead of a ctypes function: ctypes converts each
 * argument and releases and retakes the GIL, ~0.5 us a call; the builtin
 * costs ~50 ns. With it come builtins that do the helper's per-call work
 * (its wrappers, its forward hook) in C. The Python C API is looked up in
 * the process, never linked.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs.h"
#include "phase.h"
#include "self.h"
#include "symbols.h"
#include "module.h"

static int is_python(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = 0;
	const char *base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	return strncmp(base, "python", 6) == 0;
}

/* In the tree: lib/../python. Installed: <prefix>/lib/../share/gpuspy/python. */
static int helper_dir(char *out, size_t cap)
{
	char lib[PATH_MAX];
	const char *self = gs_self_name();
	if (!self || !realpath(self, lib))
		return -1;
	char *slash = strrchr(lib, '/');
	if (!slash)
		return -1;
	*slash = 0;
	static const char *const rel[] = { "/../python", "/../share/gpuspy/python" };
	for (int i = 0; i < 2; i++) {
		char p[PATH_MAX + 64], file[PATH_MAX + 96];
		snprintf(p, sizeof(p), "%s%s", lib, rel[i]);
		snprintf(file, sizeof(file), "%s/sitecustomize.py", p);
		if (access(file, R_OK) == 0 && realpath(p, out) && strlen(out) < cap)
			return 0;
	}
	return -1;
}

/*
 * Whether the interpreter was told to ignore the environment (-E, -I) or
 * not to import site (-S, -I): then it would not run the helper, and
 * PYTHONPATH would stay changed (under -S, the helper's directory on
 * sys.path; under -E, in what the program's children inherit). Its
 * options, from /proc/self/cmdline: single letters, clustered or not, up
 * to the first that ends them (-c, -m, a script, -, --); -W and -X take
 * an argument, attached or next. Unreadable: as if told (no change).
 */
static int python_told_off(void)
{
	char buf[4096];
	size_t n = gs_self_args(buf, sizeof(buf));
	if (!n)
		return 1;
	const char *a = buf + strlen(buf) + 1, *end = buf + n; /* past argv[0] */
	for (int skip = 0; a < end; a += strlen(a) + 1) {
		if (skip) {
			skip = 0;
			continue;
		}
		if (a[0] != '-' || !a[1] || !strcmp(a, "--"))
			return 0;
		if (a[1] == '-') { /* --help, --version, --check-hash-based-pycs MODE */
			skip = !strcmp(a, "--check-hash-based-pycs");
			continue;
		}
		for (const char *c = a + 1; *c; c++) {
			if (*c == 'E' || *c == 'I' || *c == 'S')
				return 1;
			if (*c == 'c' || *c == 'm')
				return 0;
			if (*c == 'W' || *c == 'X') {
				skip = !c[1];
				break;
			}
		}
	}
	return 0;
}

static void python_setup(void)
{
	if (!gs_optu(GS_OPT_TORCH) || !is_python() || python_told_off())
		return;
	char dir[PATH_MAX];
	if (helper_dir(dir, sizeof(dir)) != 0)
		return;
	/* The helper puts PYTHONPATH back as it was, byte for byte: unset,
	 * empty, or with its empty entries (the current directory). */
	const char *old = getenv("PYTHONPATH");
	size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
	char *v = malloc(n);
	if (!v)
		return;
	snprintf(v, n, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
	if (old)
		setenv("GPUSPY_PYTHONPATH_OLD", old, 1);
	else
		unsetenv("GPUSPY_PYTHONPATH_OLD");
	setenv("PYTHONPATH", v, 1);
	setenv("GPUSPY_PYTHONPATH_ADDED", dir, 1);
	free(v);
}

/* ---- the helper's phase logic as builtins ----------------------------------- */

/*
 * The helper's wrappers (backward, zero_grad, step, the DataLoader's
 * next) and the model's forward pre-hook did their work in Python: ~37
 * thousand instructions a step of the CPU MLP loop (bench/helper_callgrind.sh).
 * Here that work is C: a wrapper is one Python frame that calls
 * gpuspy_torch_call(fn, flags, args, kwargs[, after]), the hook is a
 * builtin, and the phase state (the open lazy phase, the step count) lives
 * here, under the GIL. The Python C API is looked up in the process, never
 * linked; python/gpuspy_torch.py keeps its own Python version for a
 * process without it.
 */
static struct {
	const char *(*bytes)(void *);     /* PyBytes_AsString */
	unsigned long long (*ull)(void *); /* PyLong_AsUnsignedLongLong */
	long (*as_long)(void *);          /* PyLong_AsLong */
	void *(*from_ull)(unsigned long long); /* PyLong_FromUnsignedLongLong */
	void *(*occurred)(void);          /* PyErr_Occurred */
	void (*clear)(void);              /* PyErr_Clear */
	void (*fetch)(void **, void **, void **);  /* PyErr_Fetch */
	void (*restore)(void *, void *, void *);  /* PyErr_Restore */
	void (*set_string)(void *, const char *); /* PyErr_SetString */
	void **type_error;                /* &PyExc_TypeError */
	void *(*call)(void *, void *, void *);    /* PyObject_Call */
	void *(*call0)(void *, void *);   /* PyObject_CallObject(f, NULL) */
	void (*decref)(void *);           /* Py_DecRef */
	void *(*none)(const char *, ...); /* Py_BuildValue(""): a new reference to None */
} api;

/* The helper's phases, in the order of its slot numbers. */
enum { T_DATA, T_FORWARD, T_BACKWARD, T_OPTIMIZER, T_SLOTS };
static const char *const t_name[T_SLOTS] = { "data", "forward", "backward", "optimizer" };
#define T_LAZY 0x10 /* stays open until the next phase begins (data, forward), or it raises */
#define T_STEP 0x20 /* an optimizer step: the step count goes up after it */

static struct {
	int open;                /* the open lazy phase's slot + 1, 0 none */
	unsigned long long step; /* optimizer steps completed */
	int learning;            /* call a step's `after` (the helper is learning) */
} tp;
/* Phases this thread is inside (Tensor.backward -> autograd.backward). */
static __thread unsigned t_inside __attribute__((tls_model("initial-exec")));

/* The open lazy phase ends (pause, exit, or another phase begins). */
static void t_close(void)
{
	if (tp.open) {
		gpuspy_torch_phase(t_name[tp.open - 1], tp.step, 0);
		tp.open = 0;
	}
}

static void t_phase(int slot, int begin)
{
	if (begin || slot + 1 != tp.open)
		t_close();
	gpuspy_torch_phase(t_name[slot], tp.step, begin);
}

static void t_begin_lazy(int slot)
{
	if (tp.open != slot + 1) {
		t_phase(slot, 1);
		tp.open = slot + 1;
	}
}

static void *type_error(const char *what)
{
	api.set_string(*api.type_error, what);
	return NULL;
}

/* gpuspy_torch_phase(name: bytes, step: int, begin: int) -> None. Never
 * raises: a call it cannot read records nothing. */
static void *fast_phase(void *self, void *const *args, ssize_t nargs)
{
	(void)self;
	if (nargs == 3) {
		const char *name = api.bytes(args[0]);
		unsigned long long step = name ? api.ull(args[1]) : 0;
		unsigned long long begin = name ? api.ull(args[2]) : 0;
		if (name && !api.occurred()) {
			gpuspy_torch_phase(name, step, begin != 0);
			return api.none("");
		}
	}
	if (api.occurred())
		api.clear();
	return api.none("");
}

/*
 * The helper's `after` (the end of learning, after a step) is gpuspy's work,
 * never the program's: whatever it raises is dropped here (the helper notes
 * its own errors), and the step's own exception (rc NULL) is set aside
 * around it and put back as it was.
 */
static void t_after(void *after, void *rc)
{
	void *et = NULL, *ev = NULL, *tb = NULL;
	if (!rc)
		api.fetch(&et, &ev, &tb);
	void *r = api.call0(after, NULL);
	if (r)
		api.decref(r);
	else
		api.clear();
	if (!rc)
		api.restore(et, ev, tb);
}

/* gpuspy_torch_call(fn, flags, args: tuple, kwargs: dict[, after]): fn's
 * result, its phase (flags: slot | T_LAZY | T_STEP) around it, once per
 * thread however deeply nested; after a step, `after()` while learning. */
static void *fast_call(void *self, void *const *a, ssize_t n)
{
	(void)self;
	if (n < 4 || n > 5)
		return type_error("gpuspy_torch_call(fn, flags, args, kwargs[, after])");
	long flags = api.as_long(a[1]);
	if (flags == -1 && api.occurred())
		return NULL;
	int slot = (int)(flags & 0xf);
	if (slot >= T_SLOTS)
		return type_error("gpuspy_torch_call: no such phase");
	unsigned bit = 1u << slot;
	if (t_inside & bit)
		return api.call(a[0], a[2], a[3]);
	t_inside |= bit;
	if (flags & T_LAZY)
		t_begin_lazy(slot);
	else
		t_phase(slot, 1);
	void *rc = api.call(a[0], a[2], a[3]);
	t_inside &= ~bit;
	if (flags & T_LAZY) {
		/* It raised (a DataLoader's StopIteration at the end of its
		 * pass): no batch came, the phase ends here, not at the next
		 * phase or the process's exit. */
		if (!rc && tp.open == slot + 1)
			t_close();
		return rc;
	}
	t_phase(slot, 0);
	if ((flags & T_STEP)) {
		tp.step++;
		if (tp.learning && n == 5)
			t_after(a[4], rc);
	}
	return rc;
}

/* The forward pre-hook of the models: forward begins, unless open. */
static void *fast_hook(void *self, void *const *a, ssize_t n)
{
	(void)self;
	(void)a;
	(void)n;
	t_begin_lazy(T_FORWARD);
	return api.none("");
}

/* gpuspy_torch_ctl(op, arg): 0 the step count; 1 learning = arg; 2 close
 * the open lazy phase (pause, exit); 3 begin lazy phase `arg` (the learning
 * hook, in Python); 4 the open lazy phase's slot + 1. */
static void *fast_ctl(void *self, void *const *a, ssize_t n)
{
	(void)self;
	if (n != 2)
		return type_error("gpuspy_torch_ctl(op, arg)");
	long op = api.as_long(a[0]), arg = api.as_long(a[1]);
	if (api.occurred())
		return NULL;
	switch (op) {
	case 0:
		return api.from_ull(tp.step);
	case 1:
		tp.learning = arg != 0;
		break;
	case 2:
		t_close();
		break;
	case 3:
		if (arg < 0 || arg >= T_SLOTS)
			return type_error("gpuspy_torch_ctl: no such phase");
		t_begin_lazy((int)arg);
		break;
	case 4:
		return api.from_ull((unsigned long long)tp.open);
	default:
		return type_error("gpuspy_torch_ctl: no such op");
	}
	return api.none("");
}

/* CPython's PyMethodDef; METH_FASTCALL is 0x0080 in every 3.x that has it. */
struct py_method_def {
	const char *name;
	void *meth;
	int flags;
	const char *doc;
};
static struct py_method_def fast_defs[] = {
	{ "gpuspy_torch_phase", (void *)fast_phase, 0x0080, "gpuspy: record a PyTorch phase" },
	{ "gpuspy_torch_call", (void *)fast_call, 0x0080, "gpuspy: call fn inside its phase" },
	{ "gpuspy_torch_hook", (void *)fast_hook, 0x0080, "gpuspy: forward begins" },
	{ "gpuspy_torch_ctl", (void *)fast_ctl, 0x0080, "gpuspy: the helper's phase state" },
	{ NULL, NULL, 0, NULL },
};

/* The helper's builtins as PyMethodDefs for PyCFunction_NewEx (a NULL name
 * ends them; the first is the phase call), or NULL when this process has no
 * Python C API (the helper then keeps ctypes and its Python wrappers). */
GS_API void *gpuspy_torch_fast(void);
GS_API void *gpuspy_torch_fast(void)
{
	void *h = RTLD_DEFAULT;
#define PY(field, name) api.field = (__typeof__(api.field))gs_real_dlsym(h, name)
	PY(bytes, "PyBytes_AsString");
	PY(ull, "PyLong_AsUnsignedLongLong");
	PY(as_long, "PyLong_AsLong");
	PY(from_ull, "PyLong_FromUnsignedLongLong");
	PY(occurred, "PyErr_Occurred");
	PY(clear, "PyErr_Clear");
	PY(fetch, "PyErr_Fetch");
	PY(restore, "PyErr_Restore");
	PY(set_string, "PyErr_SetString");
	PY(type_error, "PyExc_TypeError");
	PY(call, "PyObject_Call");
	PY(call0, "PyObject_CallObject");
	PY(decref, "Py_DecRef");
	PY(none, "Py_BuildValue");
#undef PY
	int ok = api.bytes && api.ull && api.as_long && api.from_ull && api.occurred && api.clear &&
		 api.fetch && api.restore && api.set_string && api.type_error && api.call && api.call0 &&
		 api.decref && api.none;
	return ok ? fast_defs : NULL;
}

/* The Python helper's own messages (python/gpuspy_torch.py,
 * sitecustomize.py): they go where the library's go (log.c), never
 * straight onto the program's stderr. */
GS_API void gpuspy_python_note(const char *msg);
GS_API void gpuspy_python_note(const char *msg)
{
	if (msg && gs_init())
		gs_warn("%s", msg);
}

GS_MODULE(python, 60, .setup = python_setup);
