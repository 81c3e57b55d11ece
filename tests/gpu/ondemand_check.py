# SPDX-License-Identifier: MIT
"""What tests/gpu/ondemand.sh saw for one program, as markdown: what gpuspy
top said while the process was paused, during its 3 s window and after;
the window's report (its length, windows, phases, GPU records joined); and
whether every part held. Usage: ondemand_check.py LOOP DIR"""
import json
import os
import sys

loop, d = sys.argv[1], sys.argv[2]


def load(name):
    try:
        with open(os.path.join(d, name)) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def one(v):
    return v[0] if isinstance(v, list) and len(v) == 1 else None


paused, during, after, rep = (one(load("top-paused.json")), one(load("top-window.json")),
                              one(load("top-after.json")), load("report.json"))
record = open(os.path.join(d, "record.txt")).read().strip().replace("\n", "; ")
print(f"\n## {loop}\n")
print(f"* `gpuspy record PID --for 3s`: {record}")
ok = []
if paused:
    ok.append(paused["paused"] and paused["events"] == 0)
    print(f"* top while paused: paused {paused['paused']}, {paused['events']} events")
if during:
    busy = during["gpu_busy_ns"]
    util = during.get("telemetry", {}).get("util_gpu")
    rate = during["steps"] / (during["window_ns"] / 1e9) if during["window_ns"] else 0
    print(f"* top during the window (last 1 s): {rate:.1f} steps/s of `{during['step_phase']}`, "
          # the GPU's share is of its own window, which ends at its last record (top's column)
          f"GPU busy {'n/a' if busy is None else '%.0f%%' % (100 * busy / max(during['gpu_window_ns'], 1))}, "
          f"NVML util {util}%, phases (ms) "
          + ", ".join(f"{k} {v / 1e6:.0f}" for k, v in sorted(during["phase_ns"].items(), key=lambda x: -x[1])[:6]))
    ok.append(not during["paused"] and during["steps"] > 0)
if after:
    print(f"* top after it: paused {after['paused']}")
    ok.append(after["paused"])
if "processes" in rep:
    p = rep["processes"][0]
    lib = ("cub::", "thrust::", "Xla", "xla::", "Thunk", "cudnn", "nccl", "(unnamed)")
    phases = sorted((x for x in rep["phases"] if not x["name"].startswith(lib)), key=lambda x: -x["wall_ns"])
    gpu = rep.get("gpu", {})
    print(f"* the window's report: {p['windows']} window, {rep['duration_ns'] / 1e9:.2f} s recorded, "
          f"{rep['events']} events, framework {p.get('framework')}, GPU records joined "
          f"{gpu.get('matched')} of {gpu.get('records')}")
    print("* its phases: " + ", ".join(f"{x['name']} x{x['count']} {x['wall_ns'] / 1e6:.0f} ms" for x in phases[:8]))
    ok.append(p["windows"] == 1 and rep["duration_ns"] >= 3e9 and rep["duration_ns"] < 3.5e9)
    # A kernel launched just before the window may run inside it: its GPU
    # record has no host call in the trace.
    ok.append(0 <= (gpu.get("records") or 0) - (gpu.get("matched") or 0) <= 16 and (gpu.get("records") or 0) > 0)
else:
    print(f"* no report: {rep}")
    ok.append(False)
print(f"* held: {'yes' if ok and all(ok) else 'NO'} ({sum(ok)} of {len(ok)} checks)")
