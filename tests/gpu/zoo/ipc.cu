// SPDX-License-Identifier: MIT
// Zoo: two processes share device memory through cudaIpcGetMemHandle. The
// parent allocates and fills 1 MiB, starts itself again as the child with
// the handle in hex; the child opens it, copies it back and checks it.
// Build: nvcc -O2 ipc.cu -o ipc
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const int n = 1 << 18;
	if (argc > 2 && !strcmp(argv[1], "child")) {
		cudaIpcMemHandle_t hd;
		for (size_t i = 0; i < sizeof(hd); i++)
			sscanf(argv[2] + 2 * i, "%2hhx", &((unsigned char *)&hd)[i]);
		int *d;
		if (cudaIpcOpenMemHandle((void **)&d, hd, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess)
			return 3;
		int *h = (int *)malloc(n * sizeof(int));
		cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost);
		long sum = 0;
		for (int i = 0; i < n; i++)
			sum += h[i];
		cudaIpcCloseMemHandle(d);
		printf("ipc child: sum %ld\n", sum);
		fflush(stdout);
		return 0;
	}
	int *d;
	cudaMalloc(&d, n * sizeof(int));
	int *h = (int *)malloc(n * sizeof(int));
	for (int i = 0; i < n; i++)
		h[i] = 3;
	cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
	cudaIpcMemHandle_t hd;
	cudaIpcGetMemHandle(&hd, d);
	char hex[2 * sizeof(hd) + 1];
	for (size_t i = 0; i < sizeof(hd); i++)
		sprintf(hex + 2 * i, "%02x", ((unsigned char *)&hd)[i]);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl(argv[0], argv[0], "child", hex, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("ipc parent: child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
