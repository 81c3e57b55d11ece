# SPDX-License-Identifier: MIT
"""A CPU training loop with no gpuspy code in it: DataLoader, a small model,
SGD. Run under libgpuspy, its trace must show data / forward / backward /
optimizer phases with step numbers. Usage: torch_loop.py [STEPS]"""
import sys

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(steps * 4, 8), torch.randn(steps * 4, 1))
loader = torch.utils.data.DataLoader(data, batch_size=4)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
lossf = torch.nn.MSELoss()
for x, y in loader:
    opt.zero_grad()
    loss = lossf(model(x), y)
    loss.backward()
    opt.step()
print(f"done {steps} steps")
