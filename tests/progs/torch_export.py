# SPDX-License-Identifier: MIT
"""What a training script does with its model besides training it, after
GPUSPY_TORCH_LEARN_STEPS steps (when gpuspy's helper has put its forward
hook on the model): each must behave as it does untraced.
Usage: torch_export.py WHAT [PATH]
  scripted - train a torch.jit.script'ed Linear for 4 steps (a ScriptModule
             takes no Python hook)
  save     - train, then torch.save the model to PATH, pickle it and
             deepcopy it; print the copies' hooks and outputs
  jit      - train, then torch.jit.script and torch.jit.trace the model and
             run both
  backward - backward through a graph a second time (an error whose
             traceback passes through the helper's wrappers)
  loader   - a dataset that raises at its third item (through the
             DataLoader iterator's __next__)"""
import copy
import pickle
import sys
from typing import Tuple

import torch


def keep(module, inputs: Tuple[torch.Tensor]) -> None:
    """The program's own pre-hook (TorchScript compiles it): kept."""
    return None


what = sys.argv[1]
torch.manual_seed(0)
x1 = torch.ones(1, 4)
if what == "backward":
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()
if what == "loader":
    class Bad(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise IndexError(f"no item {i}")
            return torch.ones(4)
    for x in torch.utils.data.DataLoader(Bad()):
        print("item", x.tolist())
model = torch.nn.Linear(4, 2)
if what == "scripted":
    model = torch.jit.script(model)
else:
    model.register_forward_pre_hook(keep)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = 0
for x in torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    steps += 1
print("steps", steps, model(x1).tolist())
if what == "save":
    torch.save(model, sys.argv[2])
    for m in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        print(len(m._forward_pre_hooks), m(x1).tolist())
    print("model keeps", len(model._forward_pre_hooks) - len(copy.copy(model)._forward_pre_hooks))
elif what == "jit":
    s = torch.jit.script(model)
    t = torch.jit.trace(model, x1)
    print("script", s(x1).tolist(), "trace", t(x1).tolist(), len(model._forward_pre_hooks) > 0)
