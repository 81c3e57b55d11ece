# SPDX-License-Identifier: MIT
"""GPU work, then idle until killed (tests/gpu/cupti_check.sh's `kill` case:
gpuspy's GPU records must reach the trace file while the process idles).
Usage: hold.py N   (N rounds of matmul, scale and relu; prints "ready")"""
import sys
import time

import torch

x = torch.randn(1024, 1024, device="cuda")
for _ in range(int(sys.argv[1])):
    x = torch.relu(x @ x * 1e-3)
torch.cuda.synchronize()
print("ready", flush=True)
time.sleep(600)
