# SPDX-License-Identifier: MIT
"""gpuspy and torch.profiler in one process. Usage: coexist.py first|later
  first: the profiler starts before any CUDA work (it takes CUPTI first);
  later: CUDA work first (gpuspy takes CUPTI), then the profiler.
Prints how many CUDA kernel events the profiler got."""
import sys

import torch

order = sys.argv[1]
acts = [torch.profiler.ProfilerActivity.CUDA]
if order == "later":
    a = torch.randn(512, 512, device="cuda")
    (a @ a).sum().item()
prof = torch.profiler.profile(activities=acts)
prof.__enter__()
a = torch.randn(512, 512, device="cuda")
for _ in range(20):
    a = (a @ a).tanh()
torch.cuda.synchronize()
prof.__exit__(None, None, None)
n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
print(f"profiler_cuda_events {n}")
