# SPDX-License-Identifier: MIT
"""Reads what cupti_toggle.c wrote for one process: on the thread that
launches the most, the windows with CUPTI's activity records on against
those with them off, per unit of work (the thread's commonest launch
call: a JAX step's graph launch, a PyTorch kernel launch). For each
window (its first SETTLE_MS left out, the switch's own work), the period
from one unit to the next, each driver call's time a unit, and the
host's time between calls a unit (the period less the calls). Printed:
the medians over the windows on and off, their difference, and the
median of the paired differences (each window on against the mean of the
windows off on either side of it).
  python3 cupti_toggle.py NAME TOGGLE_OUT"""
import bisect
import collections
import statistics
import struct
import sys

SETTLE_MS = 20
LAUNCHES = ("cuGraphLaunch", "cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch_ptsz",
            "cuLaunchKernel_ptsz", "cuLaunchKernelEx_ptsz")


def windows(path):
    rec = list(struct.iter_unpack("<IIQQ", open(path, "rb").read()))
    names = {}
    for line in open(path + ".names"):
        k, v = line.split(" ", 1)
        names[int(k)] = v.strip()
    sw = sorted((r for r in rec if r[0] == 0), key=lambda r: r[2])
    launch_ids = {k for k, v in names.items() if v in LAUNCHES}
    lc = [r for r in rec if r[0] in launch_ids]
    if not lc:
        return None, names
    tid = collections.Counter(r[1] for r in lc).most_common(1)[0][0]
    unit = collections.Counter(r[0] for r in lc if r[1] == tid).most_common(1)[0][0]
    th = sorted((r for r in rec if r[0] and r[1] == tid), key=lambda r: r[2])
    starts = [r[2] for r in th]
    out = []
    for i in range(len(sw) - 1):
        ws, we, on = sw[i][2] + SETTLE_MS * 1000000, sw[i + 1][2], sw[i][3]
        lo, hi = bisect.bisect_left(starts, ws), bisect.bisect_left(starts, we)
        u = [r for r in th[lo:hi] if r[0] == unit]
        if len(u) < 5:
            out.append(None)
            continue
        a, b = u[0][2], u[-1][2]
        n = len(u) - 1
        per = collections.defaultdict(float)
        for c, _, t0, t1 in th[bisect.bisect_left(starts, a):bisect.bisect_left(starts, b)]:
            per[names.get(c, str(c))] += (min(t1, b) - t0) / n
        api = sum(per.values())
        row = {"on": on, "units": n, "period": (b - a) / n, "host between calls": (b - a) / n - api}
        row.update(per)
        out.append(row)
    return out, names[unit]


def main():
    name, path = sys.argv[1], sys.argv[2]
    ws, unit = windows(path)
    if not ws:
        print(f"{name}: no launches")
        return
    full = [w for w in ws if w]
    # The steady part: windows with at least half the busiest windows' units
    # (JAX compiles, PyTorch warms up, at the start).
    top = sorted(w["units"] for w in full)[len(full) // 2:]
    floor = 0.5 * statistics.median(top)
    ws = [w if w and w["units"] >= floor else None for w in ws]
    on = [w for w in ws if w and w["on"]]
    off = [w for w in ws if w and not w["on"]]
    if len(on) < 3 or len(off) < 3:
        print(f"{name}: too few steady windows ({len(on)} on, {len(off)} off)")
        return
    keys = ["period", "host between calls"]
    tot = collections.Counter()
    for w in on + off:
        for k, v in w.items():
            if k not in ("on", "units", "period", "host between calls"):
                tot[k] += v
    keys += [k for k, _ in tot.most_common(8)]
    print(f"\n{name}: a unit is one {unit} on the thread that launches most; "
          f"{len(on)} windows with records on, {len(off)} off, {sum(w['units'] for w in on + off)} units\n")
    print("| us a unit | records on | records off | on - off | paired on - off |")
    print("| --- | --- | --- | --- | --- |")
    for k in keys:
        mo = statistics.median(w.get(k, 0) for w in on) / 1e3
        mf = statistics.median(w.get(k, 0) for w in off) / 1e3
        pairs = []
        for i, w in enumerate(ws):
            if w and w["on"] and 0 < i < len(ws) - 1 and ws[i - 1] and ws[i + 1]:
                pairs.append(w.get(k, 0) - (ws[i - 1].get(k, 0) + ws[i + 1].get(k, 0)) / 2)
        pd = f"{statistics.median(pairs) / 1e3:+.2f} ({len(pairs)})" if pairs else "-"
        print(f"| {k} | {mo:.2f} | {mf:.2f} | {mo - mf:+.2f} | {pd} |")


if __name__ == "__main__":
    main()
