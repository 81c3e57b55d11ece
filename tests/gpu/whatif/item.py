# SPDX-License-Identifier: MIT
"""`.item()` every step: the loss read back right after the step is
launched, then 4 ms of host work (logging, metrics) that could have run
while the GPU computed (about 5 ms of GPU work a step).
Fix: the losses kept on the device and read once every 20 steps."""
import torch

from common import args, host_work, timed, torch_sync

a = args(steps=60, warmup=5)
dev = torch.device("cuda")
model = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(4096, 4096), torch.nn.ReLU())]).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(2048, 4096, device=dev)
losses = []


def step(i):
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if a.fix:
        losses.append(loss.detach())
        if len(losses) == 20:
            torch.stack(losses).cpu()
            losses.clear()
    else:
        loss.item()
    host_work(4.0)


timed(step, a, torch_sync)
