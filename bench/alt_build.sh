#!/bin/sh
# SPDX-License-Identifier: MIT
# The other side of a lock-step A/B of two builds of libgpuspy on the GPU
# machine (PART=lockstep-alt in bench/gpu/overhead_paired.sh): puts REV's
# library sources in .gpu/alt, which travels with .gpu, where the preset
# builds them with the same compiler and flags as the tree's own library.
# Usage, on the CPU machine:   bash bench/alt_build.sh REV   (a commit or branch)
set -e
rev=${1:?usage: bash bench/alt_build.sh REV}
git rev-parse --verify -q "$rev^{commit}" > /dev/null || { echo "alt_build: error: $rev: not a commit" >&2; exit 1; }
rm -rf .gpu/alt
mkdir -p .gpu/alt
# What building the library takes at REV (common/ and VERSION came later).
paths=
for p in lib include common Makefile VERSION tests/tests.mk; do
	git cat-file -e "$rev:$p" 2> /dev/null && paths="$paths $p"
done
git archive "$rev" $paths | tar -x -C .gpu/alt
git rev-parse --short "$rev" > .gpu/alt/REV
echo "alt_build: .gpu/alt holds $rev ($(cat .gpu/alt/REV)); carry .gpu"
