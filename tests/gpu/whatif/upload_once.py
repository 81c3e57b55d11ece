# SPDX-License-Identifier: MIT
"""A one-time upload before the loop: 2 GiB of weights copied once from
pageable memory, then a GPU-bound loop of matmuls. No step has a copy: the
report must make no per-step finding of it (a one-time cost at most).
"Fix": the upload pinned; the steps cannot change."""
import torch

from common import args, timed, torch_sync

a = args(steps=40, warmup=5)
dev = torch.device("cuda")
w = torch.ones(512, 1024, 1024)  # 2 GiB
if a.fix:
    w = w.pin_memory()
w = w.to(dev)
x = torch.randn(8192, 8192, device=dev)


def step(i):
    y = x
    for j in range(4):
        y = torch.tanh(y @ x)
    return y


timed(step, a, torch_sync)
