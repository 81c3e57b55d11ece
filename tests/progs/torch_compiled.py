# SPDX-License-Identifier: MIT
"""tests/gpu/zoo/torch_compile_ro.py on the PyTorch stand-in
(tests/progs/faketorch): a compiled model trained over a DataLoader, the
optimizer eager, for EPOCHS passes of STEPS batches; prints how many
graphs were compiled and how many breaks taken, which must be the same
traced and untraced. HOW: `compile` (torch.compile(model)), `method`
(model.compile()), `forward` (model.forward = torch.compile(model.forward))
or `function` (a function compiled before the loop, as a library may as
it is imported, and called after it; the model eager).
Usage:
PYTHONPATH=tests/progs/faketorch torch_compiled.py [HOW] [EPOCHS] [STEPS]"""
import sys

import torch

how = sys.argv[1] if len(sys.argv) > 1 else "compile"
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 4
loader = torch.utils.data.DataLoader(range(steps))
model = torch.nn.Module()
if how == "method":
    model.compile()
    cmodel = model
elif how == "forward":
    model.forward = torch.compile(model.forward)
    cmodel = model
elif how == "function":
    fn = torch.compile(lambda t: t)
    cmodel = model
else:
    cmodel = torch.compile(model)
opt = torch.optim.SGD()
for _ in range(epochs):
    for x in loader:
        loss = cmodel(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
if how == "function":
    fn(0)
c = torch._dynamo.utils.counters
print(f"steps {epochs * steps} graphs {c['stats']['unique_graphs']} breaks {sum(c['graph_break'].values())}")
