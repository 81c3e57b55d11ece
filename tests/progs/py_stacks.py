# SPDX-License-Identifier: MIT
"""Python frames in call stacks: cudaMalloc through ctypes on the
runtime double. PyDLL keeps the GIL during the call (gpuspy walks the
Python frames through the C API); CDLL releases it, as PyTorch's bindings
do (gpuspy reads them raw, lib/pyframes.c). Prints each pointer's
line numbers for the test to compare.
Usage: py_stacks.py LIBCUDART"""
import ctypes
import sys

held = ctypes.PyDLL(sys.argv[1])
released = ctypes.CDLL(sys.argv[1])


def alloc_holding_gil(n):
    p = ctypes.c_void_p()
    rc = held.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))  # LINE_HELD
    return rc, p


def alloc_without_gil(n):
    p = ctypes.c_void_p()
    rc = released.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n))  # LINE_RELEASED
    return rc, p


class Model:
    def build(self):
        return alloc_holding_gil(1 << 20)  # LINE_BUILD


rc1, _ = Model().build()  # LINE_MODULE
rc2, _ = alloc_without_gil(2 << 20)  # LINE_SECOND
print("rc", rc1, rc2)
