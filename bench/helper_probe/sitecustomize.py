# SPDX-License-Identifier: MIT
"""A probe of what gpuspy's PyTorch helper (python/gpuspy_torch.py) costs,
part by part, for the overhead benches: not part of gpuspy. On PYTHONPATH
under gpuspy, it runs as the user's sitecustomize, which gpuspy's own
chains to right after importing gpuspy_torch, and before torch is imported.
GPUSPY_PROBE picks what to take away:
  nolib  - the helper's Python version, its calls into libgpuspy a Python
           no-op (its wrappers and module hooks stay): against "python",
           the cost of those calls;
  nohook - no module hooks (forward is then not found): their cost;
  nowrap - no wrappers on backward, zero_grad and step (their phases are
           then not recorded, and the global module hook of the first
           steps never comes off): their cost;
  python - the helper's Python version of its per-call work (wrappers,
           hook, phase state) instead of libgpuspy's builtins: what the
           builtins save.
bench/gpu_lockstep.py puts this directory on PYTHONPATH for a mode that sets
GPUSPY_PROBE, e.g. MODES="...,gpuspy GPUSPY_PROBE=nowrap"."""
import os
import sys

_probe = os.environ.get("GPUSPY_PROBE", "")
_gt = sys.modules.get("gpuspy_torch")
if _gt is None:
    if _probe:
        sys.stderr.write("gpuspy probe: gpuspy_torch is not loaded; nothing probed\n")
elif _probe == "nolib":
    class _NoLib:
        @staticmethod
        def gpuspy_torch_phase(name, step, begin):
            return None
    _gt._lib = _NoLib()
    _gt._C = None
elif _probe == "nohook":
    _gt._hooks_on = lambda: None
elif _probe == "nowrap":
    _gt._wrap = lambda fn, name, after=None, lazy=False: fn
elif _probe == "python":
    _gt._C = None
elif _probe:
    sys.stderr.write(f"gpuspy probe: GPUSPY_PROBE={_probe} is not nolib, nohook, nowrap or python\n")
    os._exit(2)  # sys.exit in sitecustomize prints a traceback of the import
