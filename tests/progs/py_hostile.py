# SPDX-License-Identifier: MIT
"""Python programs that gpuspy's frame reading must not break.

`gc`: lists of lists grown past GPUSPY_HOST_ALLOC_MIN, so that CPython's
list_resize calls realloc (which libgpuspy-host records, with the Python
frames) after glibc has freed the old items and before the list points
at the new ones. The collector runs at every allocation (threshold 1): a
collection started inside the hook would walk the freed items. Prints
the lists' total length.

`subinterp`: a sub-interpreter is made (CPython then stops checking which
thread holds the GIL: PyGILState_Check says yes to all), then the main
interpreter's thread calls cudaMalloc through ctypes.CDLL, which releases
the GIL. Prints the call's result.

`threads` (with GPUSPY_TORCH=0, so that no start-up hook learns the
frames' layout): the first CUDA call holds the GIL one frame deep, too
shallow to learn from, so frames are read through the C API whenever a
call holds the GIL. A thread spins in Python while the main thread makes
300 cudaMalloc/cudaFree pairs through ctypes.CDLL (the GIL released).
Before 3.12 CPython's current thread state is the GIL holder's, the
spinner's: read as the caller's, its frames would be the calls'. Prints
the number of calls that failed.
Usage: py_hostile.py gc|subinterp|threads LIBCUDART"""
import ctypes
import gc
import sys

mode, lib = sys.argv[1], sys.argv[2]
rt = ctypes.CDLL(lib)
p = ctypes.c_void_p()
if mode == "threads":
    ctypes.PyDLL(lib).cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))  # the GIL held, one frame deep
else:
    rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20))  # the process uses CUDA from here


def grow(keep):
    item = [0] * 100
    item *= 2000  # 1.6 MB of items: list_resize reallocs
    keep.append(item)


if mode == "gc":
    keep = []
    gc.set_threshold(1, 1, 1)
    for _ in range(50):
        grow(keep)
    gc.set_threshold(700, 10, 10)
    print(sum(len(x) for x in keep))
elif mode == "subinterp":
    try:
        import _xxsubinterpreters as subinterpreters
    except ImportError:  # 3.13
        import _interpreters as subinterpreters
    subinterpreters.create()
    print(rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(2 << 20)))  # LINE_SUBINTERP
elif mode == "threads":
    import threading
    stop = False

    def spinner_function():
        while not stop:
            sum(range(100))

    def main_calls():
        failed = 0
        for _ in range(300):
            q = ctypes.c_void_p()
            failed += rt.cudaMalloc(ctypes.byref(q), ctypes.c_size_t(4096)) != 0
            failed += rt.cudaFree(q) != 0
        return failed

    t = threading.Thread(target=spinner_function)
    t.start()
    n = main_calls()
    stop = True
    t.join()
    print(n)
