# SPDX-License-Identifier: MIT
"""What the launches' sampled stacks cost a traced run, from its own trace:
the launches with a stack, the walks' own time (each record's own_ns: the
walk after the call, which the replay takes off), and that time over the
span of the launches. Usage: walk_share.py GPUSPY TRACE.gspy..."""
import json
import statistics
import subprocess
import sys


def row(gpuspy, path):
    out = subprocess.run([gpuspy, "dump", path], capture_output=True, text=True, timeout=300).stdout
    ev = [json.loads(x) for x in out.splitlines()]
    launches = [e for e in ev if e.get("kind") == "launch"]
    if not launches:
        return f"| {path} | 0 | - | - | - | - | - |"
    own = [e.get("own_ns", 0) for e in launches if "stack" in e]
    threads = len({e["tid"] for e in launches if "stack" in e})
    span = max(e["end_ns"] for e in launches) - min(e["start_ns"] for e in launches)
    med = statistics.median(own) / 1e3 if own else 0
    return (f"| {path.rsplit('/', 1)[-1]} | {len(launches)} | {len(own)} ({threads} threads) | {med:.1f} | "
            f"{max(own, default=0) / 1e3:.1f} | {span / 1e6:.0f} | {100 * sum(own) / span:.2f}% |")


if __name__ == "__main__":
    print("| trace | launches | with a stack | median walk us | longest us | launches' span ms | walks/span |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for p in sys.argv[2:]:
        print(row(sys.argv[1], p))
