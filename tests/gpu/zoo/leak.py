# SPDX-License-Identifier: MIT
"""Zoo: a leak. Each step keeps its loss tensor, with its autograd graph
and activations, in a list (the classic `losses.append(loss)` without
.item() or .detach()): device memory grows every step and is never
returned. 24 steps of a 3-layer MLP on 4096 x 8192 inputs."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8192, 8192), torch.nn.ReLU(), torch.nn.Linear(8192, 8192),
                            torch.nn.ReLU(), torch.nn.Linear(8192, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
losses = []
for step in range(24):
    x = torch.randn(4096, 8192, device="cuda")
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()
    losses.append(loss)  # the leak: the graph and its activations stay
torch.cuda.synchronize()
print(f"leak: {len(losses)} steps, {torch.cuda.memory_allocated() >> 20} MiB allocated")
