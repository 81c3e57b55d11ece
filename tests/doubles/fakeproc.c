/* SPDX-License-Identifier: MIT */
/*
 * cuGetProcAddress in the driver double: (symbol, version, flags) resolved
 * to ABI variants as the real driver resolves them, including
 * "cuGetProcAddress" itself. The answer is what the loader bound the
 * table's &sym to: a preloaded export of the same name (gpuspy's wrapper)
 * before the double's own, as in a libcuda linked without -Bsymbolic.
 * FAKECUDA_OWN_PROCS=1: the double's own function, as the real driver
 * answers, so that a tracer must pick and wrap the variant itself.
 * Built three ways (tests/tests.mk): plain; MIRROR_PROCS, the mirror
 * driver (tests/bin/mirror); PROC_TOOL, the tool driver
 * (tests/bin/proctool).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "gpuspy/format.h"
#include "fakecuda.h"
#include "fakecuda_int.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status);

/* Entry points by exported name, with the version that introduced each ABI
 * variant (as the real driver's table has them). */
static const struct { const char *name; int version; void *fn; } procs[] = {
#define GSPY_X(sym, k, ver) { #sym, ver, (void *)&sym },
	GSPY_DRIVER_API_LIST(GSPY_X)
	GSPY_GRAPH_API_LIST(GSPY_X)
	GSPY_CONTEXT_API_LIST(GSPY_X)
	GSPY_STREAM_API_LIST(GSPY_X)
#undef GSPY_X
	{ "cuInit", 2000, (void *)&cuInit },
	{ "cuDriverGetVersion", 2020, (void *)&cuDriverGetVersion },
	{ "cuCtxGetDevice", 2000, (void *)&cuCtxGetDevice },
	{ "cuPointerGetAttribute", 4000, (void *)&cuPointerGetAttribute },
	{ "cuFuncGetName", 12030, (void *)&cuFuncGetName },
	{ "cuKernelGetName", 12030, (void *)&cuKernelGetName },
	{ "cuModuleGetFunction", 2000, (void *)&cuModuleGetFunction },
	{ "cuDevicePrimaryCtxRetain", 7000, (void *)&cuDevicePrimaryCtxRetain },
	{ "cuDeviceTotalMem_v2", 3020, (void *)&cuDeviceTotalMem_v2 },
	{ "cuDeviceGetPCIBusId", 4010, (void *)&cuDeviceGetPCIBusId },
	{ "cuMemAddressReserve", 10020, (void *)&cuMemAddressReserve },
	{ "cuMemAddressFree", 10020, (void *)&cuMemAddressFree },
};

/* The double's own definition of an entry point (FAKECUDA_OWN_PROCS). Not
 * &sym, which binds through the global scope, nor dlsym, which may be a
 * tracer's: read from this object's dynamic symbol table, which the
 * linker lays out just before its string table. */
static void *own_fn(const char *name)
{
	Dl_info di;
	struct link_map *lm;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	if (!dladdr1((void *)own_fn, &di, (void **)&lm, RTLD_DL_LINKMAP))
		return NULL;
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		uintptr_t a = d->d_un.d_ptr < lm->l_addr ? lm->l_addr + d->d_un.d_ptr : d->d_un.d_ptr;
		if (d->d_tag == DT_SYMTAB)
			sym = (const ElfW(Sym) *)a;
		else if (d->d_tag == DT_STRTAB)
			str = (const char *)a;
	}
	for (const ElfW(Sym) *s = sym; s && str && (const char *)s < str; s++)
		if (s->st_shndx != SHN_UNDEF && !strcmp(str + s->st_name, name))
			return (void *)(lm->l_addr + s->st_value);
	return NULL;
}

#ifdef PROC_TOOL
static CUresult tool_proc(const char *symbol, void **pfn, int version, cuuint64_t flags);
static CUresult tool_proc_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *status);
#endif

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags, int *found_any)
{
	int want = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	int best[2] = { -1, -1 };
	*found_any = 0;
	for (int i = 0; i < (int)(sizeof(procs) / sizeof(procs[0])); i++) {
		char b[64];
		int ptds = fakecuda_base_name(procs[i].name, b, sizeof(b));
		if (strcmp(b, symbol) != 0)
			continue;
		*found_any = 1;
		if (procs[i].version > version)
			continue;
		if (best[ptds] < 0 || procs[best[ptds]].version < procs[i].version)
			best[ptds] = i;
	}
	int pick = want && best[1] >= 0 ? best[1] : best[0];
	const char *own = getenv("FAKECUDA_OWN_PROCS");
	*pfn = pick < 0 ? NULL : own && !strcmp(own, "1") ? own_fn(procs[pick].name) : procs[pick].fn;
#ifdef PROC_TOOL
	if (pick >= 0 && !strcmp(symbol, "cuGetProcAddress"))
		*pfn = version >= 12000 ? (void *)tool_proc_v2 : (void *)tool_proc;
#endif
#ifdef MIRROR_PROCS
	/* The mirror driver (tests/bin/mirror): its table answers with
	 * whatever the global scope binds the name to, a preloaded wrapper. */
	if (pick >= 0)
		*pfn = dlsym(RTLD_DEFAULT, procs[pick].name);
#endif
	const char *newer = getenv("FAKECUDA_NEWER_ABI");
	if (pick >= 0 && newer && !strcmp(newer, "1") && !strcmp(symbol, "cuLaunchHostFunc") && version >= 13010)
		*pfn = (void *)launch_host_func_v2;
	return CUDA_SUCCESS; /* like the real driver: success with NULL when absent */
}

#ifdef PROC_TOOL
/* The tool driver (tests/bin/proctool): as a profiler injected into the
 * driver does, its lookup of "cuGetProcAddress" answers with a function of
 * its own, which then answers every lookup the same way. */
static CUresult tool_proc(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	int any;
	return lookup(symbol, pfn, version, flags, &any);
}

static CUresult tool_proc_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *status)
{
	int any;
	CUresult rc = lookup(symbol, pfn, version, flags, &any);
	if (status)
		*status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return rc;
}
#endif

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	int any;
	FAIL_CHECK("cuGetProcAddress");
	return lookup(symbol, pfn, version, flags, &any);
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status)
{
	int any;
	FAIL_CHECK("cuGetProcAddress_v2");
	CUresult rc = lookup(symbol, pfn, version, flags, &any);
	if (status)
		*status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS
			       : any ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
				     : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return rc;
}
