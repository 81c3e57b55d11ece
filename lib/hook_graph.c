/* SPDX-License-Identifier: MIT */
/*
 * Graph family: what a CUDA graph runs, and which calls only build one.
 *
 * A graph launch is one host call that runs every node of its graph; on the
 * host nothing else of that work is seen. So when a graph is instantiated,
 * or an executable graph updated, its nodes are read back from the driver
 * and written after the instantiation's own record (kind graph) as
 * node_kernel, node_copy, node_memset, node_alloc and node_free records
 * keyed by the executable graph's handle; the reader adds them up at each
 * launch of it. Child graphs are walked into. Not counted: conditional
 * bodies (how often they run is decided on the GPU), host, event and
 * semaphore nodes, and parameters changed later node by node
 * (cuGraphExecKernelNodeSetParams).
 *
 * A launch, copy or memset made on a stream being captured does not run:
 * it becomes a node of the graph. While some capture is open (`capturing`
 * counts those begun and not yet ended, process-wide: a capture takes in
 * streams that wait on its events), the record of each stream-ordered call
 * asks the driver whether its stream is capturing, and is marked
 * GSPY_FLAG_CAPTURED if so. No capture open, no cost but one load.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "cuda_api.h"
#include "gs.h"
#include "graphs.h"
#include "symbols.h"
#include "writer.h"

static struct {
	CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus *);
	CUresult (*get_nodes)(CUgraph, CUgraphNode *, size_t *);
	CUresult (*node_type)(CUgraphNode, CUgraphNodeType *);
	CUresult (*kernel_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
	CUresult (*copy_params)(CUgraphNode, CUDA_MEMCPY3D *);
	CUresult (*memset_params)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *);
	CUresult (*child)(CUgraphNode, CUgraph *);
	CUresult (*alloc_params)(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS *);
	CUresult (*free_params)(CUgraphNode, CUdeviceptr *);
	int resolved;
} fn;

/* The driver's graph queries, once (a race only repeats the lookups). */
static int queries(void)
{
	if (__atomic_load_n(&fn.resolved, __ATOMIC_ACQUIRE))
		return fn.get_nodes != NULL;
#define FN(field, name) (fn.field = (__typeof__(fn.field))gs_driver_fn(name))
	FN(is_capturing, "cuStreamIsCapturing");
	FN(node_type, "cuGraphNodeGetType");
	/* The CUDA 12 ABI, else the first, whose parameters are the start of
	 * the newer ones. */
	if (!FN(kernel_params, "cuGraphKernelNodeGetParams_v2"))
		FN(kernel_params, "cuGraphKernelNodeGetParams");
	FN(copy_params, "cuGraphMemcpyNodeGetParams");
	FN(memset_params, "cuGraphMemsetNodeGetParams");
	FN(child, "cuGraphChildGraphNodeGetGraph");
	FN(alloc_params, "cuGraphMemAllocNodeGetParams");
	FN(free_params, "cuGraphMemFreeNodeGetParams");
	if (!fn.node_type || !FN(get_nodes, "cuGraphGetNodes"))
		fn.get_nodes = NULL;
#undef FN
	__atomic_store_n(&fn.resolved, 1, __ATOMIC_RELEASE);
	return fn.get_nodes != NULL;
}

/* ---- stream capture ------------------------------------------------------- */

/* From gs_end, while some capture is open: was this stream-ordered call
 * captured rather than run? The legacy stream is never captured; stream 0
 * of a per-thread entry point is the thread's own stream, which can be. */
void gs_capture_note(struct gspy_record *r)
{
	uint64_t st = r->stream;
	if (!st && gs_api_ptds(r->api))
		st = (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD;
	if (!st || st == (uint64_t)(uintptr_t)CU_STREAM_LEGACY || !queries() || !fn.is_capturing)
		return;
	int e = errno;
	CUstreamCaptureStatus s = CU_STREAM_CAPTURE_STATUS_NONE;
	if (fn.is_capturing((CUstream)(uintptr_t)st, &s) == CUDA_SUCCESS && s != CU_STREAM_CAPTURE_STATUS_NONE)
		r->flags |= GSPY_FLAG_CAPTURED;
	errno = e;
}

static CUresult begun(CUresult rc)
{
	if (rc == CUDA_SUCCESS)
		__atomic_fetch_add(&gs_g.capturing, 1, __ATOMIC_RELAXED);
	return rc;
}

GS_API CUresult cuStreamBeginCapture_v2(CUstream st, CUstreamCaptureMode mode)
{
	return begun(GS_REAL(cuStreamBeginCapture_v2)(st, mode));
}

GS_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream st, CUstreamCaptureMode mode)
{
	return begun(GS_REAL(cuStreamBeginCapture_v2_ptsz)(st, mode));
}

GS_API CUresult cuStreamBeginCaptureToGraph(CUstream st, CUgraph g, const CUgraphNode *deps,
					    const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode)
{
	return begun(GS_REAL(cuStreamBeginCaptureToGraph)(st, g, deps, data, n, mode));
}

GS_API CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream st, CUgraph g, const CUgraphNode *deps,
						 const CUgraphEdgeData *data, size_t n,
						 CUstreamCaptureMode mode)
{
	return begun(GS_REAL(cuStreamBeginCaptureToGraph_ptsz)(st, g, deps, data, n, mode));
}

/* A capture ends with its graph, or with an error that ends it all the
 * same (invalidated, unjoined); not when the stream was not capturing or
 * another thread tried. */
static CUresult ended(CUresult rc)
{
	if (rc == CUDA_ERROR_ILLEGAL_STATE || rc == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD ||
	    rc == CUDA_ERROR_INVALID_VALUE || rc == CUDA_ERROR_INVALID_HANDLE ||
	    rc == CUDA_ERROR_NOT_INITIALIZED || rc == CUDA_ERROR_DEINITIALIZED)
		return rc;
	int n = __atomic_load_n(&gs_g.capturing, __ATOMIC_RELAXED);
	while (n > 0 && !__atomic_compare_exchange_n(&gs_g.capturing, &n, n - 1, 0, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
	return rc;
}

GS_API CUresult cuStreamEndCapture(CUstream st, CUgraph *g)
{
	return ended(GS_REAL(cuStreamEndCapture)(st, g));
}

GS_API CUresult cuStreamEndCapture_ptsz(CUstream st, CUgraph *g)
{
	return ended(GS_REAL(cuStreamEndCapture_ptsz)(st, g));
}

/* ---- instantiation: what each launch will run ----------------------------- */

enum { NODES_MAX = 1u << 16, DEPTH_MAX = 8 };

struct nodes {
	struct gspy_record *v;
	uint32_t n, cap;
};

static struct gspy_record *node_add(struct nodes *ns, unsigned kind)
{
	if (ns->n == ns->cap) {
		uint32_t cap = ns->cap ? ns->cap * 2 : 64;
		struct gspy_record *v = cap <= NODES_MAX ? realloc(ns->v, cap * sizeof(*v)) : NULL;
		if (!v)
			return NULL;
		ns->v = v;
		ns->cap = cap;
	}
	struct gspy_record *r = &ns->v[ns->n++];
	memset(r, 0, sizeof(*r));
	r->kind = (uint8_t)kind;
	r->device = -1;
	return r;
}

static void node_kernel(struct nodes *ns, CUgraphNode node)
{
	CUDA_KERNEL_NODE_PARAMS p;
	memset(&p, 0, sizeof(p));
	if (!fn.kernel_params || fn.kernel_params(node, &p) != CUDA_SUCCESS)
		return;
	struct gspy_record *r = node_add(ns, GSPY_KIND_node_kernel);
	if (!r)
		return;
	r->name_id = gs_kernel_name(p.func ? (uint64_t)p.func : (uint64_t)p.kern);
	r->u.launch.grid_x = p.gridDimX;
	r->u.launch.grid_yz[0] = (uint16_t)(p.gridDimY < 65535 ? p.gridDimY : 65535);
	r->u.launch.grid_yz[1] = (uint16_t)(p.gridDimZ < 65535 ? p.gridDimZ : 65535);
	r->u.launch.block[0] = (uint16_t)p.blockDimX;
	r->u.launch.block[1] = (uint16_t)p.blockDimY;
	r->u.launch.block[2] = (uint16_t)p.blockDimZ;
}

static void node_copy(struct nodes *ns, CUgraphNode node)
{
	CUDA_MEMCPY3D p;
	memset(&p, 0, sizeof(p));
	if (!fn.copy_params || fn.copy_params(node, &p) != CUDA_SUCCESS)
		return;
	struct gspy_record *r = node_add(ns, GSPY_KIND_node_copy);
	if (r)
		gs_copy_rec_3d(r, &p);
}

static void node_memset(struct nodes *ns, CUgraphNode node)
{
	CUDA_MEMSET_NODE_PARAMS p;
	memset(&p, 0, sizeof(p));
	if (!fn.memset_params || fn.memset_params(node, &p) != CUDA_SUCCESS)
		return;
	struct gspy_record *r = node_add(ns, GSPY_KIND_node_memset);
	if (r) {
		r->u.mem.bytes = (uint64_t)p.elementSize * p.width * (p.height ? p.height : 1);
		r->u.mem.addr = (uint64_t)p.dst;
	}
}

static void node_alloc(struct nodes *ns, CUgraphNode node)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p;
	memset(&p, 0, sizeof(p));
	if (!fn.alloc_params || fn.alloc_params(node, &p) != CUDA_SUCCESS)
		return;
	struct gspy_record *r = node_add(ns, GSPY_KIND_node_alloc);
	if (r) {
		r->u.mem.bytes = p.bytesize;
		r->u.mem.addr = (uint64_t)p.dptr;
		r->mem = GSPY_MEM_device;
	}
}

/* A free node's bytes: those of the graph's allocation node there. */
static void node_free(struct nodes *ns, CUgraphNode node)
{
	CUdeviceptr p = 0;
	if (!fn.free_params || fn.free_params(node, &p) != CUDA_SUCCESS)
		return;
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < ns->n && !bytes; i++)
		if (ns->v[i].kind == GSPY_KIND_node_alloc && ns->v[i].u.mem.addr == (uint64_t)p)
			bytes = ns->v[i].u.mem.bytes;
	struct gspy_record *r = node_add(ns, GSPY_KIND_node_free);
	if (r) {
		r->u.mem.bytes = bytes;
		r->u.mem.addr = (uint64_t)p;
		r->mem = GSPY_MEM_device;
	}
}

static void walk(struct nodes *ns, CUgraph g, int depth)
{
	size_t n = 0;
	if (depth > DEPTH_MAX || fn.get_nodes(g, NULL, &n) != CUDA_SUCCESS || !n || n > NODES_MAX)
		return;
	CUgraphNode *v = malloc(n * sizeof(*v));
	if (!v || fn.get_nodes(g, v, &n) != CUDA_SUCCESS) {
		free(v);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		CUgraphNodeType t;
		if (fn.node_type(v[i], &t) != CUDA_SUCCESS)
			continue;
		CUgraph c;
		switch (t) {
		case CU_GRAPH_NODE_TYPE_KERNEL: node_kernel(ns, v[i]); break;
		case CU_GRAPH_NODE_TYPE_MEMCPY: node_copy(ns, v[i]); break;
		case CU_GRAPH_NODE_TYPE_MEMSET: node_memset(ns, v[i]); break;
		case CU_GRAPH_NODE_TYPE_MEM_ALLOC: node_alloc(ns, v[i]); break;
		case CU_GRAPH_NODE_TYPE_MEM_FREE: node_free(ns, v[i]); break;
		case CU_GRAPH_NODE_TYPE_GRAPH:
			if (fn.child && fn.child(v[i], &c) == CUDA_SUCCESS)
				walk(ns, c, depth + 1);
			break;
		default: break;
		}
	}
	free(v);
}

/* After the real call: the graph record, then its nodes at its end time
 * (the reader meets them before any launch of the executable graph). */
static void instantiated(struct gspy_record *r, CUresult rc, CUgraphExec exec, CUgraph g)
{
	if (!r) {
		gs_end(r, rc);
		return;
	}
	int e = errno;
	struct nodes ns = { NULL, 0, 0 };
	if (rc == CUDA_SUCCESS && exec && g && queries())
		walk(&ns, g, 0);
	r->stream = (uint64_t)exec;
	r->u.mem.addr = (uint64_t)g;
	r->u.mem.bytes = ns.n;
	r->device = (int16_t)gs_current_device();
	unsigned api = r->api;
	gs_end(r, rc);
	uint64_t t = r->end;
	gs_hold();
	struct gs_tls *tls = &gs_tls;
	for (uint32_t i = 0; i < ns.n; i++) {
		struct gspy_record *x = &ns.v[i];
		x->start = x->end = t;
		x->api = (uint16_t)api;
		x->stream = (uint64_t)exec;
		x->device = r->device;
		gs_commit(tls, x);
	}
	free(ns.v);
	gs_release();
	errno = e;
}

GS_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuGraphInstantiateWithFlags, GSPY_KIND_graph);
	CUresult rc = GS_REAL(cuGraphInstantiateWithFlags)(exec, g, flags);
	instantiated(r, rc, rc == CUDA_SUCCESS && exec ? *exec : NULL, g);
	return rc;
}

static CUresult with_params(unsigned api, CUgraphExec *exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_graph);
	CUresult rc = ((__typeof__(&cuGraphInstantiateWithParams))gs_real(api))(exec, g, p);
	instantiated(r, rc, rc == CUDA_SUCCESS && exec ? *exec : NULL, g);
	return rc;
}

GS_API CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return with_params(GSPY_API_cuGraphInstantiateWithParams, exec, g, p);
}

GS_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *exec, CUgraph g,
						  CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return with_params(GSPY_API_cuGraphInstantiateWithParams_ptsz, exec, g, p);
}

/* An update gives the executable graph the nodes' parameters of g. */
GS_API CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
	struct gspy_record *r = gs_begin(GSPY_API_cuGraphExecUpdate_v2, GSPY_KIND_graph);
	CUresult rc = GS_REAL(cuGraphExecUpdate_v2)(exec, g, info);
	instantiated(r, rc, rc == CUDA_SUCCESS ? exec : NULL, g);
	return rc;
}
