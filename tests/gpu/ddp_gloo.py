#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""DDP over gloo with every rank on the one GPU (issue 34, point 3), one
rank made slow: torchrun --nproc-per-node N tests/gpu/ddp_gloo.py
[--steps S] [--slow-rank R] [--slow-ms MS]. Each step the slow rank sleeps
MS before its forward pass (host-side work the others must wait for in
their all-reduce); the model's 2.1 M parameters go in DDP's buckets through
gloo's CUDA all-reduce (a copy to pinned memory, the reduction on the
host, a copy back). Prints "rank R steps S loss L" at the end."""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=40)
ap.add_argument("--slow-rank", type=int, default=1)
ap.add_argument("--slow-ms", type=float, default=30.0)
a = ap.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.cuda.set_device(0)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                      nn.Linear(1024, 10)).cuda()
ddp = DDP(model, device_ids=[0])
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
x = torch.randn(256, 1024, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
for i in range(a.steps):
    opt.zero_grad(set_to_none=True)
    if rank == a.slow_rank:
        time.sleep(a.slow_ms / 1000)
    loss = F.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
print(f"rank {rank} steps {a.steps} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
