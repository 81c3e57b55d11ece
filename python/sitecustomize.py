# SPDX-License-Identifier: MIT
"""gpuspy's Python start-up hook. libgpuspy puts this directory first on
PYTHONPATH, only in Python processes it is preloaded into (opt out with
GPUSPY_TORCH=0). It arranges for PyTorch's data / forward / backward /
optimizer phases to be recorded when torch is imported, then gets out of
the way: the directory leaves sys.path and PYTHONPATH, and the
sitecustomize that was there before, if any, runs as usual."""
import os
import sys


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    added = os.environ.pop("GPUSPY_PYTHONPATH_ADDED", None)
    if added:
        parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != added]
        if parts:
            os.environ["PYTHONPATH"] = os.pathsep.join(parts)
        else:
            os.environ.pop("PYTHONPATH", None)
    try:
        import gpuspy_torch  # noqa: F401  (lives in this directory)
    except Exception as e:  # never break the traced program; say so where libgpuspy says things
        try:
            import ctypes
            note = ctypes.CDLL(None).gpuspy_python_note
            note.argtypes = [ctypes.c_char_p]
            note(f"PyTorch phases off: {e}".encode("utf-8", "replace"))
        except Exception:
            pass
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    # The user's own sitecustomize, if there is one further down the path.
    del sys.modules["sitecustomize"]
    try:
        import sitecustomize  # noqa: F401
    except ImportError:
        sys.modules["sitecustomize"] = sys.modules.get(__name__) or type(sys)("sitecustomize")


def _learn_frames():
    """Python frames (on unless GPUSPY_PYTHON_FRAMES=0): libgpuspy learns, holding the GIL, how this
    interpreter lays out its frames, to read them on threads that released
    it (lib/pyframes.c). Called two frames down: it compares a stack of
    three with what the C API says of it."""
    if os.environ.get("GPUSPY_PYTHON_FRAMES", "").lower() in ("0", "off", "no", "false"):
        return
    try:
        import ctypes
        fn = ctypes.PyDLL(None).gpuspy_python_frames_learn  # PyDLL: the GIL stays held
        fn.restype = ctypes.c_int
        (lambda: (lambda: fn())())()
    except Exception:  # never break the traced program
        pass


_learn_frames()
_chain()
