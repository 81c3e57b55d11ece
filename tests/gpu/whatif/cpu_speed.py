# SPDX-License-Identifier: MIT
"""How fast this CPU runs Python, in ns an iteration of a fixed loop (the
best of seven), for cpu_speed.sh: run under `taskset -c N` it times CPU N."""
import time


def once(n=300_000):
    t = time.perf_counter_ns()
    x = 0
    for i in range(n):
        x += i & 7
    return (time.perf_counter_ns() - t) / n


print(f"{min(once() for _ in range(7)):.2f}")
