# SPDX-License-Identifier: MIT
"""What a training script does with its model besides training it, after
GPUSPY_TORCH_LEARN_STEPS steps (when gpuspy's helper has put its forward
hook on the model): each must behave as it does untraced.
Usage: torch_export.py WHAT [PATH]
  scripted - train a torch.jit.script'ed Linear for 4 steps (a ScriptModule
             takes no Python hook)
  save     - train, then torch.save the model to PATH, pickle it and
             deepcopy it; print the copies' hooks and outputs; remove the
             program's hook from a deep copy through the handle the model
             keeps (copied with it) and print the copy's hooks
  jit      - train, then torch.jit.script and torch.jit.trace the model and
             run both
The model keeps the handle of its own pre-hook as an attribute, so that a
pickle or a deep copy of it holds the handle too."""
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
model = torch.nn.Linear(4, 2)
if what == "scripted":
    model = torch.jit.script(model)
else:
    model.handle = model.register_forward_pre_hook(keep)
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
    c = copy.deepcopy(model)
    c.handle.remove()
    print("copy after remove", len(c._forward_pre_hooks))
elif what == "jit":
    s = torch.jit.script(model)
    t = torch.jit.trace(model, x1)
    print("script", s(x1).tolist(), "trace", t(x1).tolist(), len(model._forward_pre_hooks) > 0)
