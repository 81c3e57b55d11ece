# SPDX-License-Identifier: MIT
"""The steady step of a traced JAX loop, part by part: on the thread that
launches the most graphs, over its last 2000 graph launches, the median
duration of each call and of each gap between two calls in a row, and
the median period from one graph launch to the next. traced_cost.sh runs
it on a trace taken with GPUSPY_CUPTI=off and one with CUPTI on, so that
what CUPTI adds to each part of the step shows.
  python3 tests/gpu/whatif/step_parts.py GPUSPY TRACE.gspy..."""
import collections
import json
import statistics
import subprocess
import sys


def parts(gpuspy, path):
    out = subprocess.run([gpuspy, "dump", path], capture_output=True, text=True, timeout=300).stdout.splitlines()
    ev = [json.loads(line) for line in out[1:]]
    graphs = [e for e in ev if e.get("api") == "cuGraphLaunch"]
    if len(graphs) < 3:
        return None
    tid = collections.Counter(e["tid"] for e in graphs).most_common(1)[0][0]
    graphs = [e for e in graphs if e["tid"] == tid][-2000:]
    t0, t1 = graphs[0]["start_ns"], graphs[-1]["start_ns"]
    th = [e for e in ev if e.get("tid") == tid and t0 <= e["start_ns"] < t1 and "api" in e]
    durs, gaps = collections.defaultdict(list), collections.defaultdict(list)
    for e in th:
        durs[e["api"]].append(e["end_ns"] - e["start_ns"])
    for a, b in zip(th, th[1:]):
        gaps[f"{a['api']} -> {b['api']}"].append(b["start_ns"] - a["end_ns"])
    steps = len(graphs) - 1
    period = statistics.median(b["start_ns"] - a["start_ns"] for a, b in zip(graphs, graphs[1:]))
    rows = [("period, graph launch to graph launch", steps, period)]
    rows += [(k, len(v) / steps, statistics.median(v)) for k, v in durs.items() if len(v) >= steps // 2]
    rows += [("gap " + k, len(v) / steps, statistics.median(v)) for k, v in gaps.items() if len(v) >= steps // 2]
    return rows


def main():
    gpuspy = sys.argv[1]
    for path in sys.argv[2:]:
        print(f"\n{path}:\n\n| part | a step | median us |\n| --- | --- | --- |")
        for name, n, ns in parts(gpuspy, path) or [("(fewer than 3 graph launches)", 0, 0)]:
            print(f"| {name} | {n:.2f} | {ns / 1e3:.2f} |")


if __name__ == "__main__":
    main()
