# SPDX-License-Identifier: MIT
"""A torch.compile'd function (Triton kernels), called N times.
Usage: compiled.py [CALLS]  (set TORCHINDUCTOR_CACHE_DIR to compare runs in
the same cache state)"""
import sys

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50


@torch.compile
def f(x, w):
    return torch.nn.functional.gelu(x @ w).softmax(-1) * 2 + 1


x = torch.randn(256, 256, device="cuda")
w = torch.randn(256, 256, device="cuda")
for _ in range(n):
    y = f(x, w)
torch.cuda.synchronize()
print(f"calls {n} sum {y.sum().item():.3f}")
