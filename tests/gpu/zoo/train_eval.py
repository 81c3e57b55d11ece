# SPDX-License-Identifier: MIT
"""Zoo: a training loop with an evaluation after every epoch, the commonest
shape of a PyTorch script: 4 epochs of 40 steps (zero_grad, forward,
backward, step, loss.item()), each followed by 10 evaluation batches under
torch.no_grad() (accuracy read with .item()). The report's step must be
the optimizer step, not the evaluation batch nor the epoch."""
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
train = DataLoader(TensorDataset(torch.randn(40 * 128, 256), torch.randint(0, 10, (40 * 128,))), batch_size=128,
                   shuffle=True)
val = DataLoader(TensorDataset(torch.randn(10 * 256, 256), torch.randint(0, 10, (10 * 256,))), batch_size=256)
steps = 0
for epoch in range(4):
    model.train()
    total = 0.0
    for x, y in train:
        x, y = x.to(dev), y.to(dev)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()
        steps += 1
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val:
            x, y = x.to(dev), y.to(dev)
            correct += (model(x).argmax(1) == y).sum().item()
    print(f"epoch {epoch}: loss {total / len(train):.3f}, accuracy {correct / len(val.dataset):.3f}")
print(f"train_eval: {steps} steps")
