# SPDX-License-Identifier: MIT
"""Allocation churn told from a program's setup and teardown, on traces
known to the call (diagnose.c's churn, memory.c's turns)."""
import os

from harness import check, report_json, test
from test_report import write_jsonl


def mem(kind, t, addr, size=1 << 20):
    return {"kind": kind, "api": "cudaMalloc" if kind == "alloc" else "cudaFree", "tid": 7, "start_ns": t,
            "end_ns": t + 200_000, "result": 0, "mem": "device", "addr": addr, "device": 0, "bytes": size}


def churn_of(tmp, name, calls):
    """The churn diagnosis of a program without phases making calls, each
    ("alloc" or "free", addr, bytes), 1 ms apart; None without one."""
    ev = [mem(k, 1_000_000 * (i + 1), a, b) for i, (k, a, b) in enumerate(calls)]
    said = {d["id"]: d["text"] for d in report_json(write_jsonl(os.path.join(tmp, name), ev))["diagnoses"]}
    return said.get("allocation_churn")


@test
def setup_and_teardown_are_not_churn(tmp):
    """Each call 200 us, 1 ms apart, no phase (warm-up: the first fifth of
    the calls). A loop that allocates and frees 1 MiB 12 times is churn; a
    setup of 30 allocations then their teardown is not, nor with one
    buffer freed mid-setup (one turn from freeing to allocating), nor
    with cublasCreate's cudaFree(0) between its allocations (a free of
    nothing, 5 times): the zoo's um_streams_cublas, where the setup ran
    past the first fifth. Three turns after warm-up make churn again."""
    loop = [(k, 4096, 1 << 20) for _ in range(12) for k in ("alloc", "free")]
    text = churn_of(tmp, "loop.jsonl", loop)
    check(text is not None and text.startswith("10 device allocations (10 MiB) and 10 frees after warm-up"),
          f"loop: {text}")
    setup = [("alloc", 4096 * (i + 1), 1 << 20) for i in range(30)]
    teardown = [("free", 4096 * (i + 1), 1 << 20) for i in range(30)]
    check(churn_of(tmp, "plain.jsonl", setup + teardown) is None, "setup, teardown")
    mid = setup[:11] + [("free", 4096, 1 << 20)] + setup[11:] + teardown[1:]
    check(churn_of(tmp, "mid.jsonl", mid) is None, "one buffer freed mid-setup")
    cublas = [c for i in range(5) for c in [("free", 0, 0)] + setup[3 * i:3 * i + 3]] + setup[15:] + teardown
    check(churn_of(tmp, "cublas.jsonl", cublas) is None, "cudaFree(0) between allocations")
    turns = setup[:20] + [c for i in range(3) for c in [("free", 4096 * (i + 1), 1 << 20),
                                                        ("alloc", 4096 * (i + 1), 1 << 20)]] + setup[20:] + teardown
    check(churn_of(tmp, "turns.jsonl", turns) is not None, "three turns")
