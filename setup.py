# SPDX-License-Identifier: MIT
"""The Python wheel's build: `make` builds gpuspy, `make wheel-stage` puts
the command, the libraries (with those the GPU machines lack) and the
PyTorch helper into the package's bin/, lib/ and python/. The wheel holds
native code: tagged py3-none-linux_<arch>, not pure. Metadata is in
pyproject.toml. Offline: pip wheel --no-build-isolation --no-deps ."""
import os
import subprocess
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithMake(build_py):
    def run(self):
        super().run()
        stage = os.path.abspath(os.path.join(self.build_lib, "gpuspy"))
        subprocess.run(["make", "-C", ROOT, "-s", "wheel-stage", f"STAGE={stage}"], check=True)


class Native(Distribution):
    def has_ext_modules(self):
        return True  # platlib, not purelib: the package holds ELF files


class NativeWheel(bdist_wheel):
    def get_tag(self):
        return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")


with open(os.path.join(ROOT, "VERSION")) as f:
    VERSION = f.read().strip()

setup(version=VERSION, data_files=[("share/man/man1", ["docs/gpuspy.1"])], distclass=Native, cmdclass={"build_py": BuildWithMake, "bdist_wheel": NativeWheel})
