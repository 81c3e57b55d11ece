/* SPDX-License-Identifier: MIT */
/*
 * The NVTX ranges libraries open for themselves, by the prefixes of their
 * names: CCCL (cub::, thrust::), XLA and its compiler (Xla*, Thunk),
 * cuDNN, cuBLAS, NCCL, TensorRT, and unnamed ranges (registered payloads
 * that carry no message). Shared by libgpuspy, which does not record a
 * library's range opened inside another library range (GPUSPY_NVTX_LIBRARY),
 * and the report, which counts them apart from the user's phases.
 */
#ifndef GPUSPY_LIBRANGES_H
#define GPUSPY_LIBRANGES_H

#include <string.h>

static inline int gspy_library_range(const char *name)
{
	static const char *const prefixes[] = {
		"cub::", "thrust::", "CUB", "Xla", "xla::", "Thunk", "cudnn", "cuDNN", "cublas", "cuBLAS",
		"nccl", "NCCL", "TensorRT", "TRT", "(unnamed)", "(more than 65536 NVTX strings)",
	};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

#endif
