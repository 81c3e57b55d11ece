/* SPDX-License-Identifier: MIT */
/*
 * Names of the CUDA error codes a failed call returned, for the report:
 * the driver's CUresult for cu* entry points, the runtime's cudaError_t for
 * cuda* ones (the same number means different things in each). Taken from
 * the CUDA 13.0 headers' enums, which the reader is built against.
 */
#include <cuda.h>
#include <driver_types.h>
#include <stdio.h>
#include <string.h>

#include "util/cuda_errors.h"

#define E(x) { x, #x }
static const struct { int code; const char *name; } drv[] = {
	E(CUDA_ERROR_INVALID_VALUE), E(CUDA_ERROR_OUT_OF_MEMORY), E(CUDA_ERROR_NOT_INITIALIZED),
	E(CUDA_ERROR_DEINITIALIZED), E(CUDA_ERROR_NO_DEVICE), E(CUDA_ERROR_INVALID_DEVICE),
	E(CUDA_ERROR_INVALID_IMAGE), E(CUDA_ERROR_INVALID_CONTEXT), E(CUDA_ERROR_INVALID_HANDLE),
	E(CUDA_ERROR_NOT_FOUND), E(CUDA_ERROR_NOT_READY), E(CUDA_ERROR_ILLEGAL_ADDRESS),
	E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), E(CUDA_ERROR_LAUNCH_TIMEOUT), E(CUDA_ERROR_LAUNCH_FAILED),
	E(CUDA_ERROR_NOT_SUPPORTED), E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), E(CUDA_ERROR_UNKNOWN),
	E(CUDA_ERROR_ASSERT), E(CUDA_ERROR_HARDWARE_STACK_ERROR), E(CUDA_ERROR_ILLEGAL_INSTRUCTION),
	E(CUDA_ERROR_MISALIGNED_ADDRESS), E(CUDA_ERROR_INVALID_ADDRESS_SPACE), E(CUDA_ERROR_INVALID_PC),
}, rt[] = {
	E(cudaErrorInvalidValue), E(cudaErrorMemoryAllocation), E(cudaErrorInitializationError),
	E(cudaErrorCudartUnloading), E(cudaErrorNoDevice), E(cudaErrorInvalidDevice),
	E(cudaErrorInvalidResourceHandle), E(cudaErrorNotReady), E(cudaErrorIllegalAddress),
	E(cudaErrorLaunchOutOfResources), E(cudaErrorLaunchTimeout), E(cudaErrorLaunchFailure),
	E(cudaErrorNotSupported), E(cudaErrorStreamCaptureUnsupported), E(cudaErrorUnknown),
	E(cudaErrorAssert), E(cudaErrorHardwareStackError), E(cudaErrorIllegalInstruction),
	E(cudaErrorMisalignedAddress), E(cudaErrorInvalidAddressSpace), E(cudaErrorInvalidPc),
};
#undef E

const char *gs_cuda_error(const char *api, int code, char *buf, size_t cap)
{
	int runtime = api && (!strncmp(api, "cuda", 4) || !strncmp(api, "__cuda", 6));
	size_t n = runtime ? sizeof(rt) / sizeof(rt[0]) : sizeof(drv) / sizeof(drv[0]);
	for (size_t i = 0; i < n; i++)
		if ((runtime ? rt[i].code : drv[i].code) == code)
			return runtime ? rt[i].name : drv[i].name;
	snprintf(buf, cap, "error %d", code);
	return buf;
}

int gs_cuda_out_of_memory(const char *api, int code)
{
	int runtime = api && (!strncmp(api, "cuda", 4) || !strncmp(api, "__cuda", 6));
	return runtime ? code == cudaErrorMemoryAllocation : code == CUDA_ERROR_OUT_OF_MEMORY;
}
