/* SPDX-License-Identifier: MIT */
/*
 * PyTorch phases without code changes: when libgpuspy is loaded into a
 * Python interpreter (and GPUSPY_TORCH is not 0), its constructor puts
 * gpuspy's Python helper directory first on PYTHONPATH, before the
 * interpreter reads it. The helper's sitecustomize.py hooks torch when it
 * is imported, removes the directory again and chains to the user's own
 * sitecustomize. Other processes are not touched.
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
