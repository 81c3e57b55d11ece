# SPDX-License-Identifier: MIT
"""The loops for the overhead benchmark and the CUPTI checks
(docs/design.md#the-mlp-loop).
  mlp:  8-layer 512-wide MLP, batch 128, SGD, inputs made on the CPU each step
        (launch-bound, ~40 kernels per ~1 ms step);
  conv: a small conv net fed by a DataLoader (0 workers, no pinning);
  resnet: the zoo's torchvision ResNet-18, DataLoader(num_workers=2,
        pin_memory=True, persistent workers), bf16 autocast, SGD;
  gpt2: the zoo's transformers GPT-2 (2 layers, from a config), AdamW;
  jax:  a JAX jitted training step of an MLP (no PyTorch imported).
LOOP_PAUSED=1 under gpuspy: paused (gpuspy_pause) before the first CUDA
call, never resumed: what a preloaded, paused gpuspy costs.
Usage: loops.py mlp|conv|resnet|gpt2|jax [--steps N] [--warmup W] [--window W] [--profile] [--toggle]
                [--lockstep] [--blocking-sync]
Prints "steps_per_s X" for the steps after warm-up, and "window_steps_per_s
Y": the median over windows of --window steps (the device synchronised at
each window's end), which a stall of the shared machine moves less;
--profile wraps them in torch.profiler (CUDA activity only) and writes
prof.json in the cwd."""
import argparse
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("loop", choices=("mlp", "conv", "resnet", "gpt2", "jax"))
ap.add_argument("--steps", type=int, default=300)
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--window", type=int, default=50)
ap.add_argument("--profile", action="store_true")
ap.add_argument("--toggle", action="store_true",
                help="under gpuspy: alternate recorded and paused windows (gpuspy_pause; "
                     "gpuspy_torch.pause also takes the module hook off), print "
                     "toggle_ratio = median recorded / median paused window rate; with "
                     "CUPTI_COUNT_LIB=the bare collector, its driver-API callback or records "
                     "go on and off instead)")
ap.add_argument("--lockstep", action="store_true",
                help="bench/gpu_lockstep.py's turns: after warm-up write a byte to the first "
                     "fd of LOCKSTEP_FDS=ready,in,out, then run each window after reading a "
                     "byte from `in` and write one to `out` when it is done; print "
                     "lockstep_windows with every window's rate in order, lockstep_cpu "
                     "with each window's CPU time per step in us, main thread/all threads, and "
                     "lockstep_sched with the main thread's involuntary context switches in "
                     "each window and the CPU it ended on (SWITCHES@CPU)")
ap.add_argument("--blocking-sync", action="store_true",
                help="waits sleep instead of spinning (the primary context's "
                     "CU_CTX_SCHED_BLOCKING_SYNC, set before PyTorch makes it): a "
                     "window's CPU time is then the work its steps do")
a = ap.parse_args()
if a.blocking_sync:
    import ctypes
    cu = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    if cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(dev), 0) or cu.cuDevicePrimaryCtxSetFlags(dev, 4):
        raise SystemExit("loops.py: cannot set CU_CTX_SCHED_BLOCKING_SYNC")
if os.environ.get("LOOP_PAUSED") == "1":
    import ctypes
    ctypes.CDLL(None).gpuspy_pause()  # AttributeError without gpuspy
    if "gpuspy_torch" in sys.modules:
        sys.modules["gpuspy_torch"].pause()

if a.loop == "jax":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp

    def loss(p, x, y):
        h = jnp.tanh(x @ p["w1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)

    @jax.jit
    def jstep(p, x, y):
        g = jax.grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda u, v: u - 0.01 * v, p, g)

    k = jax.random.PRNGKey(0)
    state = {"p": {"w1": jax.random.normal(k, (1024, 2048)), "w2": jax.random.normal(k, (2048, 64))}}
    jx, jy = jax.random.normal(k, (512, 1024)), jax.random.normal(k, (512, 64))

    def step():
        state["p"] = jstep(state["p"], jx, jy)

    def sync():
        jax.block_until_ready(state["p"])
else:
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    sync = torch.cuda.synchronize
    ctx = None
    if a.loop == "mlp":
        layers = []
        for _ in range(8):
            layers += [nn.Linear(512, 512), nn.ReLU()]
        model = nn.Sequential(*layers[:-1]).cuda()
        lossf = nn.MSELoss()

        def batches():
            while True:
                yield torch.randn(128, 512), torch.randn(128, 512)
    elif a.loop == "conv":
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(64 * 8 * 8, 10)).cuda()
        lossf = nn.CrossEntropyLoss()
        data = torch.utils.data.TensorDataset(torch.randn(4096, 3, 32, 32), torch.randint(0, 10, (4096,)))

        def batches():
            while True:
                for x, y in torch.utils.data.DataLoader(data, batch_size=64, num_workers=0):
                    yield x, y
    elif a.loop == "resnet":
        import torchvision
        model = torchvision.models.resnet18(num_classes=10).cuda()
        lossf = nn.CrossEntropyLoss()
        data = torch.utils.data.TensorDataset(torch.randn(1024, 3, 64, 64), torch.randint(0, 10, (1024,)))
        loader = torch.utils.data.DataLoader(data, batch_size=32, num_workers=2, pin_memory=True,
                                             persistent_workers=True)
        ctx = lambda: torch.autocast("cuda", dtype=torch.bfloat16)  # noqa: E731

        def batches():
            while True:
                for x, y in loader:
                    yield x, y
    if a.loop == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000,
                                           n_positions=128)).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step():
            ids = torch.randint(0, 1000, (8, 64), device="cuda")
            loss = model(ids, labels=ids).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        it = batches()

        def step():
            x, y = next(it)
            nb = a.loop == "resnet"  # pinned batches copied asynchronously, as the zoo's
            x, y = x.cuda(non_blocking=nb), y.cuda(non_blocking=nb)
            opt.zero_grad()
            if ctx:
                with ctx():
                    loss = lossf(model(x), y)
            else:
                loss = lossf(model(x), y)
            loss.backward()
            opt.step()


for _ in range(a.warmup):
    step()
sync()
if a.profile:
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
    prof.__enter__()
toggle = None
if a.toggle:
    if os.environ.get("CUPTI_COUNT_LIB"):  # the bare collector's correlation choice
        import ctypes
        sw = ctypes.CDLL(os.environ["CUPTI_COUNT_LIB"]).cupti_count_switch
        toggle = (lambda: sw(1), lambda: sw(0))
    elif "gpuspy_torch" in sys.modules:  # PyTorch phases on: the module hook comes off too
        gt = sys.modules["gpuspy_torch"]
        toggle = (gt.resume, gt.pause)
    else:
        import ctypes
        lib = ctypes.CDLL(None)
        if hasattr(lib, "gpuspy_resume"):
            toggle = (lib.gpuspy_resume, lib.gpuspy_pause)
        else:  # untraced: the same alternation switching nothing, the A/A ratio
            toggle = (lambda: None, lambda: None)
sampler = None
if os.environ.get("PCSAMPLE_OUT"):  # bench/gpu/pcsample.c: sample the timed steps only
    import ctypes
    sampler = ctypes.CDLL(None)
    sampler.pcsample_begin()


def sched():
    """The main thread's involuntary context switches so far, and its CPU."""
    try:
        with open("/proc/thread-self/status") as f:
            nv = next(int(l.split()[1]) for l in f if l.startswith("nonvoluntary_ctxt_switches"))
        with open("/proc/thread-self/stat") as f:
            return nv, int(f.read().rsplit(")", 1)[1].split()[36])  # field 39, processor
    except (OSError, StopIteration, ValueError, IndexError):
        return 0, -1


lock = None
if a.lockstep:
    lock = [int(x) for x in os.environ["LOCKSTEP_FDS"].split(",")]
    os.write(lock[0], b"r")
t0 = time.monotonic()
windows, kinds, cpu, sw = [], [], [], []
tw = t0
s0 = sched()
cw = (time.thread_time(), time.process_time())
for i in range(a.steps):
    if lock and i % a.window == 0:
        os.read(lock[1], 1)  # our turn
        s0 = sched()
        tw = time.monotonic()
        cw = (time.thread_time(), time.process_time())
    if toggle and i % a.window == 0:
        kinds.append((i // a.window) % 2)  # 0: recorded, 1: paused
        toggle[kinds[-1]]()
    step()
    if (i + 1) % a.window == 0:
        sync()
        now = time.monotonic()
        windows.append(a.window / (now - tw))
        tw = now
        c = (time.thread_time(), time.process_time())
        cpu.append(f"{(c[0] - cw[0]) * 1e6 / a.window:.1f}/{(c[1] - cw[1]) * 1e6 / a.window:.1f}")
        cw = c
        if lock:
            s = sched()
            sw.append(f"{s[0] - s0[0]}@{s[1]}")
            os.write(lock[2], b"t")  # the next process's turn
sync()
t = time.monotonic() - t0
if sampler:
    sampler.pcsample_end()
if a.profile:
    prof.__exit__(None, None, None)
    prof.export_chrome_trace("prof.json")
print(f"steps_per_s {a.steps / t:.2f}")
if toggle:
    toggle[0]()
    on = sorted(w for w, k in zip(windows, kinds) if k == 0)
    off = sorted(w for w, k in zip(windows, kinds) if k == 1)
    print(f"toggle_ratio {on[len(on) // 2] / off[len(off) // 2]:.4f} ({len(on)} recorded, {len(off)} paused windows)")
if lock:
    print("lockstep_windows " + " ".join(f"{w:.2f}" for w in windows))
    print("lockstep_cpu " + " ".join(cpu))
    print("lockstep_sched " + " ".join(sw))
if windows:
    windows.sort()
    print(f"window_steps_per_s {windows[len(windows) // 2]:.2f}")
