# SPDX-License-Identifier: MIT
"""The MLP step (docs/design.md#the-mlp-loop) on the CPU, small (8 layers 64 wide, batch 16,
one thread) so that Python and PyTorch's dispatch dominate as on the GPU:
bench/helper_callgrind.sh counts its instructions per step.
Usage: mlp_cpu.py STEPS"""
import sys, torch, torch.nn as nn
torch.manual_seed(0); torch.set_num_threads(1)
layers = []
for _ in range(8):
    layers += [nn.Linear(64, 64), nn.ReLU()]
model = nn.Sequential(*layers[:-1]); lossf = nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(int(sys.argv[1])):
    x, y = torch.randn(16, 64), torch.randn(16, 64)
    opt.zero_grad()
    loss = lossf(model(x), y)
    loss.backward()
    opt.step()
