# SPDX-License-Identifier: MIT
"""A launch-bound training step: a 16-layer 256-wide MLP at batch 64, so
each of its ~150 kernels runs a few microseconds and the host's launches
set the pace.
Fix: the whole step (forward, backward, optimizer) captured once in a CUDA
graph and replayed (PyTorch's whole-network capture recipe)."""
import torch

from common import args, timed, torch_sync

a = args(steps=300, warmup=20)
dev = torch.device("cuda")
model = torch.nn.Sequential(*[m for _ in range(16) for m in (torch.nn.Linear(256, 256), torch.nn.ReLU())]).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 256, device=dev)
y = torch.randn(64, 256, device=dev)


def eager(i):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()


if a.fix:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up on a side stream, as the recipe says
        for i in range(3):
            eager(i)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    timed(lambda i: g.replay(), a, torch_sync)
else:
    timed(eager, a, torch_sync)
