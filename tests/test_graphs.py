# SPDX-License-Identifier: MIT
"""CUDA graphs: a launch counts the nodes the graph was instantiated with.

Calls made on a stream being captured are counted apart, since they do not
run. tests/progs/prog_graph.c on the driver
double, whose graphs run their nodes and tell the CUPTI double of each."""
import json
import os
import subprocess

from harness import GPUSPY, TIMEOUT, check, only_trace, run, test, traces

# What prog_graph's launches ran: e1 (captured: 1,000 B allocated, kernel
# grid 4, 1,000 B pinned upload, 1,000 B memset, the free) 3 times; e2
# (kernel, 300 B pageable download, e1's graph as a child) twice; e1
# updated (grid 8, 2,000 B) once.
RAN = {"kernels": 8,
       "copy": {"h2d": {"pageable": {"count": 0, "bytes": 0}, "pinned": {"count": 6, "bytes": 7000}},
                "d2h": {"pageable": {"count": 2, "bytes": 600}, "pinned": {"count": 0, "bytes": 0}}},
       "memset": {"count": 6, "bytes": 7000}, "alloc": {"count": 6, "bytes": 7000},
       "free": {"count": 6, "bytes": 7000}, "launches_unseen": 1}


def report(path):
    p = subprocess.run([GPUSPY, "report", "--json", path], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"report {path}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def graph_run(tmp, cupti):
    for f in traces(tmp):
        os.unlink(os.path.join(tmp, f))
    a = run("prog_graph", tmp=tmp, preload=False)
    b = run("prog_graph", tmp=tmp, env={"GPUSPY_CUPTI": cupti})
    check(a.stdout == b.stdout and "rc=0 errno=1234" in b.stdout and "rc=1" not in b.stdout,
          f"CUPTI {cupti}: output changed or a call failed:\n{b.stdout}")
    return only_trace(tmp)


@test
def graph_launches_count_what_their_nodes_ran(tmp):
    """Instantiation (with flags; with parameters through cuGetProcAddress)
    and an update each write a graph record and the nodes that follow it,
    child graphs walked into; the report adds a graph's nodes at each of
    its launches, and its kernels column counts them; a launch of a graph
    never seen instantiated is counted as unseen. The dump's JSON Lines
    give the same report."""
    _, ev = graph_run(tmp, "off")
    graphs = [(e["api"], e["nodes"]) for e in ev if e["kind"] == "graph"]
    check(graphs == [("cuGraphInstantiateWithFlags", 5), ("cuGraphInstantiateWithParams", 7),
                     ("cuGraphExecUpdate_v2", 5)], f"graph records {graphs}")
    nodes = [(e["kind"], e.get("name"), e.get("grid"), e.get("bytes"), e.get("dir"), e.get("host_mem"))
             for e in ev if e["kind"].startswith("node_")]
    e1 = [("node_alloc", None, None, 1000, None, None),
          ("node_kernel", "cap_k", [4, 1, 1], None, None, None), ("node_copy", None, None, 1000, "h2d", "pinned"),
          ("node_memset", None, None, 1000, None, None), ("node_free", None, None, 1000, None, None)]
    e2 = [("node_kernel", "node_k", [2, 1, 1], None, None, None),
          ("node_copy", None, None, 300, "d2h", "pageable")] + e1
    upd = [("node_alloc", None, None, 2000, None, None),
           ("node_kernel", "cap_k", [8, 1, 1], None, None, None), ("node_copy", None, None, 2000, "h2d", "pinned"),
           ("node_memset", None, None, 2000, None, None), ("node_free", None, None, 2000, None, None)]
    check(nodes == e1 + e2 + upd, f"nodes {nodes}")
    t = traces(tmp)[0]
    r = report(os.path.join(tmp, t))
    check(r["totals"]["graphs"] == RAN, f"graphs {r['totals']['graphs']}")
    # Launch calls: 7 graph launches and 1 kernel; kernels run: 8 + 1 + the unseen graph's launch.
    check(r["totals"]["launch"]["count"] == 8, f"launch calls {r['totals']['launch']}")
    subprocess.run([GPUSPY, "dump", os.path.join(tmp, t), "-o", os.path.join(tmp, "d.jsonl")], check=True,
                   timeout=TIMEOUT)
    j = report(os.path.join(tmp, "d.jsonl"))
    check(j["totals"]["graphs"] == RAN and j.get("captured") == r.get("captured"),
          f"from the dump: {j['totals'].get('graphs')} {j.get('captured')}")
    p = subprocess.run([GPUSPY, "report", "--color", "never", os.path.join(tmp, t)], capture_output=True,
                       text=True, timeout=TIMEOUT)
    rows = [l.split() for l in p.stdout.splitlines() if l.strip().startswith("total ")]
    check(rows and rows[0][4] == "10", f"kernels column: {rows}")
    check("CUDA graphs ran 8 kernels, 8 copies (7.4 KiB) and 6 memsets (6.8 KiB), as instantiated" in p.stdout
          and "and their memory nodes made 6 allocations (6.8 KiB) and 6 frees" in p.stdout
          and "1 CUDA graph launch of graphs whose nodes were not seen" in p.stdout, p.stdout)


@test
def calls_on_a_capturing_stream_are_counted_apart(tmp):
    """The kernel, upload and memset made during each of the two captures
    are marked captured in the dump and counted apart, in no total; the
    kernel launched after the capture ended is not. What the graphs' nodes
    ran is in the totals, as their kernels are: 6 pinned uploads (7,000 B),
    2 pageable downloads (600 B), 6 memsets (7,000 B), with no host time.
    With CUPTI (the double's), the GPU ran exactly what the graph nodes
    say: 8 graph kernels of seen graphs (3 more of the unseen one), 8
    copies, 6 memsets, and the copies' GPU records are those totals'."""
    for cupti in ("off", "on"):
        _, ev = graph_run(tmp, cupti)
        cap = [(e["kind"], e["api"]) for e in ev if e.get("captured")]
        check(cap == [("alloc", "cuMemAllocAsync"), ("launch", "cuLaunchKernel"), ("copy", "cuMemcpyHtoDAsync_v2"),
                      ("memset", "cuMemsetD32Async"), ("free", "cuMemFreeAsync")] * 2,
              f"CUPTI {cupti}: captured {cap}")
        after = [e for e in ev if e.get("name") == "after" and e["kind"] == "launch"]
        check(len(after) == 1 and not after[0].get("captured"), f"after the capture: {after}")
        r = report(os.path.join(tmp, traces(tmp)[0]))
        check(r.get("captured") == {"alloc": 2, "free": 2, "copy": 2, "memset": 2, "launch": 2},
              f"captured {r.get('captured')}")
        t = r["totals"]
        got = [(t["copy"]["h2d"]["pinned"]["count"], t["copy"]["h2d"]["pinned"]["bytes"],
                t["copy"]["h2d"]["pinned"]["host_ns"]), (t["copy"]["d2h"]["pageable"]["count"],
               t["copy"]["d2h"]["pageable"]["bytes"]), (t["memset"]["count"], t["memset"]["bytes"])]
        check(got == [(6, 7000, 0), (2, 600), (6, 7000)], f"CUPTI {cupti}: the totals hold {got}, not the "
              "graph nodes' copies and memsets alone (captured calls counted, or nodes left out)")
        if cupti == "on":
            check(t["copy"]["h2d"]["pinned"]["gpu_count"] == 6 and t["copy"]["d2h"]["pageable"]["gpu_count"] == 2
                  and t["memset"]["gpu_count"] == 6, f"GPU records of the nodes' copies: {t['copy']} {t['memset']}")
        if cupti == "on":
            gpu = [e for e in ev if e["kind"].startswith("gpu_")]
            kinds = [e["kind"] for e in gpu]
            seen = [e for e in gpu if e["kind"] == "gpu_kernel" and e.get("name") != "graph_node"]
            check(kinds.count("gpu_copy") == 8 and kinds.count("gpu_memset") == 6 and
                  sorted(e["name"] for e in seen) == ["after"] + ["cap_k"] * 6 + ["node_k"] * 2,
                  f"GPU records {[(e['kind'], e.get('name')) for e in gpu]}")
            check(r["gpu"]["graph_kernels"] == 11 and
                  all(bool(e.get("graph_id")) for e in gpu if e["kind"] != "gpu_kernel"),
                  f"CUPTI graph kernels {r['gpu']}; graph ids of copies and memsets")
