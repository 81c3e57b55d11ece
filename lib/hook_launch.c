/* SPDX-License-Identifier: MIT */
/*
 * Launch family: cuLaunchKernel, cuLaunchKernelEx, cooperative launches,
 * host functions and graph launches, and the runtime's launch entry points
 * including __cudaLaunchKernel and cudaLaunchKernelExC (what nvcc 13 and
 * PyTorch call). Kernel names come from the driver, cached per function
 * handle. A runtime launch takes its kernel name from the driver launch it
 * makes underneath, which is therefore not recorded a second time.
 */
#define _GNU_SOURCE
#include "cuda_api.h"
#include "gs.h"
#include "symbols.h"

static void dims(struct gspy_record *r, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		 unsigned by, unsigned bz)
{
	r->u.launch.grid_x = gx;
	r->u.launch.grid_yz[0] = (uint16_t)(gy < 65535 ? gy : 65535);
	r->u.launch.grid_yz[1] = (uint16_t)(gz < 65535 ? gz : 65535);
	/* Block dimensions are at most 1024. */
	r->u.launch.block[0] = (uint16_t)(bx < 65535 ? bx : 65535);
	r->u.launch.block[1] = (uint16_t)(by < 65535 ? by : 65535);
	r->u.launch.block[2] = (uint16_t)(bz < 65535 ? bz : 65535);
}

/* Fill the record of a driver launch made at the top level (a static
 * binary's runtime, cuBLAS, Triton). */
static void drv_launch(struct gspy_record *r, CUfunction f, unsigned gx, unsigned gy,
		       unsigned gz, unsigned bx, unsigned by, unsigned bz, CUstream st)
{
	r->name_id = gs_kernel_name((uint64_t)f);
	dims(r, gx, gy, gz, bx, by, bz);
	r->stream = (uint64_t)st;
	r->flags |= GSPY_FLAG_ASYNC;
	r->device = (int16_t)gs_current_device(); /* -1 from gs_begin until here */
}

/*
 * A driver launch nested in a wrapped call: under a runtime launch (PyTorch's
 * every launch), whose record takes only the kernel name from here and
 * fills in the rest itself from the same arguments (rt_launch). Taken first
 * in each driver launch hook and kept short: it runs on every launch, its
 * code usually out of the instruction cache. Called with the depth raised
 * (gs_outer).
 */
static void drv_enrich(CUfunction f)
{
	struct gspy_record *r = gs_outer(GSPY_KIND_launch);
	if (r && !r->name_id) {
		r->flags |= GSPY_FLAG_ENRICHED;
		r->name_id = gs_kernel_name((uint64_t)f);
	}
}

static CUresult launch(unsigned api, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
		       unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream st,
		       void **params, void **extra)
{
	__typeof__(&cuLaunchKernel) real = (__typeof__(&cuLaunchKernel))gs_real(api);
	if (GS_LIKELY(gs_nested((uintptr_t)__builtin_dwarf_cfa()))) {
		gs_hold();
		CUresult rc = real(f, gx, gy, gz, bx, by, bz, smem, st, params, extra);
		drv_enrich(f);
		gs_release();
		return rc;
	}
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)st);
	CUresult rc = real(f, gx, gy, gz, bx, by, bz, smem, st, params, extra);
	if (r)
		drv_launch(r, f, gx, gy, gz, bx, by, bz, st);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned smem, CUstream st,
			       void **params, void **extra)
{
	return launch(GSPY_API_cuLaunchKernel, f, gx, gy, gz, bx, by, bz, smem, st, params, extra);
}

GS_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				    unsigned bx, unsigned by, unsigned bz, unsigned smem,
				    CUstream st, void **params, void **extra)
{
	return launch(GSPY_API_cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, smem, st, params,
		      extra);
}

static CUresult launch_ex(unsigned api, const CUlaunchConfig *c, CUfunction f, void **params,
			  void **extra)
{
	__typeof__(&cuLaunchKernelEx) real = (__typeof__(&cuLaunchKernelEx))gs_real(api);
	if (GS_LIKELY(gs_nested((uintptr_t)__builtin_dwarf_cfa()))) {
		gs_hold();
		CUresult rc = real(c, f, params, extra);
		if (c)
			drv_enrich(f);
		gs_release();
		return rc;
	}
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)(c ? c->hStream : 0));
	CUresult rc = real(c, f, params, extra);
	if (r && c)
		drv_launch(r, f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
			   c->blockDimZ, c->hStream);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
				 void **extra)
{
	return launch_ex(GSPY_API_cuLaunchKernelEx, c, f, params, extra);
}

GS_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
				      void **extra)
{
	return launch_ex(GSPY_API_cuLaunchKernelEx_ptsz, c, f, params, extra);
}

static CUresult launch_coop(unsigned api, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			    unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream st,
			    void **params)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)st);
	CUresult rc = ((__typeof__(&cuLaunchCooperativeKernel))gs_real(api))(f, gx, gy, gz, bx, by,
									     bz, smem, st, params);
	if (r)
		drv_launch(r, f, gx, gy, gz, bx, by, bz, st);
	else if (gs_tls.depth > 1)
		drv_enrich(f);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
					  unsigned bx, unsigned by, unsigned bz, unsigned smem,
					  CUstream st, void **params)
{
	return launch_coop(GSPY_API_cuLaunchCooperativeKernel, f, gx, gy, gz, bx, by, bz, smem, st,
			   params);
}

GS_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
					       unsigned gz, unsigned bx, unsigned by, unsigned bz,
					       unsigned smem, CUstream st, void **params)
{
	return launch_coop(GSPY_API_cuLaunchCooperativeKernel_ptsz, f, gx, gy, gz, bx, by, bz,
			   smem, st, params);
}

static void stream_only(struct gspy_record *r, uint64_t st, uint64_t handle)
{
	if (!r)
		return;
	r->stream = st;
	r->u.mem.addr = handle; /* host function or graph exec; grid stays 0 */
	r->flags |= GSPY_FLAG_ASYNC;
	r->device = (int16_t)gs_current_device();
}

static CUresult host_func(unsigned api, CUstream st, CUhostFn fn, void *data)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_launch);
	CUresult rc = ((__typeof__(&cuLaunchHostFunc))gs_real(api))(st, fn, data);
	stream_only(r, (uint64_t)st, (uint64_t)fn);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuLaunchHostFunc(CUstream st, CUhostFn fn, void *data)
{
	return host_func(GSPY_API_cuLaunchHostFunc, st, fn, data);
}

GS_API CUresult cuLaunchHostFunc_ptsz(CUstream st, CUhostFn fn, void *data)
{
	return host_func(GSPY_API_cuLaunchHostFunc_ptsz, st, fn, data);
}

static CUresult graph(unsigned api, CUgraphExec g, CUstream st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)st);
	CUresult rc = ((__typeof__(&cuGraphLaunch))gs_real(api))(g, st);
	stream_only(r, (uint64_t)st, (uint64_t)g);
	gs_end(r, rc);
	return rc;
}

GS_API CUresult cuGraphLaunch(CUgraphExec g, CUstream st)
{
	return graph(GSPY_API_cuGraphLaunch, g, st);
}

GS_API CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream st)
{
	return graph(GSPY_API_cuGraphLaunch_ptsz, g, st);
}

/* ---- runtime ----------------------------------------------------------------- */

/* Fill a runtime launch's record (a driver launch nested in it has given
 * it the kernel name). */
static void rt_launch(struct gspy_record *r, dim3 g, dim3 b, cudaStream_t st)
{
	if (!r)
		return;
	dims(r, g.x, g.y, g.z, b.x, b.y, b.z);
	r->stream = (uint64_t)st; /* the handle as the program passed it */
	r->flags |= GSPY_FLAG_ASYNC;
	r->device = (int16_t)gs_current_device(); /* -1 from gs_begin until here */
}

static cudaError_t rt_kernel(unsigned api, const void *fn, dim3 g, dim3 b, void **args,
			     size_t smem, cudaStream_t st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)st);
	cudaError_t rc = ((__typeof__(&cudaLaunchKernel))gs_real(api))(fn, g, b, args, smem, st);
	rt_launch(r, g, b, st);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t smem,
				    cudaStream_t st)
{
	return rt_kernel(GSPY_API_cudaLaunchKernel, fn, g, b, args, smem, st);
}

GS_API cudaError_t cudaLaunchKernel_ptsz(const void *fn, dim3 g, dim3 b, void **args,
					 size_t smem, cudaStream_t st)
{
	return rt_kernel(GSPY_API_cudaLaunchKernel_ptsz, fn, g, b, args, smem, st);
}

static cudaError_t rt_kernel_handle(unsigned api, cudaKernel_t k, dim3 g, dim3 b, void **args,
				    size_t smem, cudaStream_t st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)st);
	cudaError_t rc = ((__typeof__(&__cudaLaunchKernel))gs_real(api))(k, g, b, args, smem, st);
	rt_launch(r, g, b, st);
	if (r && !r->name_id)
		r->name_id = gs_kernel_name((uint64_t)k);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **args, size_t smem,
				      cudaStream_t st)
{
	return rt_kernel_handle(GSPY_API___cudaLaunchKernel, k, g, b, args, smem, st);
}

GS_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **args,
					   size_t smem, cudaStream_t st)
{
	return rt_kernel_handle(GSPY_API___cudaLaunchKernel_ptsz, k, g, b, args, smem, st);
}

static cudaError_t rt_kernel_ex(unsigned api, const cudaLaunchConfig_t *c, const void *fn,
				void **args)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)(c ? c->stream : 0));
	cudaError_t rc = ((__typeof__(&cudaLaunchKernelExC))gs_real(api))(c, fn, args);
	if (c)
		rt_launch(r, c->gridDim, c->blockDim, c->stream);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *fn, void **args)
{
	return rt_kernel_ex(GSPY_API_cudaLaunchKernelExC, c, fn, args);
}

GS_API cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c, const void *fn,
					    void **args)
{
	return rt_kernel_ex(GSPY_API_cudaLaunchKernelExC_ptsz, c, fn, args);
}

static cudaError_t rt_coop(unsigned api, const void *fn, dim3 g, dim3 b, void **args,
			   size_t smem, cudaStream_t st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)st);
	cudaError_t rc =
		((__typeof__(&cudaLaunchCooperativeKernel))gs_real(api))(fn, g, b, args, smem, st);
	rt_launch(r, g, b, st);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaLaunchCooperativeKernel(const void *fn, dim3 g, dim3 b, void **args,
					       size_t smem, cudaStream_t st)
{
	return rt_coop(GSPY_API_cudaLaunchCooperativeKernel, fn, g, b, args, smem, st);
}

GS_API cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *fn, dim3 g, dim3 b, void **args,
						    size_t smem, cudaStream_t st)
{
	return rt_coop(GSPY_API_cudaLaunchCooperativeKernel_ptsz, fn, g, b, args, smem, st);
}

static cudaError_t rt_host_func(unsigned api, cudaStream_t st, cudaHostFn_t fn, void *data)
{
	struct gspy_record *r = gs_begin(api, GSPY_KIND_launch);
	cudaError_t rc = ((__typeof__(&cudaLaunchHostFunc))gs_real(api))(st, fn, data);
	stream_only(r, (uint64_t)st, (uint64_t)fn);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaLaunchHostFunc(cudaStream_t st, cudaHostFn_t fn, void *data)
{
	return rt_host_func(GSPY_API_cudaLaunchHostFunc, st, fn, data);
}

GS_API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t st, cudaHostFn_t fn, void *data)
{
	return rt_host_func(GSPY_API_cudaLaunchHostFunc_ptsz, st, fn, data);
}

static cudaError_t rt_graph(unsigned api, cudaGraphExec_t g, cudaStream_t st)
{
	struct gspy_record *r = gs_begin_on(api, GSPY_KIND_launch, (uint64_t)st);
	cudaError_t rc = ((__typeof__(&cudaGraphLaunch))gs_real(api))(g, st);
	stream_only(r, (uint64_t)st, (uint64_t)g);
	gs_end(r, rc);
	return rc;
}

GS_API cudaError_t cudaGraphLaunch(cudaGraphExec_t g, cudaStream_t st)
{
	return rt_graph(GSPY_API_cudaGraphLaunch, g, st);
}

GS_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t g, cudaStream_t st)
{
	return rt_graph(GSPY_API_cudaGraphLaunch_ptsz, g, st);
}
