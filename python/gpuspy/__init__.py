# SPDX-License-Identifier: MIT
"""gpuspy, installed from its Python wheel: the `gpuspy` command, the
library it preloads and the PyTorch helper, in this package's bin/, lib/
and python/ (the same layout as an install prefix, so the command finds
the library beside it and the library finds the helper).

    gpuspy run -- python train.py

`lib_path()` is the library, for LD_PRELOAD by hand.
"""
import os
import sys

__version__ = "0.1.0"
_HERE = os.path.dirname(os.path.abspath(__file__))


def lib_path():
    """The path of libgpuspy.so.0 in this package."""
    return os.path.join(_HERE, "lib", "libgpuspy.so.0")


def command_path():
    """The path of the gpuspy command (the C program) in this package."""
    return os.path.join(_HERE, "bin", "gpuspy")


def main():
    """The `gpuspy` console script: runs the C command with these
    arguments, in place of this process (its exit code and signals are the
    command's)."""
    cmd = command_path()
    try:
        os.execv(cmd, [cmd, *sys.argv[1:]])
    except OSError as e:
        sys.stderr.write(f"gpuspy: error: {cmd}: {e.strerror}; reinstall the gpuspy wheel\n")
        return 1
