/* SPDX-License-Identifier: MIT */
/*
 * Driven line by line on stdin, for recording on demand (test_control.py):
 * after each line it prints "ok" and waits, so a test can switch recording
 * between two calls it knows.
 *   a N   cuMemAlloc of N bytes, then its cuMemFree;   A N   one kept
 *   h N   an N-byte copy to the device from pageable memory;  H N   from pinned
 *   k N   a kernel launch of N blocks (on the CUPTI double: N us of GPU time)
 *   p X   gpuspy_phase_push(X)       q   gpuspy_phase_pop()
 *   n X   nvtxRangePushA(X)          m   nvtxRangePop()
 *   t X S a phase X of step S begins, as the PyTorch helper's do; T X S it ends
 *   x     exit 0
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "../../include/gpuspy.h"
#include "../../lib/cuda_api.h"
#include "../doubles/fakecuda.h"

int main(void)
{
	CUcontext ctx;
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	CUfunction f = fakecuda_function("window_kernel", NULL);
	static char pageable[1 << 20];
	void *pinned = NULL;
	CUdeviceptr dev = 0;
	char line[256];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		const char *arg = line[0] && line[1] == ' ' ? line + 2 : "";
		switch (line[0]) {
		case 'a': {
			CUdeviceptr p = 0; /* a failed allocation leaves it alone */
			cuMemAlloc_v2(&p, (size_t)strtoull(arg, NULL, 10));
			cuMemFree_v2(p);
			break;
		}
		case 'A': {
			CUdeviceptr p = 0; /* a failed allocation leaves it alone */
			cuMemAlloc_v2(&p, (size_t)strtoull(arg, NULL, 10));
			break;
		}
		case 'h':
		case 'H': {
			size_t n = (size_t)strtoull(arg, NULL, 10);
			if (n > sizeof(pageable))
				n = sizeof(pageable);
			if (!dev)
				cuMemAlloc_v2(&dev, sizeof(pageable));
			if (line[0] == 'H' && !pinned)
				cuMemAllocHost_v2(&pinned, sizeof(pageable));
			cuMemcpyHtoD_v2(dev, line[0] == 'H' ? pinned : pageable, n);
			break;
		}
		case 't':
		case 'T': { /* libgpuspy's entry for python/gpuspy_torch.py, when it is there */
			void (*tp)(const char *, unsigned long long, int) =
				(void (*)(const char *, unsigned long long, int))dlsym(RTLD_DEFAULT, "gpuspy_torch_phase");
			char name[64];
			unsigned long long step = 0;
			if (tp && sscanf(arg, "%63s %llu", name, &step) == 2)
				tp(name, step, line[0] == 't');
			break;
		}
		case 'k':
			cuLaunchKernel(f, (unsigned)strtoul(arg, NULL, 10), 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
			break;
		case 'p': GPUSPY_PHASE_PUSH(arg); break;
		case 'q': GPUSPY_PHASE_POP(); break;
		case 'n': nvtxRangePushA(arg); break;
		case 'm': nvtxRangePop(); break;
		case 'x': return 0;
		default: printf("bad line %s\n", line); return 1;
		}
		printf("ok\n");
		fflush(stdout);
	}
	return 0;
}
