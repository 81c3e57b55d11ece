# SPDX-License-Identifier: MIT
# Sourced by run.sh and traced_cost.sh (after tests/gpu/setup.sh, which
# sets WORK): the what-if programs' command lines, and the C one's build.
W=tests/gpu/whatif
command_of() { # prog -> its command line
	case $1 in
	sync_copies) echo "$WORK/bin/sync_copies" ;;
	*) echo "python3 $W/$1.py" ;;
	esac
}
# -g (host debug information; the code is -O2's) so that its report can
# name the copy's line, as a program built for debugging gets (run1-run8
# built it without: their reports name its function).
build_sync_copies() { mkdir -p "$WORK/bin" && nvcc -O2 -g -o "$WORK/bin/sync_copies" "$W/sync_copies.cu"; }
