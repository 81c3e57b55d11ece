# SPDX-License-Identifier: MIT
"""CUDA graph replay: a 3-layer MLP captured in torch.cuda.CUDAGraph and
replayed. Usage: graph.py [REPLAYS]"""
import sys

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                            torch.nn.ReLU(), torch.nn.Linear(256, 10)).cuda()
x = torch.randn(64, 256, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        y = model(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = model(x)
for _ in range(n):
    g.replay()
torch.cuda.synchronize()
print(f"replays {n} sum {y.sum().item():.3f}")
