# SPDX-License-Identifier: MIT
"""gpuspy diff: the regression gate. Made-up traces whose steps are known
to the nanosecond (a step 6% slower, steady or noisy; twice the
allocations), and two real runs of one program on the doubles."""
import json
import os
import subprocess

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)


def trace(path, durs, allocs=1, pageable=1000, phase=b"step"):
    """A JSON Lines trace of len(durs) steps: each a phase "step" (or the
    bytes `phase`, raw) lasting durs[i] - 1 us, with `allocs` device
    allocations and frees, one pageable copy and one launch."""
    t = 10 ** 12
    lines = [{"type": "process", "format_version": 2, "pid": 1, "ppid": 0, "host": "h", "rank": -1,
              "local_rank": -1, "command": "made up", "events": 0, "dropped": 0, "clean_exit": True,
              "state": "exited", "truncated": False, "threads": 1, "start_ns": t, "device_mem": [1 << 30],
              "clock": "monotonic"}]

    def ev(kind, api, s, e, **kw):
        lines.append({"type": "event", "kind": kind, "api": api, "tid": 1, "start_ns": s, "end_ns": e,
                      "result": 0, **kw})
    for d in durs:
        ev("phase_begin", "gpuspy_phase_push", t, t, name="@PHASE@")
        for k in range(allocs):
            ev("alloc", "cuMemAlloc_v2", t + 10 + k, t + 11 + k, bytes=256, mem="device", addr=4096 * (k + 1), device=0)
            ev("free", "cuMemFree_v2", t + 20 + k, t + 21 + k, bytes=256, mem="device", addr=4096 * (k + 1), device=0)
        ev("copy", "cuMemcpyHtoD_v2", t + 100, t + 200, bytes=pageable, dir="h2d", host_mem="pageable", device=0)
        ev("launch", "cuLaunchKernel", t + 300, t + 310, name="k", grid=[1, 1, 1], block=[1, 1, 1], device=0, stream=0)
        ev("phase_end", "gpuspy_phase_pop", t + d - 1000, t + d - 1000, name="@PHASE@")
        t += d
    # JSON's strings carry any byte but quotes, backslashes and C0 as it is.
    name = b'"' + phase.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\x1b", b"\\u001b") + b'"'
    with open(path, "wb") as f:
        for line in lines:
            f.write(json.dumps(line).encode().replace(b'"@PHASE@"', name) + b"\n")
    return path


def diff(*args):
    p = subprocess.run([GPUSPY, "diff", *args], capture_output=True, text=True, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr


def verdicts(*args):
    rc, out, err = diff("--json", *args)
    check(rc in (0, 1) and not err, f"diff {args}: {rc} {err!r}")
    o = json.loads(out)
    return rc, {(m["metric"], m.get("phase")): m["regression"] for m in o["metrics"]}, o


@test
def diff_judges_time_against_the_steps_noise(tmp):
    """Steady steps 6% slower: a regression of the step time (over its 5%
    limit, the noise nil), not of the phase (under its 10%); the same 6% on steps that vary by ±50%: within the noise, none;
    --fail-if step_time>10% lets the steady 6% pass; the text names each
    verdict and the exit status is 1 exactly when one is over."""
    base = trace(os.path.join(tmp, "base.jsonl"), [1000000] * 12)
    slow = trace(os.path.join(tmp, "slow.jsonl"), [1060000] * 12)
    noisy_b = trace(os.path.join(tmp, "noisy_b.jsonl"), [500000, 1500000] * 6)
    noisy_s = trace(os.path.join(tmp, "noisy_s.jsonl"), [530000, 1590000] * 6)
    rc, v, o = verdicts(base, slow)
    check(rc == 1 and v[("step_time", None)] and not v[("phase_time", "step")] and o["regression"] and
          not any(v[(m, None)] for m in ("launches", "copy_bytes", "pageable_bytes", "allocs")) and
          (o["base_steps"], o["new_steps"]) == (9, 9), f"steady +6%: {rc} {v} {o['base_steps']}")
    rc, v, o = verdicts(noisy_b, noisy_s)
    noise = [m for m in o["metrics"] if m["metric"] == "step_time"][0]
    check(rc == 0 and not any(v.values()) and noise["noise"] > 0.06 * noise["base"],
          f"noisy +6%: {rc} {v} {noise}")
    rc, v, _ = verdicts("--fail-if", "step_time>10%,phase_time>10%", base, slow)
    check(rc == 0 and not any(v.values()), f"--fail-if step_time>10%: {rc} {v}")
    rc, out, _ = diff(base, slow)
    lines = out.splitlines()
    check(rc == 1 and lines[0] == f"gpuspy diff: {slow} (9 steps) against {base} (9 steps), the first step of each "
          "left out" and any(l.startswith("  time per step") and "+6.0%" in l and l.endswith("  REGRESSION")
                             for l in lines) and lines[-1] == "1 metric over its limit", out)
    rc, out, _ = diff(base, trace(os.path.join(tmp, "same.jsonl"), [1000000] * 12))
    check(rc == 0 and out.splitlines()[-1] == "no regression", f"the same run: {rc} {out}")


@test
def diff_counts_what_a_step_does(tmp):
    """Twice the allocations a step, the same time: allocs is the one
    regression; from no pageable copy to one: a regression from nothing;
    --fail-if allocs>150% lets the first pass."""
    base = trace(os.path.join(tmp, "base.jsonl"), [1000000] * 12)
    rc, v, o = verdicts(base, trace(os.path.join(tmp, "allocs.jsonl"), [1000000] * 12, allocs=2))
    a = [m for m in o["metrics"] if m["metric"] == "allocs"][0]
    check(rc == 1 and [k for k, x in v.items() if x] == [("allocs", None)] and (a["base"], a["new"]) == (1, 2),
          f"allocations: {rc} {v} {a}")
    rc, v, _ = verdicts("--fail-if", "allocs>150%", base, os.path.join(tmp, "allocs.jsonl"))
    check(rc == 0, f"--fail-if allocs>150%: {rc} {v}")
    none = trace(os.path.join(tmp, "none.jsonl"), [1000000] * 12, pageable=0)
    rc, v, _ = verdicts(none, base)
    check(rc == 1 and v[("pageable_bytes", None)] and v[("copy_bytes", None)], f"from no copy: {rc} {v}")


@test
def diff_real_runs_of_one_program(tmp):
    """prog_train twice: what a step does is the same (launches, copies,
    allocations; their times depend on the machine's load, so they are
    not asserted); with its data phase ten times as long: the step time
    and the data phase regress, what a step does does not (three times
    as long was within the noise of runs on a loaded 2-core machine)."""
    runs = []
    for name, data_us in (("a", "2000"), ("b", "2000"), ("slow", "20000")):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        run("prog_train", ["20", data_us], tmp=d)
        runs.append(d)
    counts = [("launches", None), ("copy_bytes", None), ("pageable_bytes", None), ("allocs", None)]
    _, v, _ = verdicts(runs[0], runs[1])
    check(not any(v[k] for k in counts), f"the same program twice: {v}")
    rc, v, _ = verdicts(runs[0], runs[2])
    check(rc == 1 and v[("step_time", None)] and v[("phase_time", "data")] and not any(v[k] for k in counts),
          f"a slower data phase: {rc} {v}")


@test
def diff_refuses_what_it_cannot_compare(tmp):
    """Misuse and runs without steps to compare: one line, status 2."""
    base = trace(os.path.join(tmp, "base.jsonl"), [1000000] * 12)
    short = trace(os.path.join(tmp, "short.jsonl"), [1000000] * 3)
    for args, want in (([base], "diff: no NEW run given"),
                       ([], "diff: no BASE and NEW runs given"),
                       ([base, base, base], f"diff: two runs, BASE and NEW, not '{base}' too"),
                       (["--fail-if", "speed>5%", base, base], "diff: --fail-if speed>5%: use NAME>N% with NAME one of"),
                       (["--fail-if", "allocs>5", base, base], "diff: --fail-if allocs>5: use NAME>N%"),
                       ([base, short], f"diff: {short}: 0 steps past the first; comparing needs 3 or more"),
                       ([base, os.path.join(tmp, "missing")], f"diff: {tmp}/missing: cannot open")):
        rc, out, err = diff(*args)
        check(rc == 2 and err.startswith("gpuspy: error: " + want) and err.count("\n") == 1 and not out,
              f"diff {args}: {rc} {err!r}")


@test
def diff_refuses_limits_that_are_not_numbers(tmp):
    """--fail-if with a limit that is not a plain non-negative percentage
    (nan, inf, negative, empty, trailing junk, a hex float, an exponent,
    too large): one line, status 2, where nan% was taken and flagged
    nothing, even for steps 3,000 times slower."""
    base = trace(os.path.join(tmp, "base.jsonl"), [1000000] * 12)
    slow = trace(os.path.join(tmp, "slow.jsonl"), [3000000000] * 12)
    rc, out, err = diff("--fail-if", "step_time>10%", base, slow)
    check(rc == 1, f"3,000x slower with step_time>10%: {rc} {err!r}")
    for lim in ("step_time>nan%", "step_time>NaN%", "step_time>inf%", "step_time>-inf%", "step_time>infinity%",
                "step_time>-5%", "step_time>%", "step_time>", "step_time>5%x", "step_time>5%%", "step_time>5",
                "step_time>0x10%", "step_time>0x1p3%", "step_time>1e3%", "step_time> 5%", "step_time>5 %",
                "step_time>+5%", "step_time>.%", "step_time>1e999%", "step_time>10000001%",
                "step_time>5%,allocs>nan%", "step_time>5%,", ",step_time>5%", "step_time>5%," + "x" * 600):
        rc, out, err = diff("--fail-if", lim, base, slow)
        check(rc == 2 and out == "" and err.startswith(f"gpuspy: error: diff: --fail-if {lim[:40]}") and
              err.count("\n") == 1, f"--fail-if {lim!r}: {rc} {out!r} {err!r}")
    for lim in ("step_time>0%", "step_time>0.5%", "step_time>12.25%", "step_time>10000000%"):
        rc, out, err = diff("--fail-if", lim, base, slow)
        check(rc in (0, 1) and not err, f"--fail-if {lim!r} refused: {rc} {err!r}")


@test
def diff_escapes_phase_names_for_the_terminal(tmp):
    """A phase named with ESC, C1 CSI as UTF-8 and as a raw byte: the table
    shows it escaped (\\x1b, \\u009b, \\x9b) and writes none of those
    bytes; a name of 81 bytes of two-byte characters is cut to 60 bytes
    between characters, never inside one (valid UTF-8); --json gives the
    whole name."""
    for phase, want in ((b"st\x1b[2J\xc2\x9bep\x9b", "  st\\x1b[2J\\u009bep\\x9b "),
                        (b"a" + "\u00e9".encode() * 40, "  a" + "\u00e9" * 29 + " ")):
        base = trace(os.path.join(tmp, "base.jsonl"), [1000000] * 12, phase=phase)
        new = trace(os.path.join(tmp, "new.jsonl"), [1000000] * 12, phase=phase)
        p = subprocess.run([GPUSPY, "diff", base, new], capture_output=True, timeout=TIMEOUT)
        check(p.returncode == 0 and not p.stderr, f"diff {phase!r}: {p.returncode} {p.stderr!r}")
        for bad in (b"\x1b", b"\x9b"):
            check(bad not in p.stdout, f"diff {phase!r}: {bad!r} reached the terminal: {p.stdout!r}")
        try:
            out = p.stdout.decode("utf-8", errors="strict")
        except UnicodeDecodeError as e:
            raise Fail(f"diff {phase!r}: not UTF-8: {e}: {p.stdout!r}")
        check(any(line.startswith("  " + want) for line in out.splitlines()), f"diff {phase!r}: no line {want!r}:\n{out}")
        rc, _, o = verdicts(base, new)
        got = [m["phase"] for m in o["metrics"] if m["metric"] == "phase_time"]
        check(got == [phase.decode("utf-8", errors="replace")], f"diff --json {phase!r}: {got}")
