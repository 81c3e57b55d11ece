# SPDX-License-Identifier: MIT
"""Two GPUs in one process: N0 in-place adds on cuda:0, N1 on cuda:1, then a
4 MiB pageable copy to cuda:1 (tests/gpu/devices_check.sh checks which
device gpuspy put each call and each GPU record on)."""
import torch

N0, N1 = 300, 500
x0 = torch.ones(1 << 16, device="cuda:0")
x1 = torch.ones(1 << 16, device="cuda:1")
for _ in range(N0):
    x0.add_(1)
for _ in range(N1):
    x1.add_(1)
y1 = torch.arange(1 << 20, dtype=torch.float32).to("cuda:1")  # 4 MiB, pageable
torch.cuda.synchronize(0)
torch.cuda.synchronize(1)
print(f"x0 {x0[0].item():.0f} x1 {x1[0].item():.0f} y1 {y1[-1].item():.0f}")
