# SPDX-License-Identifier: MIT
"""The launch-bound MLP loop (docs/design.md#the-mlp-loop): an 8-layer
512-wide MLP, batch 128, SGD, inputs made on the CPU every step (pageable
H2D copies).
Usage: python3 tests/gpu/mlp.py [STEPS] [--loader]   (default 310: 10 warm-up + 300)
--loader draws the same random inputs through a DataLoader (for the phase
check: the data phase is the DataLoader's next)."""
import sys

import torch

args = [a for a in sys.argv[1:] if not a.startswith("--")]
steps = int(args[0]) if args else 310
use_loader = "--loader" in sys.argv
torch.manual_seed(0)
layers = []
for _ in range(8):
    layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers[:-1]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
lossf = torch.nn.MSELoss()

class Random(torch.utils.data.Dataset):
    def __len__(self):
        return steps

    def __getitem__(self, i):
        return torch.randn(128, 512), torch.randn(128, 512)


batches = iter(torch.utils.data.DataLoader(Random(), batch_size=None)) if use_loader else None
for step in range(steps):
    if batches:
        x, y = next(batches)
        x, y = x.cuda(), y.cuda()
    else:
        x = torch.randn(128, 512).cuda()
        y = torch.randn(128, 512).cuda()
    opt.zero_grad()
    loss = lossf(model(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"steps {steps} loss {loss.item():.4f}")
