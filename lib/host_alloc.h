/* SPDX-License-Identifier: MIT */
/* Host allocations as libgpuspy records them (hook_host.c). */
#ifndef GS_HOST_ALLOC_H
#define GS_HOST_ALLOC_H

#include "gs.h"

/* The host allocator's entry points (GSPY_HOST_API_LIST): a run of enum
 * gspy_api from GSPY_API_malloc; libgpuspy-host.so defines their names. */
enum { GS_HOST_API_N = 0
#define GSPY_X(sym, k, v) +1
       GSPY_HOST_API_LIST(GSPY_X)
#undef GSPY_X
};
static inline int gs_api_host(unsigned api)
{
	return api - GSPY_API_malloc < GS_HOST_API_N;
}

/* Host allocations (hook_host.c). Those made before the trace file exists
 * (before the process's first CUDA call) are kept in memory, and their
 * thread marked (gs_tls.host_kept): each thread writes its own at its
 * first chunk (the host module's first_chunk hook, module.h); the rest
 * are counted at exit (its exiting hook, header.host_unwritten). */

#endif
