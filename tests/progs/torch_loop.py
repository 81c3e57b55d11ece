# SPDX-License-Identifier: MIT
"""A CPU training loop with no gpuspy code in it: DataLoader, a small model,
SGD. Run under libgpuspy, its trace must show data / forward / backward /
optimizer phases with step numbers. Usage: torch_loop.py [STEPS [PAUSED_STEP [hooks]]] (PAUSED_STEP -1: none)
With PAUSED_STEP, that step's body runs between gpuspy_torch.pause() and
resume(), and the loop prints how many global module hooks each saw."""
import sys

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
paused = int(sys.argv[2]) if len(sys.argv) > 2 else -1
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(steps * 4, 8), torch.randn(steps * 4, 1))
loader = torch.utils.data.DataLoader(data, batch_size=4)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
lossf = torch.nn.MSELoss()
for i, (x, y) in enumerate(loader):
    if i == paused:
        import gpuspy_torch
        gpuspy_torch.pause()
        print("paused hooks", len(torch.nn.modules.module._global_forward_pre_hooks))
    opt.zero_grad()
    loss = lossf(model(x), y)
    loss.backward()
    opt.step()
    if i == paused:
        gpuspy_torch.resume()
        print("resumed hooks", len(torch.nn.modules.module._global_forward_pre_hooks))
print(f"done {steps} steps")
if len(sys.argv) > 3:  # where the forward hooks are: global, and on the model
    print("hooks global", len(torch.nn.modules.module._global_forward_pre_hooks),
          "model", len(model._forward_pre_hooks))
