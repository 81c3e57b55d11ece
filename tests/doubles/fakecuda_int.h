/* SPDX-License-Identifier: MIT */
/* Inside the driver double: what fakecuda.c, fakecopy.c, fakegraph.c,
 * fakestream.c and fakeproc.c share. */
#ifndef FAKECUDA_INT_H
#define FAKECUDA_INT_H

#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* fakecuda.c: FAKECUDA_FAIL's result for an entry point (0: none), the
 * profiling tool's view, and the GPU of the double. */
HIDDEN int fail(const char *name);
/* An entry point FAKECUDA_FAIL names returns its result, doing nothing. */
#define FAIL_CHECK(name)                                                         \
	do {                                                                     \
		int f_ = fail(name);                                             \
		if (f_)                                                          \
			return (CUresult)f_;                                     \
	} while (0)
HIDDEN unsigned tool_enter(const char *api);
HIDDEN void tool_exit(const char *api, unsigned corr);
HIDDEN void tool_work(unsigned corr, int what, CUstream hs, unsigned long long ns, unsigned long long bytes,
		      int src, int dst, const char *name, unsigned graph);
HIDDEN void tool_set(unsigned corr, CUstream hs, size_t n);
/* Waits for the GPU work queued on hs (all: every stream of the device). */
HIDDEN void tool_wait(CUstream hs, int all);
HIDDEN void tool_copy(unsigned corr, CUstream hs, uintptr_t d, uintptr_t s, size_t n);
HIDDEN void tool_graph_copy(unsigned corr, CUstream hs, uintptr_t d, uintptr_t s, size_t n, unsigned graph);
HIDDEN void gpu_work(CUstream hs, unsigned grid_x);
HIDDEN CUresult run(CUfunction f, void **params);
HIDDEN const char *fk_function_name(CUfunction f);
/* fakecuda.c: the cuLaunchHostFunc of an ABI newer than gpuspy knows, which
 * fakeproc.c's cuGetProcAddress answers with (FAKECUDA_NEWER_ABI=1). */
HIDDEN CUresult launch_host_func_v2(CUstream hs, CUhostFn fn, void *data, unsigned sync_mode);

/* fakegraph.c: whether a stream is being captured (1; 2: the capture was
 * invalidated), whether a blocking stream is (how many; invalidating them
 * all); a stream being captured takes the work instead of running it: each
 * fk_capture_* returns 1 when it did. */
HIDDEN int fk_capturing(CUstream hs);
HIDDEN int fk_blocking_capture(void);
HIDDEN int fk_invalidate_blocking(void);
HIDDEN int fk_capture_kernel(CUstream hs, CUfunction f, unsigned gx, unsigned bx);
HIDDEN int fk_capture_copy(CUstream hs, uintptr_t d, uintptr_t s, size_t n);
HIDDEN int fk_capture_memset(CUstream hs, uintptr_t d, unsigned elem, size_t n);
HIDDEN int fk_capture_alloc(CUstream hs, uintptr_t d, size_t n);
HIDDEN int fk_capture_free(CUstream hs, uintptr_t d);

/* fakestream.c: whether a stream synchronizes with the legacy stream; the
 * strict checks of a call on stream hs (FAKECUDA_STRICT_STREAMS,
 * FAKECUDA_STRICT_CAPTURE): the call's error, 0 to go on. */
HIDDEN int fk_blocking(CUstream hs);
HIDDEN CUresult fk_stream_use(const char *api, CUstream hs);

#endif
