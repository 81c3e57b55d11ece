# SPDX-License-Identifier: MIT
"""The zoo's torch_compile_ro loop, timed: a small MLP compiled with
torch.compile(mode="reduce-overhead") (CUDA graphs), SGD eager, batches of
64 from a TensorDataset loaded in the main process (num_workers=0). Its
step is a few ms, most of it the host's: loading a batch (64 samples
indexed one by one, then collated) is about a quarter of it.
Fix: what its report says, DataLoader(num_workers=N, pin_memory=True),
N=2 (the report's "1 worker keeps up", and one to spare), persistent.
--load-ms L makes each batch cost L ms more to load, --workers N the
fix's workers: loader_cost.sh finds where workers begin to pay.
Not one of the suite's ten: a real program's advice checked."""
import torch

from common import args, host_work, timed, torch_sync

a = args(steps=400, warmup=30, load_ms=0.0, workers=2)
torch.manual_seed(0)
n = (a.steps + a.warmup) * 64


class Costly(torch.utils.data.TensorDataset):
    """--load-ms: each batch's samples cost that much more CPU (a decode)."""
    def __getitem__(self, i):
        host_work(a.load_ms / 64)
        return super().__getitem__(i)


data = (Costly if a.load_ms else torch.utils.data.TensorDataset)(torch.randn(n, 512), torch.randint(0, 10, (n,)))
kw = dict(num_workers=a.workers, pin_memory=True, persistent_workers=True) if a.fix else {}
loader = iter(torch.utils.data.DataLoader(data, batch_size=64, **kw))
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
cmodel = torch.compile(model, mode="reduce-overhead")
opt = torch.optim.SGD(model.parameters(), lr=1e-2)


def step(i):
    x, y = next(loader)
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    loss = torch.nn.functional.cross_entropy(cmodel(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


timed(step, a, torch_sync)
