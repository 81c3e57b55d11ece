// SPDX-License-Identifier: MIT
// cuBLAS on per-thread streams over managed memory from OpenMP threads, in
// the manner of NVIDIA's UnifiedMemoryStreams sample (written here from the
// public APIs): each task gets managed buffers attached to its thread's
// stream, then a small task runs on the host and a large one is a
// cublasDgemv on the device. gpuspy once hung this program at start-up.
// Build: nvcc -O2 -Xcompiler -fopenmp um_streams_cublas.cu -lcublas -o um_streams_cublas
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <omp.h>

struct Task {
	int n;
	double *a, *x, *y;
};

int main()
{
	const int ntasks = 40, nthreads = 4;
	cudaStream_t streams[nthreads + 1];
	cublasHandle_t handles[nthreads + 1];
	for (int i = 0; i <= nthreads; i++) {
		cudaStreamCreate(&streams[i]);
		cublasCreate(&handles[i]);
	}
	Task tasks[ntasks];
	srand(7);
	for (int i = 0; i < ntasks; i++) {
		Task &t = tasks[i];
		t.n = i % 3 == 0 ? 64 : 512 + 64 * (i % 7);
		cudaMallocManaged(&t.a, sizeof(double) * t.n * t.n);
		cudaMallocManaged(&t.x, sizeof(double) * t.n);
		cudaMallocManaged(&t.y, sizeof(double) * t.n);
		cudaDeviceSynchronize();
		for (int k = 0; k < t.n * t.n; k++)
			t.a[k] = 1.0 / (1 + k % 13);
		for (int k = 0; k < t.n; k++) {
			t.x[k] = 1.0;
			t.y[k] = 0.0;
		}
	}
	double sum = 0;
	omp_set_num_threads(nthreads);
#pragma omp parallel for schedule(static, 1) reduction(+ : sum)
	for (int i = 0; i < ntasks; i++) {
		int tid = omp_get_thread_num() + 1;
		Task &t = tasks[i];
		cudaStreamAttachMemAsync(streams[tid], t.a, 0, cudaMemAttachSingle);
		cudaStreamAttachMemAsync(streams[tid], t.x, 0, cudaMemAttachSingle);
		cudaStreamAttachMemAsync(streams[tid], t.y, 0, cudaMemAttachSingle);
		cudaStreamSynchronize(streams[tid]);
		if (t.n < 100) {
			for (int r = 0; r < t.n; r++)
				for (int c = 0; c < t.n; c++)
					t.y[r] += t.a[r * t.n + c] * t.x[c];
		} else {
			double one = 1.0, zero = 0.0;
			cublasSetStream(handles[tid], streams[tid]);
			cublasDgemv(handles[tid], CUBLAS_OP_N, t.n, t.n, &one, t.a, t.n, t.x, 1, &zero, t.y, 1);
			cudaStreamSynchronize(streams[tid]);
		}
		double s = 0;
		for (int k = 0; k < t.n; k++)
			s += t.y[k];
		sum += s;
	}
	cudaDeviceSynchronize();
	printf("tasks %d, checksum %.6f\n", ntasks, sum);
	for (int i = 0; i < ntasks; i++) {
		cudaFree(tasks[i].a);
		cudaFree(tasks[i].x);
		cudaFree(tasks[i].y);
	}
	for (int i = 0; i <= nthreads; i++) {
		cublasDestroy(handles[i]);
		cudaStreamDestroy(streams[i]);
	}
	return 0;
}
