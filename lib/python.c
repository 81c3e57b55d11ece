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
 * costs ~50 ns. The Python C API is looked up in the process, never linked.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gs.h"

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
	Dl_info di;
	char lib[PATH_MAX];
	if (!dladdr((void *)helper_dir, &di) || !di.dli_fname || !realpath(di.dli_fname, lib))
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

void gs_python_setup(void)
{
	const char *off = getenv("GPUSPY_TORCH");
	if ((off && !strcmp(off, "0")) || !is_python())
		return;
	char dir[PATH_MAX];
	if (helper_dir(dir, sizeof(dir)) != 0)
		return;
	const char *old = getenv("PYTHONPATH");
	size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
	char *v = malloc(n);
	if (!v)
		return;
	snprintf(v, n, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
	setenv("PYTHONPATH", v, 1);
	setenv("GPUSPY_PYTHONPATH_ADDED", dir, 1);
	free(v);
}

/* ---- the helper's phase call as a builtin ---------------------------------- */

static struct {
	const char *(*bytes)(void *);     /* PyBytes_AsString */
	unsigned long long (*ull)(void *); /* PyLong_AsUnsignedLongLong */
	void *(*occurred)(void);          /* PyErr_Occurred */
	void (*clear)(void);              /* PyErr_Clear */
	void *(*none)(const char *, ...); /* Py_BuildValue(""): a new reference to None */
} api;

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

/* CPython's PyMethodDef; METH_FASTCALL is 0x0080 in every 3.x that has it. */
static struct {
	const char *name;
	void *meth;
	int flags;
	const char *doc;
} fast_def = { "gpuspy_torch_phase", (void *)fast_phase, 0x0080, "gpuspy: record a PyTorch phase" };

/* The PyMethodDef for PyCFunction_NewEx, or NULL when this process has no
 * Python C API (the helper then keeps ctypes). */
GS_API void *gpuspy_torch_fast(void);
GS_API void *gpuspy_torch_fast(void)
{
	void *h = RTLD_DEFAULT;
	api.bytes = (__typeof__(api.bytes))gs_real_dlsym(h, "PyBytes_AsString");
	api.ull = (__typeof__(api.ull))gs_real_dlsym(h, "PyLong_AsUnsignedLongLong");
	api.occurred = (__typeof__(api.occurred))gs_real_dlsym(h, "PyErr_Occurred");
	api.clear = (__typeof__(api.clear))gs_real_dlsym(h, "PyErr_Clear");
	api.none = (__typeof__(api.none))gs_real_dlsym(h, "Py_BuildValue");
	return api.bytes && api.ull && api.occurred && api.clear && api.none ? &fast_def : NULL;
}
