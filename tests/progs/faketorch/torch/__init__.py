# SPDX-License-Identifier: MIT
"""A stand-in for PyTorch with only what gpuspy_torch hooks (DataLoader's
iterator, module calls and their pre-hooks, backward, optimizers) and
torch.compiler.is_compiling(), which a test sets to say "Dynamo is tracing
this" (_compiling). For tests/progs/torch_compiling.py; no tensors."""
import types

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
    def __init__(self):
        self._forward_pre_hooks = []

    def register_forward_pre_hook(self, fn):
        self._forward_pre_hooks.append(fn)
        return _Handle(self._forward_pre_hooks, fn)

    def forward(self, x):
        return Tensor()

    def __call__(self, *args):
        for h in list(nn.modules.module._global_forward_pre_hooks) + list(self._forward_pre_hooks):
            h(self, args)
        return self.forward(*args)


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
