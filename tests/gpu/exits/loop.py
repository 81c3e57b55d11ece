# SPDX-License-Identifier: MIT
"""The ways out of tests/gpu/exits.sh (issue 54, points 3 and 4), on a
launch-bound PyTorch loop (a small MLP, ~40 kernels a step):
  kill:   loops until killed; prints "looping" after its warm-up
  exit:   50 steps, synchronised, then os._exit(0)
  abort:  50 steps, synchronised, then os.abort() (SIGABRT, no handler)
  term:   50 steps, synchronised, then SIGTERM to itself (no handler)
  index:  50 steps, then an index past the end on the GPU: a device-side
          assert; the synchronize that sees it raises (exit 1)
Usage: loop.py MODE"""
import os
import signal
import sys

import torch

mode = sys.argv[1]
torch.manual_seed(0)
layers = [torch.nn.Linear(256, 256) for _ in range(6)]
model = torch.nn.Sequential(*[m for lin in layers for m in (lin, torch.nn.ReLU())]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(64, 256, device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    model(x).square().mean().backward()
    opt.step()


for _ in range(10):
    step()
torch.cuda.synchronize()
if mode == "kill":
    print("looping", flush=True)
    while True:
        step()
for _ in range(50):
    step()
if mode == "index":
    table = torch.zeros(1000, device="cuda")
    idx = torch.tensor([10 ** 6], device="cuda")
    bad = table[idx]  # the line the report should name
    torch.cuda.synchronize()
    print("not reached", bad)
torch.cuda.synchronize()
print("done", flush=True)
if mode == "exit":
    os._exit(0)
if mode == "abort":
    os.abort()
if mode == "term":
    os.kill(os.getpid(), signal.SIGTERM)
