# SPDX-License-Identifier: MIT
"""torch.compile(mode="reduce-overhead") on a small training loop over a
DataLoader: the model is compiled (CUDA graphs), the optimizer eager.
Prints how many graphs Dynamo made and how many graph breaks it took,
which must be the same traced and untraced (the gpuspy helper's hooks
are invisible to Dynamo), and its stderr must stay empty of Dynamo's
warnings. Usage: torch_compile_ro.py [STEPS]"""
import sys

import torch
import torch._dynamo.utils

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(steps * 64, 512), torch.randint(0, 10, (steps * 64,)))
loader = torch.utils.data.DataLoader(data, batch_size=64)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
cmodel = torch.compile(model, mode="reduce-overhead")
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    loss = torch.nn.functional.cross_entropy(cmodel(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
c = torch._dynamo.utils.counters
print(f"steps {steps} graphs {c['stats']['unique_graphs']} breaks {sum(c['graph_break'].values())}")
