# SPDX-License-Identifier: MIT
"""PyTorch phases for gpuspy, with no change to the training script.

When torch is imported, this module hooks:
  * data      - each next() of a DataLoader iterator;
  * forward   - the first nn.Module call outside forward (a global module
                hook for the first steps of each pass over a DataLoader,
                then hooks on the modules it saw begin forward; from the
                program's first compiled module or first call of a
                compiled function, no global hook: hooks on the compiled
                modules and those already learned);
  * backward  - Tensor.backward / torch.autograd.backward;
  * optimizer - Optimizer.step and Optimizer.zero_grad.
"data" and "forward" last until the next phase starts, so the batch's copy
to the GPU belongs to data and the loss module to forward; a next() that
raises (StopIteration at a pass's end) ends its data phase. Each phase is
recorded through libgpuspy (already loaded in the process)
with the step number: the count of optimizer steps completed so far.
Phases are process-wide, so kernels that autograd launches from its own
threads during backward belong to backward. PyTorch 1.13 and 2.x.

The per-call work is C where libgpuspy can reach the Python C API
(gpuspy_torch_fast): a wrapper is one Python frame calling
gpuspy_torch_call, the models' hook is the builtin gpuspy_torch_hook, and
the phase state (open lazy phase, step count) lives in libgpuspy. Without
it, the same logic runs in Python here (_phase, _begin_lazy, _pre).
"""
import atexit
import copy
import ctypes
import functools
import os
import sys
import types
import weakref
from _thread import _local as _thread_local  # threading.local, without importing threading

_lib = None
_C = None  # libgpuspy's builtins: call, hook, ctl (None: the Python version)
_SLOT = {b"data": 0, b"forward": 1, b"backward": 2, b"optimizer": 3}
_LAZY, _STEP = 0x10, 0x20  # gpuspy_torch_call's flags, beside the slot
# gpuspy_torch_ctl's operations (lib/python.c)
_CTL_STEPS, _CTL_LEARNING, _CTL_CLOSE, _CTL_BEGIN, _CTL_OPEN = range(5)
_state = _thread_local()
_step = [0]
_open = [None]
_torch = [None]
# forward begins at the first module call made outside forward. A global
# module hook sees every call, but it sends every module call through
# PyTorch's slow path and costs a Python call per module: 3% of the
# MLP loop's throughput on the H200 (docs/design.md#the-mlp-loop). So it
# is on only while learning: from each new pass over a DataLoader (an
# epoch, a validation pass) until GPUSPY_TORCH_LEARN_STEPS optimizer steps later (0: always),
# which finds the modules that begin forward (the model, a teacher, an EMA
# copy...); in between only they carry a hook. Once the program compiles
# anything, learning stops for good (_compile_mode).
_compiled = [False]  # torch.compile was called: no global hook ever again


def _note(msg):
    """gpuspy's message: where libgpuspy's go (the trace's notes, and
    GPUSPY_LOG's log), never onto the program's own stderr."""
    try:
        f = ctypes.CDLL(None).gpuspy_python_note
        f.argtypes = [ctypes.c_char_p]
        f.restype = None
        f(msg.encode("utf-8", "replace"))
    except Exception:  # an older libgpuspy, or none: the message is dropped
        pass


_v = os.environ.get("GPUSPY_TORCH_LEARN_STEPS", "") or "3"
_LEARN_STEPS = int(_v) if _v.isascii() and _v.isdigit() else -1
if _LEARN_STEPS < 0:  # "-1", "x": like the library, warn and use the default
    _note(f"GPUSPY_TORCH_LEARN_STEPS={_v} is not a number (0 or more); using 3")
    _LEARN_STEPS = 3
_learning = [_LEARN_STEPS > 0]
_learn_from = [0]  # the step count when learning began
_paused = [False]
_roots = {}  # id(module) -> weakref.ref(module)
_handles = []


def _steps():
    return _C.ctl(_CTL_STEPS, 0) if _C else _step[0]


def _set_learning(on):
    _learning[0] = on
    if _C:
        _C.ctl(_CTL_LEARNING, 1 if on else 0)


def _not_compiling():
    return False


# torch.compile: Dynamo traces the hooks and wrappers a compiled function
# runs, and a call into libgpuspy's builtins there breaks the graph (and
# Dynamo says so on stderr). torch.compiler.is_compiling() is a constant
# True while Dynamo traces, so each hook and wrapper returns to PyTorch at
# once and leaves nothing in the graph; the compiled code then runs
# without them, its phases begun by the eager calls around it (a compiled
# module's own call is one). PyTorch 2.3 and later; before, nothing changes.
_is_compiling = _not_compiling


def _root_hook(module, inputs):
    if not _is_compiling():
        _C.hook(module, inputs)


def _pre(module, inputs):
    if _is_compiling():
        return
    if _C:
        if _C.ctl(_CTL_OPEN, 0) != _SLOT[b"forward"] + 1:
            _C.ctl(_CTL_BEGIN, _SLOT[b"forward"])
            _learn_root(module)
    elif _open[0] != b"forward":
        _begin_lazy(b"forward")
        _learn_root(module)


def _learn_root(module):
    if _learning[0]:
        ref = _roots.get(id(module))
        if ref is None or ref() is not module:  # new, or an id reused
            _roots[id(module)] = weakref.ref(module)


def _hooks_on():
    if _handles:
        return
    if not _compiled[0] and (_learning[0] or _LEARN_STEPS <= 0):
        _global_hook_on()
        return
    hook = _roots_hook()
    refused = False
    for ref in list(_roots.values()):
        m = ref()
        if m is not None and not _hook_module(m, hook):
            refused = True
    if refused and not _compiled[0]:
        # A root that takes no hook of its own (a ScriptModule): the global
        # hook stays on, so that its forward still begins.
        _hooks_off()
        _global_hook_on()


def _global_hook_on():
    _handles.append(_torch[0].nn.modules.module.register_module_forward_pre_hook(_pre))


_refusals = set()  # the classes of modules that refused a hook: noted once each


def _hook_module(m, hook):
    """The forward pre-hook on module m; False where m refuses it (a
    ScriptModule raises RuntimeError), which never reaches the program."""
    try:
        _handles.append(m.register_forward_pre_hook(hook))
        return True
    except Exception as e:
        name = type(m).__name__
        if name not in _refusals:
            _refusals.add(name)
            _note(f"PyTorch phases: a {name} takes no forward hook ({e})")
        return False


def _roots_hook():
    # The builtin itself where there is no torch.compile to hide from.
    return (_C.hook if _is_compiling is _not_compiling else _root_hook) if _C else _pre


def _hooks_off():
    for h in _handles:
        h.remove()
    _handles.clear()


def _guarded(fn):
    """fn, its errors gpuspy's note and never the program's exception: for
    what the wrappers call around the program's own calls."""
    @functools.wraps(fn)
    def call(*args):
        try:
            fn(*args)
        except Exception as e:
            _note(f"PyTorch phases: {fn.__name__}: {type(e).__name__}: {e}")
    return call


@_guarded
def _learn():
    """A new pass over a DataLoader: watch every module call again."""
    if _LEARN_STEPS > 0 and not _compiled[0]:
        _learn_from[0] = _steps()
        if not _learning[0]:
            _set_learning(True)
            if not _paused[0]:
                _hooks_off()
                _hooks_on()


def _phase(name, begin):
    # "data" and "forward" stay open until the next phase starts: data
    # covers fetching the batch and moving it to the GPU (x.cuda() after
    # next()), forward covers model(x) and the loss module after it.
    if _open[0] and (begin or name != _open[0]):
        _lib.gpuspy_torch_phase(_open[0], _step[0], 0)
        _open[0] = None
    _lib.gpuspy_torch_phase(name, _step[0], 1 if begin else 0)


def _begin_lazy(name):
    if _open[0] != name:
        _phase(name, True)
        _open[0] = name


def _wrap(fn, name, after=None, lazy=False):
    if getattr(fn, "_gpuspy", False):
        return fn

    if _C:
        call, flags = _C.call, _SLOT[name] | (_LAZY if lazy else 0) | (_STEP if after else 0)
        if after:
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                if _is_compiling():
                    return fn(*args, **kwargs)
                return call(fn, flags, args, kwargs, after)
        else:
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                if _is_compiling():
                    return fn(*args, **kwargs)
                return call(fn, flags, args, kwargs)
        wrapper._gpuspy = True
        return wrapper

    key = name.decode()

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        st = _state
        if _is_compiling() or getattr(st, key, False):  # inside the same phase (Tensor.backward -> autograd.backward)
            return fn(*args, **kwargs)
        setattr(st, key, True)
        if lazy:
            _begin_lazy(name)
        else:
            _phase(name, True)
        try:
            return fn(*args, **kwargs)
        except BaseException:
            if lazy and _open[0] == name:  # no batch came (StopIteration): the phase ends here
                _close_open()
            raise
        finally:
            setattr(st, key, False)
            if not lazy:
                _phase(name, False)
                if after:
                    after()

    wrapper._gpuspy = True
    return wrapper


# torch.compile. A global module hook is seen by Dynamo twice over: a
# compiled module (OptimizedModule.__call__) warns on stderr whenever one
# is on, and the compiled code is guarded on the global hooks that
# Module._call_impl reads as Dynamo traces it, so taking the hook off when
# learning ends compiles the graph again. So the first torch.compile of a
# module or of a module's method, or the first call of a compiled
# function (Dynamo compiles at that call), takes it off for good, before
# anything is compiled, and learning stops;
# forward then begins where a hook runs eagerly, outside the compiled code:
# a compiled module's own call (its own pre-hook, which Dynamo never
# traces), a module whose compile() compiled its _call_impl (a wrapper of
# that), the module of a compiled bound method (model.forward), and the
# modules already learned.
def _compile_mode():
    if _compiled[0]:
        return
    _compiled[0] = True
    _set_learning(False)
    if not _paused[0]:
        _hooks_off()
        _hooks_on()


def _adopt(m):
    """Module m begins forward: a root with its own hook from now on."""
    ref = _roots.get(id(m))
    if ref is not None and ref() is m:
        return
    _roots[id(m)] = weakref.ref(m)
    if not _paused[0]:
        _hook_module(m, _roots_hook())


def _forward_first(fn):
    """fn (a module's compiled _call_impl), forward begun eagerly before it."""
    def call(*args, **kwargs):
        if not _paused[0] and not _is_compiling():
            if _C:
                _C.hook(None, args)
            else:
                _begin_lazy(b"forward")
        return fn(*args, **kwargs)
    call._gpuspy = True
    return call


def _compile_mode_at_first_call(fn):
    """fn (a compiled function), the helper's compile mode begun at its
    first call, before Dynamo compiles it."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not _compiled[0] and not _is_compiling():
            try:
                _compile_mode()
            except Exception as e:  # never break the traced program
                _note(f"PyTorch phases: torch.compile: {e}")
        return fn(*args, **kwargs)
    return call


def _hook_compile(torch):
    compile_fn = getattr(torch, "compile", None)
    module = torch.nn.Module
    if compile_fn is None:  # before PyTorch 2.0
        return

    @functools.wraps(compile_fn)
    def compile(*args, **kwargs):
        what = args[0] if args else kwargs.get("model")
        # Inside what Dynamo traces, nothing of the helper's; and
        # @torch.compile(...) gives a decorator that calls torch.compile
        # (this) with the function later.
        if _is_compiling() or what is None:
            return compile_fn(*args, **kwargs)
        owner = getattr(what, "__self__", None)
        of_module = isinstance(what, module) or (isinstance(owner, module) and
                                                 getattr(what, "__name__", "") != "_call_impl")
        try:
            if of_module:
                _compile_mode()
        except Exception as e:  # never break the traced program
            _note(f"PyTorch phases: torch.compile: {e}")
        out = compile_fn(*args, **kwargs)
        try:
            if isinstance(out, module):  # torch.compile(module): an OptimizedModule
                _adopt(out)
            elif of_module:
                _adopt(owner)  # torch.compile(model.forward): model's own call stays eager
            elif callable(out):
                # A function (a library may compile one as it is imported):
                # the helper steps aside at its first call, which compiles
                # it; until then eager modules are learned as ever.
                out = _compile_mode_at_first_call(out)
        except Exception as e:  # never break the traced program
            _note(f"PyTorch phases: torch.compile: {e}")
        return out

    torch.compile = compile
    method = getattr(module, "compile", None)
    if method is None:  # before PyTorch 2.2
        return

    @functools.wraps(method)
    def compile_method(self, *args, **kwargs):
        # Module.compile compiles _call_impl, hooks and all: Dynamo runs
        # them, so forward begins in a wrapper around it, eagerly.
        out = method(self, *args, **kwargs)
        inner = getattr(self, "_compiled_call_impl", None)
        if inner is not None and not getattr(inner, "_gpuspy", False):
            self._compiled_call_impl = _forward_first(inner)
        return out

    module.compile = compile_method


def _around(fn, pre, post):
    """fn with pre(args, kwargs) -> token before it and post(token, result,
    ok) -> result after it (result None, ok False when fn raised, which is
    raised on); an error of pre or post (gpuspy's) never reaches the
    program."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            token = pre(args, kwargs)
        except Exception:
            token = None
        try:
            rv = fn(*args, **kwargs)
        except BaseException:
            try:
                post(token, None, False)
            except Exception:
                pass
            raise
        try:
            return post(token, rv, True)
        except Exception:
            return rv
    wrapper._gpuspy = True
    _around_codes.append(wrapper.__code__)
    return wrapper


_around_codes = []  # the Python version's wrapper code, a frame between pre and its caller


def _caller(f):
    """The frame that called an _around wrapper, from its pre's caller f."""
    return f.f_back if f.f_code in _around_codes else f


# gpuspy's forward pre-hook is no part of the model. Pickling (torch.save,
# multiprocessing) would write it into the file, where nothing can load it
# (a builtin pickles as getattr(None, ...); a helper function needs gpuspy
# where it is loaded), copy.deepcopy would copy it onto a module no one
# learned, and TorchScript compiles every pre-hook (and cannot compile
# gpuspy's). Hooks stay per module (a global hook costs 3% of a
# launch-bound loop), so where a module's hooks are read for those, gpuspy's
# are left out:
#   * Module.__reduce_ex__, through which every module is pickled and
#     deep-copied whatever its __getstate__ or __reduce__ (DDP's, fx's
#     GraphModule's), gives its state with gpuspy's entries out of
#     _forward_pre_hooks, in a copy: the live module keeps its hook. A
#     shallow copy.copy shares the hooks dict as untraced, so is left be.
#   * torch.jit._recursive.create_script_module, where torch.jit.script and
#     torch.jit.trace (and so torch.onnx.export) make TorchScript of a
#     module, runs with gpuspy's hooks taken out of the module and its
#     submodules and put back in place after, whatever it raises.
# Both wrappers are Python functions, like the phase wrappers: a traceback
# through one shows its frame (docs/limitations.md).
def _ours(v):
    return v is _pre or v is _root_hook or (_C is not None and v is _C.hook)


_stripped = {}  # id(a module's hooks dict) -> (a weak reference to it, its items, its copy without gpuspy's)


def _hooks_without_ours(hooks):
    """A module's hooks dict without gpuspy's entries: hooks itself where it
    has none, else a copy, the same copy for as long as hooks holds the
    same items. Pickling and deepcopy keep one object once, by identity:
    where the module's state and a RemovableHandle of it (its
    __getstate__) both give the dict, both must give the one copy, or the
    copied handle removes from a dict the copied module does not hold."""
    ours = [k for k, v in hooks.items() if _ours(v)]
    if not ours:
        return hooks
    items = tuple(hooks.items())
    got = _stripped.get(id(hooks))
    if got and got[0]() is hooks and got[1] == items:
        return got[2]
    c = hooks.copy()
    for k in ours:
        del c[k]
    try:
        key = id(hooks)
        _stripped[key] = (weakref.ref(hooks, lambda _r, k=key: _stripped.pop(k, None)), items, c)
    except TypeError:  # a dict that takes no weak reference: a copy each time
        pass
    return c


def _without_ours(state):
    """A module's state (a dict) without gpuspy's pre-hooks: a copy where it
    had any, else state itself."""
    hooks = state.get("_forward_pre_hooks") if isinstance(state, dict) else None
    if not isinstance(hooks, dict):
        return state
    stripped = _hooks_without_ours(hooks)
    if stripped is hooks:
        return state
    state = copy.copy(state)
    state["_forward_pre_hooks"] = stripped
    return state


def _handle_state_post(token, rv, ok):
    """RemovableHandle.__getstate__'s result, its hooks dict the module's
    stripped copy (a shallow copy.copy keeps the dict, as untraced)."""
    if not ok or token is _SHALLOW or not isinstance(rv, tuple) or not rv or not isinstance(rv[0], dict):
        return rv
    return (_hooks_without_ours(rv[0]),) + rv[1:]


_SHALLOW = object()


def _reduce_pre(args, kwargs):
    return _SHALLOW if _caller(sys._getframe(1)).f_code is copy.copy.__code__ else None


def _reduce_post(token, rv, ok):
    if not ok or token is _SHALLOW or not isinstance(rv, tuple) or len(rv) < 2:
        return rv
    rv = list(rv)
    if isinstance(rv[1], tuple):  # a __reduce__ that passes the state as an argument (GraphModule)
        rv[1] = tuple(_without_ours(a) for a in rv[1])
    if len(rv) > 2:
        state = rv[2]
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, __slots__ values)
            rv[2] = (_without_ours(state[0]), state[1])
        else:
            rv[2] = _without_ours(state)
    return tuple(rv)


def _script_pre(args, kwargs):
    """Takes gpuspy's pre-hooks out of the module being made TorchScript and
    its submodules: what _script_post puts back."""
    m = args[0] if args else (kwargs or {}).get("nn_module")
    taken = []
    for sub in m.modules():
        hooks = sub.__dict__.get("_forward_pre_hooks")
        if isinstance(hooks, dict):
            ours = [(k, v) for k, v in hooks.items() if _ours(v)]
            if ours:
                order = list(hooks)
                for k, _ in ours:
                    del hooks[k]
                taken.append((hooks, ours, order))
    return taken


def _script_post(taken, rv, ok):
    for hooks, ours, order in taken or ():
        for k, v in ours:
            hooks.setdefault(k, v)
        if list(hooks) != order and set(hooks) == set(order) and hasattr(hooks, "move_to_end"):
            for k in order:  # in its place among the program's hooks
                hooks.move_to_end(k)
    return rv


def _hide_hooks(torch):
    module = torch.nn.Module
    if not getattr(module.__reduce_ex__, "_gpuspy", False):
        module.__reduce_ex__ = _around(module.__reduce_ex__, _reduce_pre, _reduce_post)
    handle = getattr(getattr(getattr(torch, "utils", None), "hooks", None), "RemovableHandle", None)
    get = getattr(handle, "__getstate__", None)
    if get is not None and not getattr(get, "_gpuspy", False):
        handle.__getstate__ = _around(get, _reduce_pre, _handle_state_post)
    rec = getattr(getattr(torch, "jit", None), "_recursive", None)
    make = getattr(rec, "create_script_module", None)
    if make is not None and not getattr(make, "_gpuspy", False):
        rec.create_script_module = _around(make, _script_pre, _script_post)


# Where each DataLoader was made, for the report's data diagnoses: the line
# that sets its num_workers, the caller of the outermost __init__ (past a
# subclass's own and the wrappers around them, Lightning's). Keyed by id,
# with a weak reference: a subclass's __hash__ and __eq__ are never called.
_made_at = {}  # id(loader) -> (weakref.ref(loader), "FUNC (FILE:LINE)")


def _init_codes(cls):
    """The code of every __init__ along cls's MRO, and of what each wraps."""
    codes = set(_around_codes)
    for k in cls.__mro__:
        f = vars(k).get("__init__")
        for _ in range(16):  # a __wrapped__ chain, never a cycle
            code = getattr(f, "__code__", None)
            if code is None:
                break
            codes.add(code)
            f = getattr(f, "__wrapped__", None)
    return codes


def _loader_made(args, kwargs):
    self, f = args[0], _caller(sys._getframe(1))
    codes = _init_codes(type(self))
    while f.f_back is not None and f.f_code in codes:
        f = f.f_back
    key = id(self)
    _made_at[key] = (weakref.ref(self, lambda _r, k=key: _made_at.pop(k, None)),
                     f"{f.f_code.co_name} ({f.f_code.co_filename}:{f.f_lineno})")


def _keep(token, rv, ok):
    return rv


@_guarded
def _loader_mark(loader):
    """Each pass over a DataLoader: the report's mark of its workers (with
    workers its data phase is a wait for them, loader_behind) and of where
    it was made."""
    n = getattr(loader, "num_workers", 0)
    if _lib and isinstance(n, int) and n >= 0:
        ref, at = _made_at.get(id(loader), (None, None))
        if ref is None or ref() is not loader:
            at = None
        _lib.gpuspy_mark(f"DataLoader num_workers={n}{' made at ' + at if at else ''}".encode("utf-8", "replace"))


def _hook_torch(torch):
    global _is_compiling
    _is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or _not_compiling
    dl = torch.utils.data.dataloader._BaseDataLoaderIter
    dl.__next__ = _wrap(dl.__next__, b"data", lazy=True)
    loader_iter = torch.utils.data.DataLoader.__iter__

    @functools.wraps(loader_iter)
    def __iter__(self):
        _learn()
        _loader_mark(self)
        return loader_iter(self)

    torch.utils.data.DataLoader.__iter__ = __iter__
    if "__init__" in vars(torch.utils.data.DataLoader):  # its own, not object's
        torch.utils.data.DataLoader.__init__ = _around(torch.utils.data.DataLoader.__init__, _loader_made, _keep)

    _torch[0] = torch
    if _C:
        _C.ctl(_CTL_LEARNING, 1 if _learning[0] else 0)
    _hooks_on()

    torch.Tensor.backward = _wrap(torch.Tensor.backward, b"backward")
    torch.autograd.backward = _wrap(torch.autograd.backward, b"backward")

    @_guarded
    def stepped():  # after each step (with libgpuspy's builtins: while learning)
        if not _C:
            _step[0] += 1
        if _learning[0] and _steps() - _learn_from[0] >= _LEARN_STEPS:
            # Learned the model(s): from now on only they carry the hook.
            _set_learning(False)
            if not _paused[0]:
                _hooks_off()
                _hooks_on()

    opt = torch.optim.Optimizer
    opt.zero_grad = _wrap(opt.zero_grad, b"optimizer")
    init = opt.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        # Subclasses define step (and 1.13 re-wraps it for the profiler in
        # __init__): wrap each class's step once, after that.
        cls = type(self)
        if not getattr(cls.step, "_gpuspy", False):
            cls.step = _wrap(cls.step, b"optimizer", after=stepped)

    opt.__init__ = __init__
    _hook_compile(torch)
    try:
        _hide_hooks(torch)
    except Exception as e:  # never break the traced program
        _note(f"PyTorch phases: hooks not hidden from pickling and TorchScript: {e}")


class _AfterImport:
    """Runs _hook_torch once torch has finished importing (a finder needs
    only find_spec: importlib.abc would import importlib.resources, and
    with it tempfile, shutil, typing..., into every traced process)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            try:
                _hook_torch(module)
            except Exception as e:  # never break the traced program
                _note(f"PyTorch phases off: {e}")

        spec.loader.exec_module = exec_module
        return spec


def _close_open():
    if _C:
        _C.ctl(_CTL_CLOSE, 0)
    elif _lib and _open[0]:
        _lib.gpuspy_torch_phase(_open[0], _step[0], 0)
        _open[0] = None


@_guarded
def pause():
    """gpuspy_pause() for Python: recording stops process-wide and the module
    hooks come off, so module calls take PyTorch's fast path again."""
    if _lib:
        _close_open()  # the open data/forward phase ends here, recorded
        _lib.gpuspy_pause()
        _paused[0] = True
        _hooks_off()


@_guarded
def resume():
    """gpuspy_resume() for Python: the module hooks go back on."""
    if _lib:
        _paused[0] = False
        if _torch[0] is not None:
            _hooks_on()
        _lib.gpuspy_resume()


class _Fast:
    """libgpuspy with its phase call as a builtin (gpuspy_torch_fast): ~50 ns
    a call where ctypes takes ~0.5 us; the rest through ctypes."""

    def __init__(self, lib, fn):
        self._c = lib
        self.gpuspy_torch_phase = fn

    def __getattr__(self, name):
        return getattr(self._c, name)


def _install():
    global _lib, _C
    try:
        lib = ctypes.CDLL(None)
        lib.gpuspy_torch_phase.argtypes = [ctypes.c_char_p, ctypes.c_ulonglong, ctypes.c_int]
        lib.gpuspy_torch_phase.restype = None
    except (OSError, AttributeError):
        return  # libgpuspy is not in this process
    _lib = lib
    try:
        lib.gpuspy_torch_fast.restype = ctypes.c_void_p
        d = lib.gpuspy_torch_fast()
        if d:
            new = ctypes.pythonapi.PyCFunction_NewEx
            new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
            new.restype = ctypes.py_object
            _lib = _Fast(lib, new(d, None, None))
            # The defs that follow (a PyMethodDef is 4 pointer-sized
            # fields): call, hook, ctl, then one without a name.
            size = 4 * ctypes.sizeof(ctypes.c_void_p)
            names = [ctypes.c_char_p.from_address(d + i * size).value for i in range(1, 5)]
            if names == [b"gpuspy_torch_call", b"gpuspy_torch_hook", b"gpuspy_torch_ctl", None]:
                call, hook, ctl = (new(d + i * size, None, None) for i in range(1, 4))
                _C = types.SimpleNamespace(call=call, hook=hook, ctl=ctl)
    except (OSError, AttributeError):
        pass  # an older libgpuspy, or no C API: ctypes it is
    atexit.register(_close_open)
    if "torch" in sys.modules:
        _hook_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _AfterImport())


_install()
