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
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs.h"
#include "phase.h"
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
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
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
	/* for the wrapper type (gpuspy_torch_wrap); without them, no such type */
	void *(*type_from_spec)(void *);  /* PyType_FromSpec */
	void *(*alloc)(void *, ssize_t);  /* PyType_GenericAlloc */
	void (*free)(void *);             /* PyObject_Free */
	void *(*type_of)(void *);         /* PyObject_Type */
	void *(*method)(void *, void *);  /* PyMethod_New */
	void *(*call3)(void *, ...);      /* PyObject_CallFunctionObjArgs */
	void *(*repr)(void *);            /* PyObject_Repr */
	void (*incref)(void *);           /* Py_IncRef */
	void *get_dict, *set_dict;        /* PyObject_GenericGetDict, PyObject_GenericSetDict */
	void *(*getattr)(void *, const char *); /* PyObject_GetAttrString */
	void *base_object;                /* &PyBaseObject_Type */
	void *true_, *false_, *none_obj;  /* &_Py_TrueStruct, &_Py_FalseStruct, &_Py_NoneStruct */
} api;

/* The helper's phases, in the order of its slot numbers. */
enum { T_DATA, T_FORWARD, T_BACKWARD, T_OPTIMIZER, T_SLOTS };
static const char *const t_name[T_SLOTS] = { "data", "forward", "backward", "optimizer" };
#define T_LAZY 0x10 /* stays open until the next phase begins (data, forward) */
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

/* fn(*args, **kwargs) inside its phase (flags: slot | T_LAZY | T_STEP),
 * once per thread however deeply nested; after a step, `after()` while
 * learning (after may be NULL). */
static void *t_call(void *fn, long flags, void *args, void *kwargs, void *after)
{
	int slot = (int)(flags & 0xf);
	unsigned bit = 1u << slot;
	if (t_inside & bit)
		return api.call(fn, args, kwargs);
	t_inside |= bit;
	if (flags & T_LAZY)
		t_begin_lazy(slot);
	else
		t_phase(slot, 1);
	void *rc = api.call(fn, args, kwargs);
	t_inside &= ~bit;
	if (flags & T_LAZY)
		return rc;
	t_phase(slot, 0);
	if ((flags & T_STEP)) {
		tp.step++;
		if (tp.learning && after)
			t_after(after, rc);
	}
	return rc;
}

/* gpuspy_torch_call(fn, flags, args: tuple, kwargs: dict[, after]): fn's
 * result, its phase around it (t_call). */
static void *fast_call(void *self, void *const *a, ssize_t n)
{
	(void)self;
	if (n < 4 || n > 5)
		return type_error("gpuspy_torch_call(fn, flags, args, kwargs[, after])");
	long flags = api.as_long(a[1]);
	if (flags == -1 && api.occurred())
		return NULL;
	if ((flags & 0xf) >= T_SLOTS)
		return type_error("gpuspy_torch_call: no such phase");
	return t_call(a[0], flags, a[2], a[3], n == 5 ? a[4] : NULL);
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

/* ---- the helper's wrappers as objects of a C type --------------------------- */

/*
 * A wrapper that is a Python function is a frame of gpuspy's in the
 * traceback of every exception that passes through it (a second
 * backward, a failing step, a pickling error). An object of this type is
 * called without a frame: in a traceback, the program's frames and
 * PyTorch's, as untraced. It binds as a method (tp_descr_get, and
 * Py_TPFLAGS_METHOD_DESCRIPTOR: obj.method(...) calls it with obj first,
 * no bound method made), and has a __dict__ for functools.update_wrapper.
 * Two kinds:
 *   a phase wrapper: fn inside its phase (t_call), flags as gpuspy_torch_call's;
 *   W_AROUND: token = pre(args, kwargs), then fn, then post(token, result,
 *     ok) (result None and ok False when fn raised) gives the result.
 *     pre and post are gpuspy's: an error of theirs is dropped, and fn's
 *     own exception is put back as it was.
 * The layout follows the interpreter's object header, whatever its size
 * (object.__basicsize__); CPython's type slot numbers are stable ABI.
 */
#define W_AROUND 0x40
struct wrap {
	void *fn, *after, *pre, *post; /* new references (after, pre, post may be NULL) */
	long flags;
	void *dict;                    /* the instance __dict__ (__dictoffset__) */
};
static ssize_t w_base;  /* where struct wrap begins: object.__basicsize__ */
static void *w_type;    /* the type, made at the first gpuspy_torch_wrap */

static struct wrap *w_of(void *self)
{
	return (struct wrap *)((char *)self + w_base);
}

/* post(token, result, ok), its result or NULL; fn's error, if any, kept. */
static void *w_post(struct wrap *w, void *token, void *rc)
{
	void *et = NULL, *ev = NULL, *tb = NULL, *none = NULL;
	if (!rc) {
		api.fetch(&et, &ev, &tb);
		none = api.none("");
	}
	void *r = api.call3(w->post, token, rc ? rc : none, rc ? api.true_ : api.false_, NULL);
	if (!r)
		api.clear();
	api.decref(none);
	if (!rc) {
		api.decref(r);
		api.restore(et, ev, tb);
		return NULL;
	}
	if (!r)
		return rc;
	api.decref(rc);
	return r;
}

static void *w_call(void *self, void *args, void *kwargs)
{
	struct wrap *w = w_of(self);
	if (!w->fn)
		return type_error("gpuspy: an empty wrapper");
	if (!(w->flags & W_AROUND))
		return t_call(w->fn, w->flags, args, kwargs, w->after);
	void *token = NULL;
	if (w->pre) {
		token = api.call3(w->pre, args, kwargs ? kwargs : api.none_obj, NULL);
		if (!token)
			api.clear();
	}
	if (!token) {
		token = api.none_obj;
		api.incref(token);
	}
	void *rc = api.call(w->fn, args, kwargs);
	if (w->post)
		rc = w_post(w, token, rc);
	api.decref(token);
	return rc;
}

static void *w_get(void *self, void *obj, void *type)
{
	(void)type;
	if (!obj || obj == api.none_obj) {
		api.incref(self);
		return self;
	}
	return api.method(self, obj);
}

static void *w_repr(void *self)
{
	struct wrap *w = w_of(self);
	return w->fn ? api.repr(w->fn) : api.repr(api.none_obj);
}

static void w_dealloc(void *self)
{
	struct wrap *w = w_of(self);
	void *type = api.type_of(self);
	api.decref(w->fn);
	api.decref(w->after);
	api.decref(w->pre);
	api.decref(w->post);
	api.decref(w->dict);
	api.free(self);
	api.decref(type); /* PyObject_Type's reference, */
	api.decref(type); /* and the instance's (a heap type's instances hold one) */
}

/* CPython's stable ABI: type slot numbers, PyType_Spec, PyMemberDef, PyGetSetDef. */
enum { PY_TP_CALL = 50, PY_TP_DEALLOC = 52, PY_TP_DESCR_GET = 54, PY_TP_DOC = 56, PY_TP_REPR = 66,
       PY_TP_MEMBERS = 72, PY_TP_GETSET = 73 };
#define PY_TPFLAGS_DEFAULT (1ul << 18)          /* Py_TPFLAGS_HAVE_VERSION_TAG */
#define PY_TPFLAGS_METHOD_DESCRIPTOR (1ul << 17)
struct py_slot { int slot; void *fn; };
struct py_spec { const char *name; int basicsize, itemsize; unsigned flags; struct py_slot *slots; };
struct py_member { const char *name; int type; ssize_t offset; int flags; const char *doc; };
struct py_getset { const char *name; void *get, *set; const char *doc; void *closure; };

static void *w_make_type(void)
{
	void *size = api.getattr(api.base_object, "__basicsize__");
	w_base = size ? api.as_long(size) : -1;
	api.decref(size);
	if (w_base <= 0 || api.occurred())
		return NULL;
	static struct py_member members[] = {
		{ "__dictoffset__", 19 /* T_PYSSIZET */, 0, 1 /* READONLY */, NULL },
		{ NULL, 0, 0, 0, NULL },
	};
	members[0].offset = w_base + (ssize_t)offsetof(struct wrap, dict);
	static struct py_getset getset[] = {
		{ "__dict__", NULL, NULL, NULL, NULL },
		{ NULL, NULL, NULL, NULL, NULL },
	};
	getset[0].get = api.get_dict;
	getset[0].set = api.set_dict;
	static struct py_slot slots[] = {
		{ PY_TP_CALL, (void *)w_call },
		{ PY_TP_DESCR_GET, (void *)w_get },
		{ PY_TP_REPR, (void *)w_repr },
		{ PY_TP_DEALLOC, (void *)w_dealloc },
		{ PY_TP_MEMBERS, members },
		{ PY_TP_GETSET, getset },
		{ PY_TP_DOC, (void *)"gpuspy: a function called inside gpuspy's PyTorch phase" },
		{ 0, NULL },
	};
	static struct py_spec spec = { "gpuspy_torch.wrapper", 0, 0,
				       PY_TPFLAGS_DEFAULT | PY_TPFLAGS_METHOD_DESCRIPTOR, slots };
	spec.basicsize = (int)(w_base + (ssize_t)sizeof(struct wrap));
	return api.type_from_spec(&spec);
}

/* gpuspy_torch_wrap(fn, flags, after, pre, post): a wrapper object (above);
 * after, pre and post may be None. */
static void *fast_wrap(void *self, void *const *a, ssize_t n)
{
	(void)self;
	if (n != 5)
		return type_error("gpuspy_torch_wrap(fn, flags, after, pre, post)");
	long flags = api.as_long(a[1]);
	if (flags == -1 && api.occurred())
		return NULL;
	if (!(flags & W_AROUND) && (flags & 0xf) >= T_SLOTS)
		return type_error("gpuspy_torch_wrap: no such phase");
	if (!api.type_from_spec)
		return type_error("gpuspy_torch_wrap: this Python has no PyType_FromSpec");
	if (!w_type && !(w_type = w_make_type()))
		return api.occurred() ? NULL : type_error("gpuspy_torch_wrap: no wrapper type");
	void *o = api.alloc(w_type, 0);
	if (!o)
		return NULL;
	struct wrap *w = w_of(o);
	void *const *f[] = { &a[0], &a[2], &a[3], &a[4] };
	void **to[] = { &w->fn, &w->after, &w->pre, &w->post };
	for (int i = 0; i < 4; i++) {
		if (*f[i] != api.none_obj || i == 0) {
			*to[i] = *f[i];
			api.incref(*f[i]);
		}
	}
	w->flags = flags;
	return o;
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
	{ "gpuspy_torch_wrap", (void *)fast_wrap, 0x0080, "gpuspy: a wrapper object" },
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
	PY(type_from_spec, "PyType_FromSpec");
	PY(alloc, "PyType_GenericAlloc");
	PY(free, "PyObject_Free");
	PY(type_of, "PyObject_Type");
	PY(method, "PyMethod_New");
	PY(call3, "PyObject_CallFunctionObjArgs");
	PY(repr, "PyObject_Repr");
	PY(incref, "Py_IncRef");
	PY(get_dict, "PyObject_GenericGetDict");
	PY(set_dict, "PyObject_GenericSetDict");
	PY(getattr, "PyObject_GetAttrString");
	PY(base_object, "PyBaseObject_Type");
	PY(true_, "_Py_TrueStruct");
	PY(false_, "_Py_FalseStruct");
	PY(none_obj, "_Py_NoneStruct");
#undef PY
	int ok = api.bytes && api.ull && api.as_long && api.from_ull && api.occurred && api.clear &&
		 api.fetch && api.restore && api.set_string && api.type_error && api.call && api.call0 &&
		 api.decref && api.none;
	/* The wrapper type needs all of its own, or gpuspy_torch_wrap says no. */
	if (!(api.alloc && api.free && api.type_of && api.method && api.call3 && api.repr && api.incref &&
	      api.get_dict && api.set_dict && api.getattr && api.base_object && api.true_ && api.false_ &&
	      api.none_obj))
		api.type_from_spec = NULL;
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
