# SPDX-License-Identifier: MIT
"""Checks of issue 4 on the H200, from `gpuspy report --json` outputs:
PyTorch 2.11 phases with no code change, and the diagnoses of the examples.
Usage: check_phases.py WORKDIR   (after tests/gpu/run.sh made the reports)
Prints one line per check; exit 1 if any fails."""
import json
import os
import sys
from checks import check, done

work = sys.argv[1]


def load(name):
    return json.load(open(os.path.join(work, name + ".report.json")))




def phases(o):
    return {p["name"]: p for p in o["phases"]}


for case in ("mlp_loader", "train_slow"):
    ph = phases(load(case))
    check(f"{case}: four phases", all(n in ph for n in ("data", "forward", "backward", "optimizer")),
          str(list(ph)))
    for n in ("forward", "backward", "optimizer"):
        check(f"{case}: launches in {n}", ph.get(n, {}).get("launch", {}).get("count", 0) > 0,
              str(ph.get(n, {}).get("launch")))
    h2d = ph.get("data", {}).get("copy", {}).get("h2d", {})
    n = h2d.get("pageable", {}).get("count", 0) + h2d.get("pinned", {}).get("count", 0)
    check(f"{case}: H2D copies in data", n > 0, str(h2d))

slow, fast = load("train_slow"), load("train_fast")
ids = lambda o: {d["id"] for d in o["diagnoses"]}
check("train.py (0 workers, pageable): pageable copies diagnosed", "pageable_copies" in ids(slow), str(ids(slow)))
check("train.py (0 workers, pageable): data starvation diagnosed", "data_starvation" in ids(slow), str(ids(slow)))
fh = phases(fast)["data"]["copy"]["h2d"]
check("train.py (4 workers, pinned): H2D copies pinned, none pageable",
      fh["pinned"]["count"] > 0 and fh["pageable"]["count"] == 0, str(fh))
check("train.py (4 workers, pinned): the model's start-up uploads are not diagnosed as pageable copies",
      "pageable_copies" not in ids(fast), str(ids(fast)))
share = lambda o: phases(o)["data"]["wall_ns"] / max(o["duration_ns"], 1)
check("train.py: data share of wall time falls with workers",
      share(fast) < share(slow), f"{share(slow):.2f} -> {share(fast):.2f}")
for ex, diag in (("ex_pinned_vs_pageable", "pageable_copies"), ("ex_data_starved", "data_starvation"),
                 ("ex_alloc_churn", "allocation_churn")):
    check(f"{ex}: {diag}", diag in ids(load(ex)), str(ids(load(ex))))
done()
