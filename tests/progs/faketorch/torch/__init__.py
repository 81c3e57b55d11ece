# SPDX-License-Identifier: MIT
"""A stand-in for PyTorch with only what gpuspy_torch hooks (DataLoader's
iterator, module calls and their pre-hooks, backward, optimizers) and
torch.compiler.is_compiling(), which a test sets to say "Dynamo is tracing
this" (_compiling). For tests/progs/torch_compiling.py and
torch_compiled.py; no tensors.

torch.compile behaves as PyTorch 2.x's where the helper meets it: a
compiled function (Module.compile() compiles the module's _call_impl)
runs as Dynamo's code does, with is_compiling() True in its hooks, and
compiles a graph (torch._dynamo.utils.counters) the first time it is
called with a set of global module hooks it has not seen (Dynamo's guard
on them); torch.compile(module) is an OptimizedModule whose own call and
hooks run eagerly, its forward the module's call compiled, and which
warns as PyTorch's does when called while a global module hook is on."""
import collections
import types
import warnings

_flag = [False]


def _compiling(on):
    _flag[0] = on


compiler = types.ModuleType("torch.compiler")
compiler.is_compiling = lambda: _flag[0]


class _Handle:
    def __init__(self, hooks, fn):
        self.hooks, self.fn = hooks, fn

    def remove(self):
        if self.fn in self.hooks:
            self.hooks.remove(self.fn)


class Module:
    _compiled_call_impl = None

    def __init__(self):
        self._forward_pre_hooks = []

    def register_forward_pre_hook(self, fn):
        self._forward_pre_hooks.append(fn)
        return _Handle(self._forward_pre_hooks, fn)

    def forward(self, x):
        return Tensor()

    def __call__(self, *args):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args)
        return self._call_impl(*args)

    def _call_impl(self, *args):
        for h in list(nn.modules.module._global_forward_pre_hooks) + list(self._forward_pre_hooks):
            h(self, args)
        return self.forward(*args)

    def compile(self, *args, **kwargs):
        self._compiled_call_impl = compile(self._call_impl, *args, **kwargs)


def _register_module_forward_pre_hook(fn):
    nn.modules.module._global_forward_pre_hooks.append(fn)
    return _Handle(nn.modules.module._global_forward_pre_hooks, fn)


nn = types.SimpleNamespace(Module=Module, modules=types.SimpleNamespace(module=types.SimpleNamespace(
    _global_forward_pre_hooks=[], register_module_forward_pre_hook=_register_module_forward_pre_hook)))


class Tensor:
    def backward(self):
        autograd.backward(self)


autograd = types.SimpleNamespace(backward=lambda t: None)


class _BaseDataLoaderIter:
    def __init__(self, items):
        self.items = iter(items)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self.items)


class DataLoader:
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return _BaseDataLoaderIter(self.items)


utils = types.SimpleNamespace(data=types.SimpleNamespace(DataLoader=DataLoader,
                                                         dataloader=types.SimpleNamespace(
                                                             _BaseDataLoaderIter=_BaseDataLoaderIter)))


class Optimizer:
    def __init__(self):
        pass

    def zero_grad(self):
        pass


class SGD(Optimizer):
    def step(self):
        pass


optim = types.SimpleNamespace(Optimizer=Optimizer, SGD=SGD)


# ---- torch.compile -----------------------------------------------------------

_dynamo = types.SimpleNamespace(utils=types.SimpleNamespace(
    counters=collections.defaultdict(collections.Counter)))


def _optimize(fn):
    """fn compiled: Dynamo's code, guarded on the global module hooks."""
    seen = set()

    def compiled(*args, **kwargs):
        guard = tuple(id(h) for h in nn.modules.module._global_forward_pre_hooks)
        if guard not in seen:  # a guard failed: (re)compile
            seen.add(guard)
            _dynamo.utils.counters["stats"]["unique_graphs"] += 1
        was = _flag[0]
        _flag[0] = True
        try:
            return fn(*args, **kwargs)
        finally:
            _flag[0] = was
    return compiled


class OptimizedModule(Module):
    def __init__(self, mod):
        super().__init__()
        self._orig_mod = mod
        self.forward = _optimize(mod.__call__)

    def __call__(self, *args):
        if nn.modules.module._global_forward_pre_hooks:
            warnings.warn(
                "Using `torch.compile(module)` when there are global hooks on modules (e.g., from "
                "`register_module_forward_hook`); this will cause the hooks to fire an extra time for the "
                "`OptimizedModule` created by `torch.compile(module)`. If this causes undesired behavior, "
                "please try using `module.compile()`, or use the per-module hooks instead", stacklevel=2)
        return super().__call__(*args)


def compile(model=None, **kwargs):
    if model is None:  # @torch.compile(mode=...): through torch.compile again, as PyTorch's
        return lambda m: compile(m, **kwargs)
    return OptimizedModule(model) if isinstance(model, Module) else _optimize(model)
