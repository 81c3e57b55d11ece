#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The screenshots of the HTML report in the docs, taken from today's
page: `gpuspy report --html` of the README's sample report, the H200
what-if fixture item-slow (tests/fixtures/h200/whatif/item-slow.tar.gz:
a training loop that reads its loss with .item() every step, with NVML
telemetry), opened in headless Chromium
(tests/browser.py) at 1400 x 1000:

  docs/html-report.png  the top of the page: cards, diagnoses, step time,
                        GPU busy, memory and copies
  docs/html-flame.png   the flame graph's panel

Run from anywhere after `make`: python3 scripts/html-screenshots.py [OUTDIR]
(OUTDIR: docs/ unless given)."""
import base64
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from browser import Browser  # noqa: E402

WIDTH, TOP = 1400, 1500


def shot(b, path, clip):
    png = b.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=True,
                 clip=dict(clip, scale=1))["data"]
    with open(path, "wb") as f:
        f.write(base64.b64decode(png))
    print(f"{path}: {os.path.getsize(path)} bytes, {clip['width']:.0f} x {clip['height']:.0f}")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs")
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(os.path.join(ROOT, "tests", "fixtures", "h200", "whatif", "item-slow.tar.gz")) as t:
            t.extractall(tmp)
        page = os.path.join(tmp, "r.html")
        subprocess.run([os.path.join(ROOT, "tools", "gpuspy"), "report", "--html", page,
                        os.path.join(tmp, "item-slow")], check=True, stderr=subprocess.DEVNULL)
        with Browser(WIDTH, 1000) as b:
            b.open("file://" + page)
            b.frames(3)
            shot(b, os.path.join(out, "html-report.png"), {"x": 0, "y": 0, "width": WIDTH, "height": TOP})
            r = b.eval("""(() => { const r = document.querySelector("figure.flame").getBoundingClientRect();
                                   return { x: r.left - 8, y: r.top + scrollY - 8, width: r.width + 16,
                                            height: Math.min(r.height, 520) + 16 }; })()""")
            shot(b, os.path.join(out, "html-flame.png"), r)


if __name__ == "__main__":
    main()
