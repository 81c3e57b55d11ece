# SPDX-License-Identifier: MIT
"""A Python loop of kernel launches through ctypes (which releases the GIL,
as PyTorch's bindings do), three Python frames deep, on the runtime
double: prints the host's ns a launch over 100,000 after 2,000 of
warm-up (the loop's wall time before the closing synchronize: the
double's GPU runs each kernel 1 us, which would hide the host's cost).
Run traced by two builds of libgpuspy in turn (docs/measurements.md, "On
the VM"), e.g.
  GPUSPY_DIR=/tmp/t GPUSPY_CUPTI=on LD_LIBRARY_PATH=tests/bin \\
    LD_PRELOAD=lib/libgpuspy.so python3 bench/py_launch.py tests/bin/libcudart.so.13
Usage: py_launch.py LIBCUDART"""
import ctypes
import sys
import time

rt = ctypes.CDLL(sys.argv[1])


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


kernel = ctypes.cast(ctypes.CDLL(None).abs, ctypes.c_void_p)  # a code address stands for the host stub
rt.fakecudart_register(kernel, b"scale", None)
grid, block, shared, launch = Dim3(1, 1, 1), Dim3(32, 1, 1), ctypes.c_size_t(0), rt.cudaLaunchKernel


def inner(n):
    for _ in range(n):
        launch(kernel, grid, block, None, shared, None)


def middle(n):
    inner(n)


def outer(n):
    middle(n)


outer(2000)
rt.cudaDeviceSynchronize()
t = time.perf_counter()
outer(100000)
host = time.perf_counter() - t
rt.cudaDeviceSynchronize()
print(f"{host / 100000 * 1e9:.0f}")
