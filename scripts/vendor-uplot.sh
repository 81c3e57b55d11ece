#!/bin/sh
# Fetches uPlot's npm package and checks (or, with --update, replaces) the
# copy vendored in tools/render/html/uplot/ (see its README.md).
set -e
VERSION=1.6.32
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null && tar xzf "uplot-$VERSION.tgz")
for f in dist/uPlot.iife.min.js dist/uPlot.min.css LICENSE; do
	b=$(basename "$f")
	if [ "${1:-}" = --update ]; then
		cp "$tmp/package/$f" "tools/render/html/uplot/$b"
	elif ! cmp -s "$tmp/package/$f" "tools/render/html/uplot/$b"; then
		echo "vendor-uplot: tools/render/html/uplot/$b differs from uplot@$VERSION's $f" >&2
		exit 1
	fi
done
echo "vendor-uplot: tools/render/html/uplot is uplot@$VERSION"
