# SPDX-License-Identifier: MIT
"""Where gpuspy's cost on the MLP loop goes (issue 5): per-operation times in
one PyTorch process, to run untraced and under gpuspy with GPUSPY_STACKS=0 /
GPUSPY_TORCH=0 (bench/gpu/cost_parts.sh). Prints one line per operation:
the median of 15 batches of N calls, in us per call."""
import statistics
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [nn.Linear(512, 512), nn.ReLU()]
model = nn.Sequential(*layers[:-1]).cuda()
lossf = nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
xc = torch.randn(128, 512)
xg = xc.cuda()


def step():
    x, y = torch.randn(128, 512).cuda(), torch.randn(128, 512).cuda()
    opt.zero_grad()
    loss = lossf(model(x), y)
    loss.backward()
    opt.step()


ops = {
    "step (MLP loop)": (step, 50),
    "copy h2d pageable 256 KiB (x.cuda())": (lambda: xc.cuda(), 200),
    "memset (torch.zeros on the GPU)": (lambda: torch.zeros(1024, device="cuda"), 200),
    "synchronize": (torch.cuda.synchronize, 200),
    "zero_grad": (opt.zero_grad, 200),
    "forward (model(x))": (lambda: model(xg), 100),
    "launch (x + 1)": (lambda: xg.add_(1), 200),
}
for _ in range(20):
    step()
torch.cuda.synchronize()
for name, (fn, n) in ops.items():
    fn()
    ts = []
    for _ in range(15):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) / n * 1e6)
    print(f"{name}: {statistics.median(ts):.2f} us")
