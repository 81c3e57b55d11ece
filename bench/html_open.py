#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How long the page of `gpuspy report --html` takes to open, for a trace
of 10 M events (tests/mktrace) and for a real H200 trace (the ResNet
fixture): the report's time to write it, the page's size, and in Debian's
headless Chromium the time from asking for the page to the end of its
drawing (performance.now() when page.js is done: data-drawn-ms), median
of 5 loads. Usage: bench/html_open.py [EVENTS]"""
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUSPY = os.path.join(ROOT, "tools", "gpuspy")


def measure(name, trace, tmp):
    out = os.path.join(tmp, name + ".html")
    t = time.monotonic()
    subprocess.run([GPUSPY, "report", "--html", out, trace], check=True, stderr=subprocess.DEVNULL)
    write_s = time.monotonic() - t
    drawn = []
    for _ in range(5):
        p = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                            "file://" + out], capture_output=True, text=True, timeout=120)
        drawn.append(int(re.search(r'data-drawn-ms="(\d+)"', p.stdout).group(1)))
    print(f"{name:28} report --html {write_s:6.2f} s   page {os.path.getsize(out) / 1024:7.0f} KiB   "
          f"drawn in {statistics.median(drawn):5.0f} ms (median of 5: {drawn})")


def main():
    events = sys.argv[1] if len(sys.argv) > 1 else "10000000"
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.gspy")
        subprocess.run([os.path.join(ROOT, "tests", "bin", "mktrace"), big, events, "4"], check=True)
        measure(f"mktrace {int(events) // 1000000} M events", big, tmp)
        with tarfile.open(os.path.join(ROOT, "tests", "fixtures", "h200", "resnet_loader.tar.gz")) as t:
            t.extractall(tmp)
        measure("H200 ResNet-18 fixture", os.path.join(tmp, "resnet_loader"), tmp)


main()
