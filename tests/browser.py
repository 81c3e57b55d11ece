# SPDX-License-Identifier: MIT
"""Headless Chromium driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: no port, no network), for the tests of the
HTML page (tests/test_html.py) that act on it as a user would: resize
the window, click, hover, and read back what the page drew. Messages are
JSON, each ended by a NUL byte; Chromium reads fd 3 and writes fd 4.

    with Browser(1400, 1000) as b:
        b.open("file:///tmp/r.html#process=0")
        b.eval("document.title")
"""
import json
import os
import select
import shutil
import subprocess

from harness import Fail

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class BrowserError(Fail):
    """Chromium did not answer, or the page threw: the test fails."""


class Browser:
    def __init__(self, width=1400, height=1000, timeout=60):
        self.timeout, self.buf, self.id, self.events = timeout, b"", 0, []
        to_r, to_w = os.pipe()      # commands: Chromium's fd 3
        from_r, from_w = os.pipe()  # answers: Chromium's fd 4

        def fds():  # in the child: the pipe ends at 3 and 4 (os.pipe's ends close at exec)
            a, b = os.dup(to_r), os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.p = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                   "--remote-debugging-pipe", f"--window-size={width},{height}", "about:blank"],
                                  close_fds=False, preexec_fn=fds, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.w, self.r = to_w, from_r
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.call("Runtime.enable", session=True)
            self.call("Page.enable", session=True)
            self.resize(width, height)
        except Exception:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def read(self):
        while b"\0" not in self.buf:
            ready, _, _ = select.select([self.r], [], [], self.timeout)
            if not ready:
                raise BrowserError(f"chromium did not answer in {self.timeout} s")
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                try:  # its exit status says how it went (a signal: killed, or it crashed)
                    status = self.p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    status = "still running"
                raise BrowserError(f"chromium closed its pipe (exit status {status})")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=False, **params):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        try:
            os.write(self.w, json.dumps(msg).encode() + b"\0")
        except OSError as e:  # it went away (a start that failed under load): the test fails, not the run
            raise BrowserError(f"chromium's pipe: {e}") from e
        while True:
            m = self.read()
            if m.get("id") == self.id:
                if "error" in m:
                    raise BrowserError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def open(self, url):
        """Loads url and waits for its load event (none comes for a new
        #fragment of the page open: the page is not loaded again)."""
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        if "loaderId" not in self.call("Page.navigate", session=True, url=url):
            return
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self.read())

    def eval(self, js):
        """The value of a JavaScript expression (a promise's, awaited)."""
        r = self.call("Runtime.evaluate", session=True, expression=js, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise BrowserError(f"{js[:80]}: {r['exceptionDetails'].get('exception', r['exceptionDetails'])}")
        return r["result"].get("value")

    def frames(self, n=2):
        """Waits for n frames to be drawn (the page's resize observers run in them)."""
        self.eval("new Promise(r => { let n = %d; const f = () => (--n ? requestAnimationFrame(f) : r()); "
                  "requestAnimationFrame(f); })" % (n + 1))

    def resize(self, width, height):
        """The window's inner size, as a user's resize makes it."""
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def console(self):
        """What the page logged or threw."""
        return [e["params"] for e in self.events
                if e.get("method") in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown")]

    def close(self):
        if self.p.poll() is None:
            try:
                os.write(self.w, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
                self.p.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()
                self.p.wait()
        for fd in (self.w, self.r):
            try:
                os.close(fd)
            except OSError:
                pass
