# SPDX-License-Identifier: MIT
"""Zoo: CuPy with a RawKernel and reductions, 10 rounds."""
import cupy as cp

add = cp.RawKernel(r'''
extern "C" __global__ void add(const int *a, const int *b, int *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}''', "add")
n = 1 << 20
a = cp.arange(n, dtype=cp.int32)
b = cp.ones(n, dtype=cp.int32)
c = cp.empty_like(a)
total = 0
for _ in range(10):
    add(((n + 255) // 256,), (256,), (a, b, c, cp.int32(n)))
    total += int(c.sum()) + int(c.max())
print(f"cupy: {total}")
