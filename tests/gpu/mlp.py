# SPDX-License-Identifier: MIT
"""The FIELD-NOTES launch-bound loop: an 8-layer 512-wide MLP, batch 128,
SGD, inputs made on the CPU every step (pageable H2D copies).
Usage: python3 tests/gpu/mlp.py [STEPS]   (default 310: 10 warm-up + 300)"""
import sys

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 310
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers[:-1]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
lossf = torch.nn.MSELoss()
for step in range(steps):
    x = torch.randn(128, 512).cuda()
    y = torch.randn(128, 512).cuda()
    opt.zero_grad()
    loss = lossf(model(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"steps {steps} loss {loss.item():.4f}")
