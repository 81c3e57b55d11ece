#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gpuspy tests that need no GPU: the programs in tests/ run against the CUDA
test doubles, with and without libgpuspy preloaded, and their traces (read
back with `gpuspy dump`) must match what each program did, exactly. The
tests live in tests/test_*.py, one topic each (docs/tests.md).

Usage: tests/run.py [-jN] [--all | --slow] [--times] [--topic T] [NAME...]
  runs the tests, or those whose name contains a NAME, or those of
  tests/test_T.py; N at a time. The long scale tests (@slow) run only with
  --all (all of them) or --slow (only them), or when named; --times
  prints how long each test took, the longest first.
Exit 0 when all pass; the last line is "N passed, N failed".
"""
import glob
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import TESTS, Fail, Skip

HERE = os.path.dirname(os.path.abspath(__file__))
TOPICS = sorted(os.path.basename(p)[len("test_"):-3] for p in glob.glob(os.path.join(HERE, "test_*.py")))


TIMES = {}


def run_one(fn):
    """Runs one test in its own directory: (status, line)."""
    tmp = tempfile.mkdtemp(prefix="gpuspy-test-")
    t0 = time.monotonic()
    try:
        fn(tmp)
        return "ok", f"ok   {fn.__name__}"
    except Skip as e:
        return "skip", f"skip {fn.__name__}: {e}"
    except (Fail, subprocess.TimeoutExpired, KeyError, ValueError) as e:
        return "fail", f"FAIL {fn.__name__}: {e}"
    except Exception as e:  # anything else fails this test, not the whole run
        return "fail", f"FAIL {fn.__name__}: {type(e).__name__}: {e}"
    finally:
        TIMES[fn.__name__] = time.monotonic() - t0
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    """usage: run.py [-jN] [--topic T] [NAME...]: the tests whose names
    contain a NAME (all without one), of every topic or of tests/test_T.py,
    N at a time (each test is its own processes and directory; the default
    is one at a time)."""
    args = sys.argv[1:]
    jobs = 1
    which = "quick"
    for flag, w in (("--all", "all"), ("--slow", "slow")):
        if flag in args:
            which = w
            args.remove(flag)
    times = "--times" in args
    if times:
        args.remove("--times")
    topics = TOPICS
    for a in list(args):
        if re.fullmatch(r"-j\d+", a):
            jobs = max(1, int(a[2:]))
            args.remove(a)
    if "--topic" in args:
        k = args.index("--topic")
        if k + 1 >= len(args) or args[k + 1] not in TOPICS:
            print(f"run.py: --topic takes one of {', '.join(TOPICS)}", file=sys.stderr)
            return 2
        topics = [args[k + 1]]
        del args[k:k + 2]
    for t in topics:
        importlib.import_module("test_" + t)  # registers its tests
    # A topic may import another's helpers, which registers that one's
    # tests too: keep the topics asked for.
    tests = [fn for fn in TESTS if fn.__module__ in {"test_" + t for t in topics} and
             (not args or any(w in fn.__name__ for w in args))]
    left = 0
    if not args and which != "all":  # a test named is run, slow or not
        keep = [fn for fn in tests if getattr(fn, "slow", False) == (which == "slow")]
        left = len(tests) - len(keep)
        tests = keep
    counts = {"ok": 0, "fail": 0, "skip": 0}
    if jobs == 1:
        results = map(run_one, tests)
    else:
        import concurrent.futures
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        results = pool.map(run_one, tests)
    for status, line in results:
        print(line, flush=True)
        counts[status] += 1
    if times:
        for name, t in sorted(TIMES.items(), key=lambda x: -x[1]):
            print(f"{t:7.2f} s  {name}")
    if left and which == "quick":
        print(f"({left} long test{'s' if left > 1 else ''} left out: make test-all runs them)")
    print(f"{counts['ok']} passed, {counts['fail']} failed" +
          (f", {counts['skip']} skipped" if counts["skip"] else ""))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
