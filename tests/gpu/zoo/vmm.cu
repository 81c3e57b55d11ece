// SPDX-License-Identifier: MIT
// Zoo: virtual memory management: cuMemCreate, cuMemAddressReserve,
// cuMemMap, cuMemSetAccess; a kernel writes the mapped range, a copy
// brings it back, then unmap and release.
// Build: nvcc -O2 vmm.cu -lcuda -o vmm
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void fill(int *p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = i; }

int main()
{
	cudaFree(0);
	CUmemAllocationProp prop = {};
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	size_t gran = 0;
	cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	size_t size = 4 * gran;
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	cuMemCreate(&h, size, &prop, 0);
	cuMemAddressReserve(&va, size, 0, 0, 0);
	cuMemMap(va, size, 0, h, 0);
	CUmemAccessDesc acc = {};
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	cuMemSetAccess(va, size, &acc, 1);
	int n = (int)(size / sizeof(int));
	fill<<<(n + 255) / 256, 256>>>((int *)va, n);
	int last = 0;
	cudaMemcpy(&last, (int *)va + n - 1, sizeof(int), cudaMemcpyDeviceToHost);
	cuMemUnmap(va, size);
	cuMemRelease(h);
	cuMemAddressFree(va, size);
	printf("vmm: %d\n", last);
	return 0;
}
