# SPDX-License-Identifier: MIT
# Sourced by the H200 check scripts, from the repository root, with their
# work directory: `. tests/gpu/setup.sh /tmp/gpuspy-NAME`. Sets ROOT, OUT
# (the results; default /tmp/gpuspy-gpu) and WORK (emptied), puts the
# libraries `make gpu-carry` brought in .gpu/lib on LD_LIBRARY_PATH, makes
# Python unbuffered and builds libgpuspy there.
set -u
ROOT=$(pwd)
OUT=${OUT:-/tmp/gpuspy-gpu}
WORK=$1
rm -rf "$WORK"; mkdir -p "$OUT" "$WORK"
export LD_LIBRARY_PATH="$ROOT/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
make -s libs > /dev/null || exit 1
