# SPDX-License-Identifier: MIT
"""Pageable copies: each step copies its 64 MiB batch from pageable host
memory, then computes on it (about 3 ms of matmuls).
Fix: the batches in pinned memory, copied with non_blocking=True, so the
copy is a DMA that overlaps the previous step's compute."""
import torch

from common import args, timed, torch_sync

a = args(steps=40, warmup=5)
dev = torch.device("cuda")
batches = [torch.randn(4096, 4096) for _ in range(4)]  # 64 MiB each
if a.fix:
    batches = [b.pin_memory() for b in batches]
w = torch.randn(4096, 4096, device=dev)


def step(i):
    x = batches[i % len(batches)].to(dev, non_blocking=a.fix)
    y = x
    for _ in range(3):
        y = torch.tanh(y @ w)
    return y


timed(step, a, torch_sync)
