# SPDX-License-Identifier: MIT
"""A training loop on the PyTorch stand-in (tests/progs/faketorch) whose
model calls in steps 2 and 4 run while torch.compiler.is_compiling() says True,
as the hooks a compiled function runs do while Dynamo traces them. Usage:
PYTHONPATH=tests/progs/faketorch torch_compiling.py"""
import torch

loader = torch.utils.data.DataLoader(range(5))
model = torch.nn.Module()
opt = torch.optim.SGD()
for i, x in enumerate(loader):
    opt.zero_grad()
    torch._compiling(i in (2, 4))  # 2: while learning the models; 4: after
    y = model(x)
    torch._compiling(False)
    y.backward()
    opt.step()
print("done", torch.__file__.endswith("faketorch/torch/__init__.py"))
