# SPDX-License-Identifier: MIT
"""A healthy GPU-bound loop: large bf16 matmuls back to back, the host far
ahead, no waits in the step. The report must find nothing to fix."""
import torch

from common import args, timed, torch_sync

a = args(steps=40, warmup=5)
dev = torch.device("cuda")
x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
w = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)


def step(i):
    y = x
    for _ in range(8):
        y = y @ w
    return y


timed(step, a, torch_sync)
