#!/bin/sh
# `make packages`: builds the Debian package (dpkg-buildpackage, debian/) and
# the Python wheel (pip wheel, setup.py) from a copy of this tree, installs
# each where it cannot touch the system (the .deb unpacked into a root of
# its own, the wheel into a fresh venv), checks what each installed, and
# runs the demo (scripts/demo.sh) with the installed `gpuspy`: the report
# must come from the installed library. The packages are left in dist/.
set -e
cd "$(dirname "$0")/.."
sh scripts/deps.sh packages
tree=$PWD
work=$(mktemp -d /tmp/gpuspy-packages.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "packages: error: $*" >&2; exit 1; }
log() { echo "== $*"; }
quiet() { # a step's output only if it fails
	if ! "$@" > "$work/step.log" 2>&1; then
		tail -40 "$work/step.log" >&2
		fail "$* failed (log above)"
	fi
}
# The tree as git sees it (tracked, and untracked but not ignored): no build output.
mkdir "$work/src"
git ls-files -co --exclude-standard -z | xargs -0 tar -c | tar -x -C "$work/src"
mkdir -p dist

log "Debian package: dpkg-buildpackage -us -uc -b"
(cd "$work/src" && quiet dpkg-buildpackage -us -uc -b)
deb=$(ls "$work"/gpuspy_*_amd64.deb)
cp "$deb" dist/
dpkg-deb -x "$deb" "$work/root"
for f in usr/bin/gpuspy usr/lib/libgpuspy.so.0 usr/lib/libgpuspy-host.so usr/share/gpuspy/python/sitecustomize.py \
	usr/share/gpuspy/python/gpuspy_torch.py usr/include/gpuspy.h usr/include/gpuspy/format.h usr/include/gpuspy/apis.h; do
	[ -e "$work/root/$f" ] || fail "$(basename "$deb") lacks /$f"
done
dpkg-deb -f "$deb" Depends | grep -q libcjson1 || fail "$(basename "$deb") does not depend on libcjson1"

log "Python wheel: pip wheel --no-build-isolation"
(cd "$work/src" && quiet /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps -w "$work/dist" .)
whl=$(ls "$work"/dist/gpuspy-*.whl)
cp "$whl" dist/
quiet /usr/bin/python3 -m venv "$work/venv"
quiet "$work/venv/bin/pip" install --no-index "$whl"

# Each installed copy: the library it preloads is its own, and the demo
# (a traced example and its report) runs with it from the tree's root.
for cmd in "$work/root/usr/bin/gpuspy" "$work/venv/bin/gpuspy"; do
	log "$cmd"
	want=$(dirname "$(dirname "$cmd")")
	[ "$cmd" = "$work/venv/bin/gpuspy" ] && want=$("$work/venv/bin/python" -c 'import gpuspy, os; print(os.path.dirname(gpuspy.lib_path()))')
	maps=$("$cmd" run --dir "$work/maps" --no-report -- sh -c 'grep -o "/[^ ]*libgpuspy[^ ]*" /proc/$$/maps | sort -u' 2>/dev/null)
	case "$maps" in
	"$want"/*libgpuspy.so*) ;;
	*) fail "$cmd preloaded $maps, not its own library under $want" ;;
	esac
	"$cmd" --version
	GPUSPY_CMD="$cmd" sh scripts/demo.sh > "$work/demo.txt" 2>&1 || { cat "$work/demo.txt" >&2; fail "the demo failed with $cmd"; }
	grep -q "^  backward  *20 " "$work/demo.txt" && grep -q "^Diagnoses" "$work/demo.txt" ||
		{ cat "$work/demo.txt" >&2; fail "the demo's report with $cmd lacks its phases or diagnoses"; }
	echo "   demo: $(grep -c . "$work/demo.txt") lines of report, phases and diagnoses present"
done
log "packages in dist/: $(cd dist && ls | tr '\n' ' ')"
