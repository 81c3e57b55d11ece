# SPDX-License-Identifier: MIT
"""A PyTorch training loop whose input pipeline is the bottleneck, as in the
"GPU utilization stuck at 30%" story: each sample is built and augmented on
the CPU, in the main process unless --workers says otherwise, and copied
from pageable memory unless --pin-memory is given. No gpuspy code in it:
gpuspy finds the data / forward / backward / optimizer phases by itself.

Run:   tools/gpuspy run -- python3 examples/train.py
       tools/gpuspy run -- python3 examples/train.py --workers 4 --pin-memory
"""
import argparse
import time

import torch
import torch.nn as nn


class Synthetic(torch.utils.data.Dataset):
    """Random 3x64x64 images with a few CPU passes of 'augmentation'."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 64, 64, generator=g)
        for _ in range(6):
            img = (img * 1.01).clamp_(0, 1).flip(2).contiguous()
        return img, i % 10


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--pin-memory", action="store_true")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(Synthetic(), batch_size=a.batch, num_workers=a.workers,
                                         pin_memory=a.pin_memory, shuffle=False)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 16 * 16, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lossf = nn.CrossEntropyLoss()
    t0 = time.monotonic()
    for step, (x, y) in enumerate(loader):
        if step == a.steps:
            break
        x = x.cuda(non_blocking=a.pin_memory)
        y = y.cuda(non_blocking=a.pin_memory)
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    t = time.monotonic() - t0
    print(f"{a.steps} steps in {t:.2f} s ({a.steps / t:.1f} steps/s), workers={a.workers}, "
          f"pin_memory={a.pin_memory}, loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
