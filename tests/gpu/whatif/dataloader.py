# SPDX-License-Identifier: MIT
"""A starved DataLoader: each sample costs about 0.5 ms of CPU (numpy,
element-wise: no BLAS threads to fight over between workers),
32 samples a batch, loaded in the main process (num_workers=0) while the
GPU's step takes a few ms.
Fix: DataLoader(num_workers=9, pin_memory=True, persistent_workers=True):
the workers the report's saving names (8 to 9 keep up, in runs 1-4 of the
suite on the H200 and an H100); runs 1-4 used 6, which still waited for
them (12 ran run1's step at 3.04 ms against 6's 3.49)."""
import numpy as np
import torch

from common import args, timed, torch_sync


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        r = np.random.default_rng(i)
        x = r.standard_normal((64, 256)).astype(np.float32)
        for _ in range(32):  # about 0.5 ms of CPU a sample
            x = np.tanh(x * np.float32(1.0001) + np.float32(1e-3))
        return torch.from_numpy(x.reshape(-1)), i % 10


a = args(steps=60, warmup=8)
dev = torch.device("cuda")
kw = dict(num_workers=9, pin_memory=True, persistent_workers=True, prefetch_factor=4) if a.fix else {}
loader = iter(torch.utils.data.DataLoader(Slow(), batch_size=32, shuffle=False, **kw))
model = torch.nn.Sequential(torch.nn.Linear(64 * 256, 4096), torch.nn.ReLU(),
                            *[m for _ in range(6) for m in (torch.nn.Linear(4096, 4096), torch.nn.ReLU())],
                            torch.nn.Linear(4096, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)


def step(i):
    x, y = next(loader)
    x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


timed(step, a, torch_sync)
