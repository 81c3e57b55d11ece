# SPDX-License-Identifier: MIT
"""Checks tests/gpu/zoo.sh's runs: usage zoo_check.py WORKDIR CASE...;
prints a Markdown table, writes WORKDIR/zoo.json, exits 1 when a program's
exit code or output changed under gpuspy, a tool failed, or a count that
host calls can see differs from the counter's. A graph launch counts as the nodes gpuspy read back when the
graph was instantiated; calls captured into a graph count only there.
Launches of graphs whose nodes were not seen, and device-side launches
(dynamic parallelism), are named."""
import glob
import json
import os
import re
import sys

# GPUSPY_DEBUG's last note (lib/symbols.c): how the entry points were handed out.
HANDED = re.compile(r"entry points handed out: (\d+) wrapped, (\d+) gpuspy's already, (\d+) unwrapped")


def counts(d):
    g = {"kernels": 0, "h2d": 0, "h2d_bytes": 0, "d2h": 0, "d2h_bytes": 0, "memsets": 0, "graph_launches": 0,
         "failed": 0, "processes": 0}
    g["captured"] = g["graph_unseen"] = g["empty_copies"] = g["unwrapped"] = 0
    for f in glob.glob(os.path.join(d, "traces", "*.jsonl")):
        nodes = {}  # executable graph -> its node events, as last instantiated
        for line in open(f):
            e = json.loads(line)
            if e["type"] == "process":
                g["processes"] += 1
                for n in e.get("notes", []):
                    m = HANDED.search(n)
                    g["unwrapped"] += int(m.group(3)) if m else 0
            if e["type"] != "event":
                continue
            if e.get("result", 0) != 0:
                g["failed"] += 1
                continue
            if e.get("captured"):
                g["captured"] += 1
                continue
            if e["kind"] == "graph":
                nodes[e["graph"]] = []
                continue
            if e["kind"].startswith("node_"):
                nodes.setdefault(e["graph"], []).append(e)
                continue
            if e["kind"] == "launch" and e["api"].startswith(("cuGraphLaunch", "cudaGraphLaunch")):
                g["graph_launches"] += 1
                if e.get("graph") not in nodes:
                    g["graph_unseen"] += 1
                for n in nodes.get(e.get("graph"), []):
                    if n["kind"] == "node_kernel":
                        g["kernels"] += 1
                    elif n["kind"] == "node_memset":
                        g["memsets"] += 1
                    elif n.get("dir") in ("h2d", "d2h"):
                        g[n["dir"]] += 1
                        g[n["dir"] + "_bytes"] += n["bytes"]
                continue
            if e["kind"] == "launch":
                if e.get("name") != "(host function)" and not e["api"].startswith(("cuLaunchHostFunc", "cudaLaunchHostFunc")):
                    g["kernels"] += 1
            elif e["kind"] == "copy" and e.get("bytes") == 0:
                g["empty_copies"] += 1  # the GPU moves nothing: CUPTI has no record of them
            elif e["kind"] == "copy" and e.get("dir") in ("h2d", "d2h"):
                g[e["dir"]] += 1
                g[e["dir"] + "_bytes"] += e["bytes"]
            elif e["kind"] == "memset":
                g["memsets"] += 1
    c = {"kernels": 0, "h2d": 0, "h2d_bytes": 0, "d2h": 0, "d2h_bytes": 0, "memsets": 0}
    for f in glob.glob(os.path.join(d, "cupti-*.json")):
        x = json.load(open(f))
        for k in c:
            c[k] += x.get(k, 0)
    return g, c


def train_eval_step(d):
    """train_eval.py's step is the optimizer step, 160 of them less warm-up,
    not the evaluation's batch nor the epoch; the 3 that hold an
    evaluation before the last (and any other unlike the commonest) are
    left out of the replay (printed)."""
    try:
        s = json.load(open(os.path.join(d, "report.json")))["processes"][0]["step"]
    except (OSError, ValueError, KeyError, IndexError):
        return False
    print(f"train_eval's step: {s.get('what')}; {s.get('steps')} steps of {s.get('step_ns')} ns, "
          f"{s.get('steps_with_other_phases')} with other phases", file=sys.stderr)
    return (s.get("what", "").startswith("PyTorch's optimizer steps: ") and 150 <= s.get("steps", 0) <= 160
            and s.get("steps_with_other_phases", 0) >= 3)


def main():
    work, cases = sys.argv[1], sys.argv[2:]
    rows = ["| program | exit untraced / traced | output same | processes | kernels gpuspy / CUPTI "
            "| H2D copies | H2D bytes | D2H copies | D2H bytes | memsets | failed calls | report, dump, export | ok |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    out, bad = {}, 0
    for case in cases:
        d = os.path.join(work, case)
        rc = [open(os.path.join(d, f)).read().strip() for f in ("untraced.rc", "traced.rc", "tools.rc")]
        same = open(os.path.join(d, "untraced.out")).read() == open(os.path.join(d, "traced.out")).read()
        # Dynamo (torch.compile) names a function it cannot trace on stderr:
        # gpuspy's helper must never be one (issue 54.6).
        # Nor may a traced program warn more than untraced (PyTorch warned
        # of the helper's global module hooks under torch.compile).
        err = open(os.path.join(d, "traced.err"), errors="replace").read()
        warns = lambda t: sum("Warning" in line for line in t.splitlines())
        plain = open(os.path.join(d, "untraced.err"), errors="replace").read()
        same = same and "gpuspy_torch" not in err and warns(err) <= warns(plain)
        g, c = counts(d)
        step_ok = case != "train_eval" or train_eval_step(d)
        hidden = g["graph_unseen"] > 0 or case == "dynpar"
        eq = {k: g[k] == c[k] for k in c}
        ok = step_ok and rc[0] == rc[1] and rc[2] == "0" and same and all(v for k, v in eq.items() if not (hidden and k in ("kernels", "h2d", "h2d_bytes", "d2h", "d2h_bytes", "memsets")))
        bad += not ok
        note = ""
        if g["graph_unseen"]:
            note = f" ({g['graph_unseen']} of {g['graph_launches']} graph launches of graphs whose nodes were not seen)"
        elif g["graph_launches"]:
            note = f" ({g['graph_launches']} graph launches, {g['captured']} captured calls)"
        elif case == "dynpar":
            note = " (device-side launches)"
        if g["empty_copies"]:
            note += f" ({g['empty_copies']} copies of 0 bytes not compared)"
        pair = lambda k: f"{g[k]} / {c[k]}" + ("" if eq[k] else " *")
        rows.append(f"| {case} | {rc[0]} / {rc[1]} | {'yes' if same else 'NO'} | {g['processes']} | {pair('kernels')}{note} "
                    f"| {pair('h2d')} | {pair('h2d_bytes')} | {pair('d2h')} | {pair('d2h_bytes')} | {pair('memsets')} "
                    f"| {g['failed']} | {'ok' if rc[2] == '0' else 'FAILED'} | {'yes' if ok else 'NO'} |")
        out[case] = {"gpuspy": g, "cupti": c, "exit": rc[:2], "output_same": same, "tools_ok": rc[2] == "0", "ok": ok}
    with open(os.path.join(work, "zoo.json"), "w") as f:
        json.dump(out, f, indent=1)
    print("\n".join(rows))
    print("\n`*`: differs from the counter. Where a row names launches of graphs whose nodes were not seen, "
          "or device-side launches, host calls cannot see that work; it is not held against the row.")
    # cuGetProcAddress answers gpuspy handed back unwrapped (an ABI newer
    # than it knows, or a pointer that differed when asked again at its
    # version): calls through them are not recorded.
    unwrapped = [f"{k} {v['gpuspy']['unwrapped']}" for k, v in out.items() if v["gpuspy"]["unwrapped"]]
    print("\nEntry points handed back unwrapped (GPUSPY_DEBUG): " + (", ".join(unwrapped) if unwrapped else "none"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
