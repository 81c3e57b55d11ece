# SPDX-License-Identifier: MIT
"""Two epochs of training model A on the CPU, each followed by a validation
pass of model B (an EMA copy, say) with no optimizer step. B is first called
after the forward hook learned A: the new pass over a DataLoader must make
gpuspy watch every module again, so B's calls begin forward too. Prints the
forward hooks after the last training pass: global, on A, on B."""
import torch

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(12, 8), torch.randn(12, 1))
loader = torch.utils.data.DataLoader(data, batch_size=4)
a = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
b = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
opt = torch.optim.SGD(a.parameters(), lr=0.1)
lossf = torch.nn.MSELoss()
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        lossf(a(x), y).backward()
        opt.step()
    if epoch == 1:
        print("hooks global", len(torch.nn.modules.module._global_forward_pre_hooks),
              "a", len(a._forward_pre_hooks), "b", len(b._forward_pre_hooks))
    with torch.no_grad():
        for x, _ in loader:
            b(x)
print("done")
