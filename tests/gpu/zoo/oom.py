# SPDX-License-Identifier: MIT
"""Zoo: a program that runs out of device memory and catches it."""
import torch

held = []
try:
    while True:
        held.append(torch.empty(8 << 30, dtype=torch.uint8, device="cuda"))
except torch.OutOfMemoryError:
    print(f"oom: caught after {len(held)} blocks of 8 GiB")
del held
torch.cuda.empty_cache()
x = torch.ones(1 << 20, device="cuda")
print(f"oom: then {int(x.sum())}")
