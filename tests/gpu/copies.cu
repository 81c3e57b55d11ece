// SPDX-License-Identifier: MIT
// The copies the CUPTI double models without an H200 check behind it
// (tests/gpu/copies_check.sh): 2D and 3D copies, a peer copy within one
// device, and a batch. Each is made ROUNDS times; one line per kind says
// what was asked: "did API DIR BYTES_PER_CALL x CALLS" (no two kinds with
// the same direction and bytes: the check tells them apart by those).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x)                                                                              \
	do {                                                                               \
		cudaError_t e_ = (x);                                                      \
		if (e_ != cudaSuccess) {                                                   \
			fprintf(stderr, "copies: %s: %s\n", #x, cudaGetErrorString(e_));   \
			return 1;                                                          \
		}                                                                          \
	} while (0)

enum { ROUNDS = 5 };

int main()
{
	cudaStream_t st;
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	char *dev, *dev2, *pinned, *pageable = (char *)malloc(1 << 20);
	CK(cudaMalloc(&dev, 1 << 20));
	CK(cudaMalloc(&dev2, 1 << 20));
	CK(cudaMallocHost(&pinned, 1 << 20));
	memset(pageable, 1, 1 << 20);
	memset(pinned, 2, 1 << 20);

	for (int i = 0; i < ROUNDS; i++) // 1000 x 4 rows, pitches 1024
		CK(cudaMemcpy2D(dev, 1024, pageable, 1024, 1000, 4, cudaMemcpyHostToDevice));
	printf("did cudaMemcpy2D h2d %d x %d\n", 1000 * 4, ROUNDS);
	for (int i = 0; i < ROUNDS; i++)
		CK(cudaMemcpy2DAsync(dev, 1024, pinned, 1024, 1000, 3, cudaMemcpyHostToDevice, st));
	CK(cudaStreamSynchronize(st));
	printf("did cudaMemcpy2DAsync h2d %d x %d\n", 1000 * 3, ROUNDS);

	cudaMemcpy3DParms p3 = {};
	p3.srcPtr = make_cudaPitchedPtr(dev, 64, 32, 8);
	p3.dstPtr = make_cudaPitchedPtr(pageable, 64, 32, 8);
	p3.extent = make_cudaExtent(32, 8, 4); // 32 bytes x 8 rows x 4 slices
	p3.kind = cudaMemcpyDeviceToHost;
	for (int i = 0; i < ROUNDS; i++)
		CK(cudaMemcpy3D(&p3));
	printf("did cudaMemcpy3D d2h %d x %d\n", 32 * 8 * 4, ROUNDS);

	for (int i = 0; i < ROUNDS; i++)
		CK(cudaMemcpyPeer(dev2, 0, dev, 0, 2048));
	printf("did cudaMemcpyPeer d2d %d x %d\n", 2048, ROUNDS);

	void *dsts[3] = { dev, dev + 4096, dev + 8192 };
	const void *srcs[3] = { pinned, pinned + 4096, pinned + 8192 };
	size_t sizes[3] = { 100, 200, 300 }, idx = 0;
	cudaMemcpyAttributes attr = {};
	attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	for (int i = 0; i < ROUNDS; i++)
		CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, st));
	CK(cudaStreamSynchronize(st));
	printf("did cudaMemcpyBatchAsync h2d %d x %d\n", 600, ROUNDS);

	CK(cudaFreeHost(pinned));
	CK(cudaFree(dev2));
	CK(cudaFree(dev));
	free(pageable);
	return 0;
}
