# SPDX-License-Identifier: MIT
"""Advice you can bet on: the step found in any program (the program's own
period when nothing names it), checked on sequences whose period, warm-up
and repetitions are known."""
import os
import subprocess

from harness import BIN, TIMEOUT, check, test


@test
def period_is_found_with_its_warm_up_and_repetitions(tmp):
    """tools/report/period.c (tests/unit/period_test.c): a training step of
    7 calls after 23 calls of warm-up, its wait the step's end; a first
    step that compiles (3 calls more); a decode loop of 98 calls a token
    whose layers repeat inside it (the token, not the layer, is the
    period); a step that logs every 10th time (still 20 calls, 100 steps);
    no repetition, and two repetitions only (not a loop: no step)."""
    out = subprocess.run([os.path.join(BIN, "unit_period")], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout.split("\n")
    want = ["train 1 7 23 50 0", "first_step_compiles 1 7 6 49 0", "decode 1 98 0 200 0",
            "log_every_10 1 20 0 100 0", "none 0 0 0 0 0", "two_only 0 0 0 0 0", ""]
    check(out == want, f"got {out}")
