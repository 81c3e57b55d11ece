# SPDX-License-Identifier: MIT
"""Zoo: torchvision ResNet-18, DataLoader(num_workers=2, pin_memory=True),
bf16 autocast, 12 SGD steps on synthetic images."""
import torch
import torchvision
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(384, 3, 64, 64), torch.randint(0, 10, (384,)))
loader = DataLoader(data, batch_size=32, num_workers=2, pin_memory=True)
model = torchvision.models.resnet18(num_classes=10).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps = 0
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    steps += 1
torch.cuda.synchronize()
print(f"resnet18: {steps} steps")
