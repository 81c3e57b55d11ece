# SPDX-License-Identifier: MIT
"""What each part of gpuspy's PyTorch helper (python/gpuspy_torch.py) costs
a call, timed in isolation (no GPU needed): a phase wrapper (optimizer step,
zero_grad, backward: phase begin and end), a lazy one (data), the phase call
into libgpuspy, and a module call with a forward pre-hook against without.
Run under gpuspy, with the helper on the path:
  GPUSPY_DIR=/tmp GPUSPY_STACKS=off LD_PRELOAD=lib/libgpuspy.so \\
    PYTHONPATH=python python3 bench/helper_parts.py
Prints ns per call (the best of 5 repeats of 200000 calls)."""
import sys
import timeit

try:
    import torch

    import gpuspy_torch as g
except ImportError as e:
    sys.exit(f"helper_parts: {e} (run it under LD_PRELOAD=lib/libgpuspy.so, with torch installed)")

N = 200000


def ns(fn):
    return min(timeit.repeat(fn, number=N, repeat=5)) / N * 1e9


def main():
    if g._lib is None:
        raise SystemExit("helper_parts: libgpuspy is not loaded (run it under LD_PRELOAD=lib/libgpuspy.so)")
    torch.set_num_threads(1)
    f = lambda *a, **k: None  # noqa: E731
    print(f"plain Python call            {ns(f):6.0f} ns")
    print(f"phase wrapper (begin, end)   {ns(g._wrap(f, b'optimizer')):6.0f} ns")
    print(f"lazy phase wrapper (data)    {ns(g._wrap(f, b'data', lazy=True)):6.0f} ns")
    print(f"phase call into libgpuspy    {ns(lambda: g._lib.gpuspy_torch_phase(b'x', 0, 1)):6.0f} ns")
    m, x = torch.nn.Linear(4, 4), torch.randn(2, 4)
    base = ns(lambda: m(x))
    h = m.register_forward_pre_hook(lambda mod, inp: None)
    hooked = ns(lambda: m(x))
    h.remove()
    print(f"module call                  {base:6.0f} ns; with a forward pre-hook +{hooked - base:.0f} ns")


main()
