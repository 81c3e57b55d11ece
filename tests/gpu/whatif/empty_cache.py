# SPDX-License-Identifier: MIT
"""`torch.cuda.empty_cache()` every step: the caching allocator hands its
blocks back, so each step allocates its activations with cudaMalloc again
(and cudaFree waits for the GPU).
Fix: no empty_cache() in the loop."""
import torch

from common import args, timed, torch_sync

a = args(steps=40, warmup=5)
dev = torch.device("cuda")
model = torch.nn.Sequential(*[m for _ in range(6) for m in (torch.nn.Linear(4096, 4096), torch.nn.ReLU())]).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)


def step(i):
    x = torch.randn(4096, 4096, device=dev)
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if not a.fix:
        torch.cuda.empty_cache()


timed(step, a, torch_sync)
