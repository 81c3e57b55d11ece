# SPDX-License-Identifier: MIT
"""gpuspy's Python start-up hook. libgpuspy puts this directory first on
PYTHONPATH, only in Python processes it is preloaded into (opt out with
GPUSPY_TORCH=0). It arranges for PyTorch's data / forward / backward /
optimizer phases to be recorded when torch is imported, then gets out of
the way: PYTHONPATH is what it was, byte for byte (set or not), the
directory leaves sys.path, and the sitecustomize that was there before, if
any, runs as usual; with none, `import sitecustomize` fails afterwards as
it would have. Written to parse on any Python (a python2 child of a traced
process reads it too); below 3.6 it only restores and chains."""
import os
import sys


def _restore_path():
    added = os.environ.pop("GPUSPY_PYTHONPATH_ADDED", None)
    if not added:
        return
    old = os.environ.pop("GPUSPY_PYTHONPATH_OLD", None)
    if old is None:  # it was not set
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.version_info >= (3, 6):
        try:
            import gpuspy_torch  # noqa: F401  (lives in this directory)
        except Exception as e:  # never break the traced program; say so where libgpuspy says things
            try:
                import ctypes
                note = ctypes.CDLL(None).gpuspy_python_note
                note.argtypes = [ctypes.c_char_p]
                note(("PyTorch phases off: %s" % (e,)).encode("utf-8", "replace"))
            except Exception:
                pass
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    # The user's own sitecustomize, if there is one further down the path:
    # its errors are its own (site reports them as untraced); none there,
    # this module is not one either.
    del sys.modules["sitecustomize"]
    try:
        import sitecustomize  # noqa: F401
    except ImportError as e:
        if getattr(e, "name", "sitecustomize") != "sitecustomize":
            raise
        missing = ImportError("No module named 'sitecustomize'")  # Python 2's site takes any
        if sys.version_info >= (3, 6):
            missing = ModuleNotFoundError("No module named 'sitecustomize'", name="sitecustomize")  # noqa: F821
        elif sys.version_info >= (3, 3):
            missing = ImportError("No module named 'sitecustomize'", name="sitecustomize")
        raise missing


def _learn_frames():
    """Python frames (on unless GPUSPY_PYTHON_FRAMES=0): libgpuspy learns, holding the GIL, how this
    interpreter lays out its frames, to read them on threads that released
    it (lib/pyframes.c). Called two frames down: it compares a stack of
    three with what the C API says of it."""
    if sys.version_info < (3, 11):
        return  # raw reading needs 3.11's frames
    if os.environ.get("GPUSPY_PYTHON_FRAMES", "").lower() in ("0", "off", "no", "false"):
        return
    try:
        import ctypes
        fn = ctypes.PyDLL(None).gpuspy_python_frames_learn  # PyDLL: the GIL stays held
        fn.restype = ctypes.c_int
        (lambda: (lambda: fn())())()
    except Exception:  # never break the traced program
        pass


_restore_path()
_learn_frames()
_chain()
