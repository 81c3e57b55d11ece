# SPDX-License-Identifier: MIT
"""tests/gpu/exits/loop.py's index fault on the runtime double, from
Python: kernels launched through ctypes.CDLL, which releases the GIL as
PyTorch's bindings do, then `check_index`, whose device-side assert the
driver double trips (FAKECUDA_ASSERT=check_index): the synchronize after
it fails with 710. The launch line is `launch`'s, called from `index`,
called from the script; the error surfaces at the synchronize, lines
later. With `launch`, a kernel is launched between the two: the
first call to fail is that launch, as PyTorch's next operation often is.
Prints the synchronize's result; exits 1 when it failed.
Usage: py_fault.py LIBCUDART [launch]"""
import ctypes
import sys

rt = ctypes.CDLL(sys.argv[1])


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


# Two code addresses of libc's stand for the kernels' host stubs.
libc = ctypes.CDLL(None)
scale = ctypes.cast(libc.abs, ctypes.c_void_p)
check_index = ctypes.cast(libc.labs, ctypes.c_void_p)
rt.fakecudart_register(scale, b"scale", None)
rt.fakecudart_register(check_index, b"check_index", None)


def launch(kernel):
    return rt.cudaLaunchKernel(kernel, Dim3(64, 1, 1), Dim3(256, 1, 1), None, ctypes.c_size_t(0), None)  # LINE_LAUNCH


def index(table, at):
    return launch(check_index)  # LINE_INDEX


for _ in range(3):
    launch(scale)
rt.cudaDeviceSynchronize()
index(None, 10 ** 6)  # LINE_CALL
if sys.argv[2:] == ["launch"]:
    launch(scale)
rc = rt.cudaDeviceSynchronize()  # LINE_SYNC
print("synchronize", rc)
sys.exit(1 if rc else 0)
