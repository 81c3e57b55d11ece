#!/bin/sh
# Installs what building and testing gpuspy needs, when it is missing, from
# Debian's packages: a C compiler, make, pkg-config, cJSON, libunwind, elfutils (libdw),
# ncurses (gpuspy top), libmicrohttpd (gpuspy serve), python3 (the test runner),
# Chromium (the HTML report's test), tmux (gpuspy top's) and Prometheus (gpuspy
# serve's). The CUDA toolkit's headers are expected at
# $CUDA_HOME (default /usr/local/cuda); no GPU or driver is needed.
set -e
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
missing=""
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
[ -f /usr/include/cjson/cJSON.h ] || missing="$missing libcjson-dev"
[ -f /usr/include/libunwind.h ] || [ -f /usr/include/x86_64-linux-gnu/libunwind.h ] || missing="$missing libunwind-dev"
[ -f /usr/include/elfutils/libdwfl.h ] || missing="$missing libdw-dev"
[ -f /usr/include/ncurses.h ] || missing="$missing libncurses-dev"
[ -f /usr/include/microhttpd.h ] || missing="$missing libmicrohttpd-dev"
# Debian's Chromium: the HTML report's browser test (tests/test_html.py).
if [ "${1:-}" != demo ] && [ "${1:-}" != packages ]; then
	command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
	command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
	command -v prometheus >/dev/null 2>&1 || missing="$missing prometheus"
fi
# Debian's CPU-only PyTorch, for the tests of the PyTorch phase hooks (not
# for `deps.sh demo`: the demo does not need it).
if [ "${1:-}" = packages ]; then # make packages: the .deb's and the wheel's build tools
	command -v dh >/dev/null 2>&1 || missing="$missing debhelper"
	command -v dpkg-buildpackage >/dev/null 2>&1 || missing="$missing dpkg-dev"
	/usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 || missing="$missing python3-venv"
	/usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing="$missing python3-pip"
	/usr/bin/python3 -c 'import wheel' >/dev/null 2>&1 || missing="$missing python3-wheel"
	/usr/bin/python3 -c 'import setuptools' >/dev/null 2>&1 || missing="$missing python3-setuptools"
fi
if [ "${1:-}" != demo ] && [ "${1:-}" != packages ] && [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
	missing="$missing python3-torch"
fi
if [ -n "$missing" ]; then
	echo "deps: installing$missing"
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
if [ ! -f "$CUDA_HOME/include/cuda.h" ]; then
	echo "deps: error: $CUDA_HOME/include/cuda.h not found; install the CUDA toolkit or set CUDA_HOME" >&2
	exit 1
fi
