# SPDX-License-Identifier: MIT
"""The check lines of the H200 check scripts: "ok   WHAT: DETAIL" or
"FAIL WHAT: DETAIL"; done() exits 1 if any check failed."""
import sys

failed = 0


def check(what, cond, detail=""):
    global failed
    print(f"{'ok  ' if cond else 'FAIL'} {what}{(': ' + detail) if detail else ''}")
    failed += not cond


def done():
    sys.exit(1 if failed else 0)
