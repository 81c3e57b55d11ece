/* SPDX-License-Identifier: MIT */
/*
 * CUDA graphs in the driver double, as the real driver has them where
 * gpuspy looks: graphs built node by node or captured from a stream (work
 * on a capturing stream becomes a node and does not run; cuStreamIsCapturing
 * says so), instantiated into executable graphs that keep a copy of the
 * nodes, updated from another graph, read back node by node, and launched:
 * a launch runs every node, child graphs included, and tells the profiling
 * tool of each kernel (with the graph's id), copy and memset.
 *
 * A handle that is not one of these graphs (prog_drv's 0x4444) launches
 * three 2 us kernels "graph_node", the graph id the handle's low 32 bits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/cuda_api.h"
#include "fakecuda.h"
#include "fakecuda_int.h"

#define EXPORT __attribute__((visibility("default")))
#define NODES 64
#define GRAPH_MAGIC 0x47524150u /* "GRAP" */
#define EXEC_MAGIC 0x45584543u  /* "EXEC" */

struct CUgraphNode_st {
	CUgraphNodeType type;
	CUDA_KERNEL_NODE_PARAMS kernel;
	CUDA_MEMCPY3D copy;
	CUDA_MEMSET_NODE_PARAMS set;
	CUDA_MEM_ALLOC_NODE_PARAMS alloc;
	CUdeviceptr freed;
	CUgraph child;
};

struct CUgraph_st {
	unsigned magic;
	unsigned n;
	struct CUgraphNode_st node[NODES];
};

struct CUgraphExec_st {
	unsigned magic, id;
	struct CUgraph_st g; /* the nodes as instantiated (or updated) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- building -------------------------------------------------------------- */

EXPORT CUresult cuGraphCreate(CUgraph *g, unsigned flags)
{
	(void)flags;
	*g = calloc(1, sizeof(**g));
	if (!*g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	(*g)->magic = GRAPH_MAGIC;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(CUgraph g)
{
	if (!g || g->magic != GRAPH_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	g->magic = 0;
	free(g);
	return CUDA_SUCCESS;
}

static struct CUgraphNode_st *add(CUgraph g, CUgraphNodeType t)
{
	if (!g || g->magic != GRAPH_MAGIC || g->n == NODES)
		return NULL;
	struct CUgraphNode_st *n = &g->node[g->n++];
	memset(n, 0, sizeof(*n));
	n->type = t;
	return n;
}

#define ADD(type, out)                                                \
	struct CUgraphNode_st *n_ = add(g, type);                     \
	if (!n_)                                                      \
		return CUDA_ERROR_INVALID_VALUE;                      \
	if (out)                                                      \
		*(out) = n_

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
					const CUDA_KERNEL_NODE_PARAMS *p)
{
	(void)deps; (void)nd;
	ADD(CU_GRAPH_NODE_TYPE_KERNEL, out);
	n_->kernel = *p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
				     const CUDA_MEMCPY3D *p, CUcontext ctx)
{
	(void)deps; (void)nd; (void)ctx;
	ADD(CU_GRAPH_NODE_TYPE_MEMCPY, out);
	n_->copy = *p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
				     const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
	(void)deps; (void)nd; (void)ctx;
	ADD(CU_GRAPH_NODE_TYPE_MEMSET, out);
	n_->set = *p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd,
					 CUgraph child)
{
	(void)deps; (void)nd;
	ADD(CU_GRAPH_NODE_TYPE_GRAPH, out);
	n_->child = child;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t nd)
{
	(void)deps; (void)nd;
	ADD(CU_GRAPH_NODE_TYPE_EMPTY, out);
	return CUDA_SUCCESS;
}

/* ---- stream capture --------------------------------------------------------- */

/* invalid: a use of the legacy stream broke the capture (fakestream.c). */
static struct { CUstream st; CUgraph g; int invalid; } caps[16];

static CUgraph capture_of(CUstream hs)
{
	CUgraph g = NULL;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 16 && !g; i++)
		if (caps[i].g && caps[i].st == hs)
			g = caps[i].g;
	pthread_mutex_unlock(&lock);
	return g;
}

int fk_capturing(CUstream hs)
{
	int st = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 16 && hs && !st; i++)
		if (caps[i].g && caps[i].st == hs)
			st = caps[i].invalid ? 2 : 1;
	pthread_mutex_unlock(&lock);
	return st;
}

/* Blocking streams capturing (invalidate: now invalidated); how many. */
static int blocking_captures(int invalidate)
{
	int n = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 16; i++)
		if (caps[i].g && fk_blocking(caps[i].st)) {
			n++;
			if (invalidate)
				caps[i].invalid = 1;
		}
	pthread_mutex_unlock(&lock);
	return n;
}

int fk_blocking_capture(void) { return blocking_captures(0); }
int fk_invalidate_blocking(void) { return blocking_captures(1); }

static CUresult begin(CUstream hs)
{
	if (!hs || hs == CU_STREAM_LEGACY)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (capture_of(hs))
		return CUDA_ERROR_ILLEGAL_STATE;
	CUgraph g;
	cuGraphCreate(&g, 0);
	pthread_mutex_lock(&lock);
	int i = 0;
	while (i < 16 && caps[i].g)
		i++;
	if (i < 16)
		caps[i].st = hs, caps[i].g = g, caps[i].invalid = 0;
	pthread_mutex_unlock(&lock);
	return i < 16 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream hs, CUstreamCaptureMode mode) { (void)mode; return begin(hs); }
EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hs, CUstreamCaptureMode mode)
{
	(void)mode;
	return begin(hs ? hs : CU_STREAM_PER_THREAD);
}

/* Capture into an existing graph: the double appends to it. */
static CUresult begin_to(CUstream hs, CUgraph g)
{
	CUresult rc = begin(hs);
	if (rc)
		return rc;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 16; i++)
		if (caps[i].g && caps[i].st == hs) {
			cuGraphDestroy(caps[i].g);
			caps[i].g = g;
		}
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hs, CUgraph g, const CUgraphNode *deps,
					    const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode)
{
	(void)deps; (void)data; (void)n; (void)mode;
	return begin_to(hs, g);
}

EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hs, CUgraph g, const CUgraphNode *deps,
						 const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode)
{
	(void)deps; (void)data; (void)n; (void)mode;
	return begin_to(hs ? hs : CU_STREAM_PER_THREAD, g);
}

static CUresult end(CUstream hs, CUgraph *out)
{
	CUgraph g = NULL;
	int invalid = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < 16; i++)
		if (caps[i].g && caps[i].st == hs) {
			g = caps[i].g;
			invalid = caps[i].invalid;
			caps[i].g = NULL;
		}
	pthread_mutex_unlock(&lock);
	if (!g)
		return CUDA_ERROR_ILLEGAL_STATE;
	if (invalid) { /* the capture ends, with no graph */
		cuGraphDestroy(g);
		*out = NULL;
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	}
	*out = g;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream hs, CUgraph *g) { return end(hs, g); }
EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hs, CUgraph *g) { return end(hs ? hs : CU_STREAM_PER_THREAD, g); }

int fk_capture_kernel(CUstream hs, CUfunction f, unsigned gx, unsigned bx)
{
	CUgraph g = hs ? capture_of(hs) : NULL;
	if (!g)
		return 0;
	CUDA_KERNEL_NODE_PARAMS p;
	memset(&p, 0, sizeof(p));
	p.func = f;
	p.gridDimX = gx, p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = bx, p.blockDimY = p.blockDimZ = 1;
	cuGraphAddKernelNode_v2(NULL, g, NULL, 0, &p);
	return 1;
}

/* A captured 1D copy: both ends unified, as the driver records them. */
int fk_capture_copy(CUstream hs, uintptr_t d, uintptr_t s, size_t n)
{
	CUgraph g = hs ? capture_of(hs) : NULL;
	if (!g)
		return 0;
	CUDA_MEMCPY3D p;
	memset(&p, 0, sizeof(p));
	p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	p.srcDevice = s, p.dstDevice = d;
	p.WidthInBytes = n, p.Height = p.Depth = 1;
	cuGraphAddMemcpyNode(NULL, g, NULL, 0, &p, NULL);
	return 1;
}

int fk_capture_memset(CUstream hs, uintptr_t d, unsigned elem, size_t n)
{
	CUgraph g = hs ? capture_of(hs) : NULL;
	if (!g)
		return 0;
	CUDA_MEMSET_NODE_PARAMS p;
	memset(&p, 0, sizeof(p));
	p.dst = d, p.elementSize = elem, p.width = n, p.height = 1;
	cuGraphAddMemsetNode(NULL, g, NULL, 0, &p, NULL);
	return 1;
}

/* Captured stream-ordered allocations: the double allocates at once (the
 * address is the node's) and frees nothing until the process ends. */
int fk_capture_alloc(CUstream hs, uintptr_t d, size_t n)
{
	CUgraph g = hs ? capture_of(hs) : NULL;
	struct CUgraphNode_st *x = g ? add(g, CU_GRAPH_NODE_TYPE_MEM_ALLOC) : NULL;
	if (!x)
		return 0;
	x->alloc.bytesize = n;
	x->alloc.dptr = d;
	return 1;
}

int fk_capture_free(CUstream hs, uintptr_t d)
{
	CUgraph g = hs ? capture_of(hs) : NULL;
	struct CUgraphNode_st *x = g ? add(g, CU_GRAPH_NODE_TYPE_MEM_FREE) : NULL;
	if (!x)
		return 0;
	x->freed = d;
	return 1;
}

/* ---- executable graphs -------------------------------------------------------- */

static CUresult instantiate(CUgraphExec *e, CUgraph g)
{
	static unsigned next_id = 100;
	if (!e || !g || g->magic != GRAPH_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphExec_st *x = calloc(1, sizeof(*x));
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->magic = EXEC_MAGIC;
	x->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
	x->g = *g;
	*e = x;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
	(void)flags;
	return instantiate(e, g);
}

EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult rc = instantiate(e, g);
	if (p)
		p->result_out = rc ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	return rc;
}

EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return cuGraphInstantiateWithParams(e, g, p);
}

/* The double takes any graph of the same node count and types. */
EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
	int ok = e && e->magic == EXEC_MAGIC && g && g->magic == GRAPH_MAGIC && g->n == e->g.n;
	for (unsigned i = 0; ok && i < g->n; i++)
		ok = g->node[i].type == e->g.node[i].type;
	if (info) {
		memset(info, 0, sizeof(*info));
		info->result = ok ? CU_GRAPH_EXEC_UPDATE_SUCCESS : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
	}
	if (!ok)
		return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	e->g = *g;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
	if (!e || e->magic != EXEC_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	e->magic = 0;
	free(e);
	return CUDA_SUCCESS;
}

/* ---- reading a graph back ------------------------------------------------------ */

EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
	if (!g || g->magic != GRAPH_MAGIC || !n)
		return CUDA_ERROR_INVALID_VALUE;
	if (nodes)
		for (size_t i = 0; i < *n && i < g->n; i++)
			nodes[i] = &g->node[i];
	*n = g->n;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphNodeGetType(CUgraphNode n, CUgraphNodeType *t)
{
	*t = n->type;
	return CUDA_SUCCESS;
}

#define GET(fn, T, want, field)                                            \
	EXPORT CUresult fn(CUgraphNode n, T *p)                           \
	{                                                                  \
		if (!n || n->type != want)                                 \
			return CUDA_ERROR_INVALID_VALUE;                   \
		*p = n->field;                                             \
		return CUDA_SUCCESS;                                       \
	}
GET(cuGraphKernelNodeGetParams_v2, CUDA_KERNEL_NODE_PARAMS, CU_GRAPH_NODE_TYPE_KERNEL, kernel)
GET(cuGraphMemcpyNodeGetParams, CUDA_MEMCPY3D, CU_GRAPH_NODE_TYPE_MEMCPY, copy)
GET(cuGraphMemsetNodeGetParams, CUDA_MEMSET_NODE_PARAMS, CU_GRAPH_NODE_TYPE_MEMSET, set)
GET(cuGraphChildGraphNodeGetGraph, CUgraph, CU_GRAPH_NODE_TYPE_GRAPH, child)
GET(cuGraphMemAllocNodeGetParams, CUDA_MEM_ALLOC_NODE_PARAMS, CU_GRAPH_NODE_TYPE_MEM_ALLOC, alloc)
GET(cuGraphMemFreeNodeGetParams, CUdeviceptr, CU_GRAPH_NODE_TYPE_MEM_FREE, freed)

/* ---- launches ----------------------------------------------------------------- */

static uintptr_t end_of(CUmemorytype t, const void *host, CUdeviceptr dev)
{
	return t == CU_MEMORYTYPE_HOST ? (uintptr_t)host : (uintptr_t)dev;
}

static void replay(unsigned corr, CUstream hs, const struct CUgraph_st *g, unsigned id, int depth)
{
	for (unsigned i = 0; i < g->n && depth < 8; i++) {
		const struct CUgraphNode_st *n = &g->node[i];
		switch (n->type) {
		case CU_GRAPH_NODE_TYPE_KERNEL:
			if (run(n->kernel.func, n->kernel.kernelParams) == CUDA_SUCCESS) {
				gpu_work(hs, n->kernel.gridDimX);
				tool_work(corr, FAKECUDA_KERNEL, hs, (unsigned long long)n->kernel.gridDimX * 1000, 0,
					  0, 0, fk_function_name(n->kernel.func), id);
			}
			break;
		case CU_GRAPH_NODE_TYPE_MEMCPY: {
			const CUDA_MEMCPY3D *c = &n->copy;
			size_t bytes = c->WidthInBytes * (c->Height ? c->Height : 1) * (c->Depth ? c->Depth : 1);
			uintptr_t d = end_of(c->dstMemoryType, c->dstHost, c->dstDevice);
			uintptr_t s = end_of(c->srcMemoryType, c->srcHost, c->srcDevice);
			memmove((void *)d, (const void *)s, bytes);
			tool_graph_copy(corr, hs, d, s, bytes, id);
			break;
		}
		case CU_GRAPH_NODE_TYPE_MEMSET: {
			const CUDA_MEMSET_NODE_PARAMS *m = &n->set;
			size_t bytes = (size_t)m->elementSize * m->width * (m->height ? m->height : 1);
			memset((void *)m->dst, (int)m->value, bytes);
			tool_work(corr, FAKECUDA_MEMSET, hs, bytes / 100, bytes, 0, 0, NULL, id);
			break;
		}
		case CU_GRAPH_NODE_TYPE_GRAPH:
			if (n->child && n->child->magic == GRAPH_MAGIC)
				replay(corr, hs, n->child, id, depth + 1);
			break;
		default:
			break;
		}
	}
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream hs)
{
	int f = fail("cuGraphLaunch");
	if (f)
		return (CUresult)f;
	unsigned corr = tool_enter("cuGraphLaunch");
	if (e && ((uintptr_t)e & 7) == 0 && (uintptr_t)e > 0x100000 && e->magic == EXEC_MAGIC) {
		replay(corr, hs, &e->g, e->id, 0);
	} else {
		for (int i = 0; i < 3; i++) {
			gpu_work(hs, 2);
			tool_work(corr, FAKECUDA_KERNEL, hs, 2000, 0, 0, 0, "graph_node", (unsigned)(uintptr_t)e);
		}
	}
	tool_exit("cuGraphLaunch", corr);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream hs) { return cuGraphLaunch(e, hs); }
