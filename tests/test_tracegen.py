# SPDX-License-Identifier: MIT
"""Generated traces, hostile and huge, through report, dump and export.

A structured trace generator: random processes, threads, event kinds,
thousands of phase names nested deep, failed calls and cut files, for
report, dump and export (under AddressSanitizer in `make check-sanitize`).
The byte fuzzer mutates bytes and never reaches such traces: XLA's hundreds
of NVTX range names made the report read freed memory while its phase
table grew (tools/report/report.c)."""
import json
import os
import random
import subprocess
import time

from harness import BIN, GPUSPY, SANITIZED, TIMEOUT, Fail, check, test

KINDS = {
    "alloc": ("cudaMalloc", "cuMemAlloc_v2", "cuMemAllocAsync"),
    "free": ("cudaFree", "cuMemFree_v2"),
    "copy": ("cudaMemcpy", "cudaMemcpyAsync", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"),
    "memset": ("cudaMemset", "cuMemsetD8_v2"),
    "launch": ("cuLaunchKernel", "cudaLaunchKernel", "cuGraphLaunch"),
    "sync": ("cudaDeviceSynchronize", "cuStreamSynchronize", "cuEventSynchronize"),
}


def process(rng, pid, names):
    """One process's JSON Lines: header, then events of several threads
    with nested phases (by NVTX-like names) and failed calls."""
    threads = [pid * 100 + i for i in range(rng.randint(1, 4))]
    t = 1_000_000
    events, stack, addrs = [], [], []
    for _ in range(rng.randint(50, 600)):
        t += rng.randint(0, 20_000)
        tid = rng.choice(threads)
        r = rng.random()
        if r < 0.25 and len(stack) < 40:
            name = rng.choice(names)
            stack.append(name)
            events.append({"kind": "phase_begin", "api": "nvtxRangePush", "tid": tid, "start_ns": t,
                           "end_ns": t, "result": 0, "device": 0, "name": name})
            continue
        if r < 0.45 and stack:
            name = stack.pop() if rng.random() < 0.9 else rng.choice(names)  # a few mismatched
            events.append({"kind": "phase_end", "api": "nvtxRangePop", "tid": tid, "start_ns": t,
                           "end_ns": t, "result": 0, "device": 0, "name": name})
            continue
        kind = rng.choice(list(KINDS))
        e = {"kind": kind, "api": rng.choice(KINDS[kind]), "tid": tid, "start_ns": t,
             "end_ns": t + rng.randint(0, 50_000), "result": 0 if rng.random() > 0.1 else rng.choice((1, 2, 700, 999)),
             "device": rng.choice((0, 0, 1, -1))}
        if kind in ("alloc", "free", "copy", "memset"):
            e["bytes"] = rng.choice((0, 1, 4096, 1 << 20, 80 << 30))
        if kind == "alloc":
            e["mem"] = rng.choice(("device", "pinned", "managed"))
            e["addr"] = rng.randint(1, 1 << 40)
            addrs.append(e["addr"])
        if kind == "free":
            e["addr"] = rng.choice(addrs) if addrs and rng.random() < 0.8 else rng.randint(1, 1 << 40)
        if kind == "copy":
            e["dir"] = rng.choice(("h2d", "d2h", "d2d", "p2p", "h2h"))
            e["host_mem"] = rng.choice(("pageable", "pinned"))
            e["async"] = rng.random() < 0.5
        if kind == "launch":
            e["name"] = rng.choice(names[:50]) + "_kernel"
            e["grid"] = [rng.randint(1, 1000), 1, 1]
            e["block"] = [rng.choice((32, 128, 256)), 1, 1]
        events.append(e)
    header = {"type": "process", "format_version": 2, "pid": pid, "ppid": 1, "host": "gen", "rank": -1,
              "local_rank": -1, "command": "tracegen", "events": len(events), "dropped": rng.choice((0, 0, 5)),
              "mode": "drop", "overwritten": 0, "clean_exit": rng.random() < 0.7, "state": "exited",
              "truncated": False, "record_bytes": 0, "used_bytes": 0, "threads": len(threads),
              "start_realtime_ns": 1, "start_ns": 1_000_000, "gpu_timing": "none",
              "device_mem": [80 << 30, 80 << 30], "clock": "monotonic"}
    return [json.dumps(header)] + [json.dumps(dict(type="event", **e)) for e in events]


def gspy(*args, cwd=None):
    return subprocess.run([GPUSPY, *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)


def no_crash(p, what):
    """A run may refuse bad input with one line and exit 1; it never dies
    of a signal or a sanitizer's report (exit 97-99)."""
    check(p.returncode in (0, 1), f"{what}: exit {p.returncode}: {p.stderr[-600:]}")
    if p.returncode:
        check(p.stderr.startswith("gpuspy: error: "), f"{what}: exit 1 without the error line: {p.stderr[-300:]}")


@test
def structured_traces_through_report_dump_export(tmp):
    """40 generated sets of 1-4 processes (the first 15 under the
    sanitizers: CI's time), with up to 2,000 phase names each, nested up
    to 40 deep, 10% failed calls: report (text and --json), dump and
    export succeed on every file and on the set."""
    rng = random.Random(20261202)
    for case in range(15 if SANITIZED else 40):
        names = [f"XlaPass:#name=pass{i}#" if i % 3 else f"cub::Device{i}" for i in range(rng.choice((5, 300, 2000)))]
        files = []
        for k in range(rng.randint(1, 4)):
            f = os.path.join(tmp, f"case{case}-p{k}.jsonl")
            with open(f, "w") as out:
                out.write("\n".join(process(rng, 1000 + k, names)) + "\n")
            files.append(f)
        for args in (["report", *files], ["report", "--json", *files]):
            p = gspy(*args)
            no_crash(p, f"case {case}: {' '.join(args[:2])}")
            check(p.returncode == 0, f"case {case}: {args[:2]} refused a valid trace: {p.stderr[-300:]}")
        for f in files:
            no_crash(gspy("dump", f), f"case {case}: dump")
            no_crash(gspy("export", "--format", "chrome", "-o", os.path.join(tmp, "out.json"), f), f"case {case}: export")


@test
def cut_binary_traces_are_read_or_refused(tmp):
    """A binary trace (tests/bin/mktrace: 20,000 events, 3 threads, 4 KiB
    chunks) cut at 60 offsets (20 under the sanitizers: CI's time),
    header and string table included: report, dump and export read the
    prefix or refuse it with one line."""
    src = os.path.join(tmp, "whole.gspy")
    p = subprocess.run([os.path.join(BIN, "mktrace"), src, "20000", "3", "65536", "4096"],
                       capture_output=True, timeout=TIMEOUT)
    check(p.returncode == 0, "mktrace failed")
    data = open(src, "rb").read()
    rng = random.Random(7)
    cuts = sorted({0, 1, 4095, 4096, 4097} | {rng.randint(1, len(data) - 1) for _ in range(15 if SANITIZED else 55)})
    for n in cuts:
        f = os.path.join(tmp, f"cut-{n}.gspy")
        with open(f, "wb") as out:
            out.write(data[:n])
        for args in (["report", f], ["report", "--json", f], ["dump", f],
                     ["export", "--format", "chrome", "-o", os.path.join(tmp, "o.json"), f]):
            no_crash(gspy(*args), f"cut at {n}: {args[0]}")
        os.unlink(f)


@test
def long_runs_step_is_searched_in_its_last_events(tmp):
    """A run longer than the events the step is searched in
    (tests/bin/mktrace: 1,500,000 events, one step of 14 in a phase "fwd",
    the same from the first): the report says from when it searched, and
    what came before is no warm-up (it said "the 108.7 ms before is
    warm-up" of steps that had been the same); --json: warmup_ns 0,
    searched_from_ns the first event searched, the steady state from
    there, within a step."""
    src = os.path.join(tmp, "long.gspy")
    p = subprocess.run([os.path.join(BIN, "mktrace"), src, "1500000", "1", str(64 << 20), "65536"],
                       capture_output=True, timeout=TIMEOUT)
    check(p.returncode == 0, "mktrace failed")
    step = json.loads(gspy("report", "--json", src).stdout)["processes"][0]["step"]
    check(step["warmup_ns"] == 0 and step["searched_from_ns"] > 100_000_000 and
          0 <= step["steady_from_ns"] - step["searched_from_ns"] <= step["step_ns"], f"{step}")
    text = gspy("report", src).stdout
    want = [f"  searched from {step['searched_from_ns'] / 1e6:.1f} ms on (a long run's step is found in its last "
            "1048576 events)", f"  {step['steps']} steps, the run's last, steady from there"]
    got = text.split("  the cycle of phases fwd\n")[1].splitlines()[:2]
    check(got == want, f"{got}")


@test
def fifo_named_like_a_trace_is_refused(tmp):
    """A FIFO named x.gspy (or x.jsonl), alone or in a directory: report,
    dump and export refuse it in one line at once instead of waiting for a
    writer that never comes."""
    for name in ("x.gspy", "y.jsonl"):
        f = os.path.join(tmp, name)
        os.mkfifo(f)
        for args in (["report", f], ["dump", f], ["export", "--format", "chrome", "-o", os.path.join(tmp, "o"), f]):
            p = gspy(*args)
            check(p.returncode == 1 and p.stderr.strip().endswith(f"{f}: not a regular file"),
                  f"{args}: exit {p.returncode}: {p.stderr.strip()!r}")
        os.unlink(f)
    os.mkfifo(os.path.join(tmp, "z.gspy"))
    p = gspy("report", tmp)
    check(p.returncode == 1 and "not a regular file" in p.stderr, f"report DIR: exit {p.returncode}: {p.stderr!r}")


@test
def terminal_named_as_a_trace_is_not_taken(tmp):
    """A terminal (a pty's slave) named as the trace, gpuspy leading a
    session of its own without one: report, dump and export refuse it in
    one line and it does not become gpuspy's controlling terminal
    (O_NOCTTY), which a session leader's open of a terminal makes it.
    Checked in /proc/PID/stat while gpuspy is held up writing that line
    to a full pipe."""
    import fcntl
    write_nr = {"x86_64": 1, "aarch64": 64, "riscv64": 64, "ppc64le": 4, "s390x": 4}.get(os.uname().machine)
    master, slave = os.openpty()
    name = os.ttyname(slave)
    os.close(slave)
    try:
        for args in (["report", name], ["dump", name], ["export", "--format", "chrome", "-o", os.path.join(tmp, "o"),
                                                          name]):
            r, w = os.pipe()
            fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
            filled = 0
            try:
                while True:
                    filled += os.write(w, b"x" * 4096)
            except BlockingIOError:
                pass
            fcntl.fcntl(w, fcntl.F_SETFL, 0)
            p = subprocess.Popen([GPUSPY, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=w,
                                 start_new_session=True)
            os.close(w)
            try:
                # Held up in write(2, ...): its line is next, the open is done.
                until = time.monotonic() + TIMEOUT
                while time.monotonic() < until:
                    try:
                        call = open(f"/proc/{p.pid}/syscall").read().split()
                    except OSError:
                        call = []
                    if write_nr is None or call[:2] == [str(write_nr), "0x2"]:
                        break
                    time.sleep(0.01)
                if write_nr is None:
                    time.sleep(0.5)
                stat = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
                tty = int(stat[4])
            finally:
                err = b""
                while True:
                    b = os.read(r, 65536)
                    if not b:
                        break
                    err += b
                os.close(r)
                rc = p.wait(timeout=TIMEOUT)
            err = err[filled:].decode()
            check(tty == 0, f"{args[0]}: the terminal became gpuspy's (tty_nr {tty:#x})")
            check(rc == 1 and err.count("\n") == 1 and err.endswith(f"{name}: not a regular file\n"),
                  f"{args[0]}: exit {rc}: {err!r}")
    finally:
        os.close(master)


@test
def trace_cut_while_it_is_read(tmp):
    """`gpuspy dump` is reading a 200,000-event trace (held up by a full
    pipe) when the file is cut to 8 KiB: it says so in one line and exits
    1, where it died of SIGBUS."""
    src = os.path.join(tmp, "big.gspy")
    subprocess.run([os.path.join(BIN, "mktrace"), src, "200000", "2"], check=True, timeout=TIMEOUT)
    p = subprocess.Popen([GPUSPY, "dump", src], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.read(4096)  # it runs; the pipe fills behind this
    check(first.startswith(b'{"type":"process"'), f"dump started with {first[:40]!r}")
    import time
    time.sleep(0.5)
    os.truncate(src, 8192)
    out, err = p.communicate(timeout=TIMEOUT)
    check(p.returncode == 1, f"exit {p.returncode}: {err[-300:]!r}")
    check(err.decode().strip() == f"gpuspy: error: {src}: the file was cut while it was being read; read it again",
          f"stderr: {err[-300:]!r}")


def control_bytes(b, allowed=()):
    """Control bytes (and UTF-8 C1 controls) in b other than newline, tab
    and the colour sequences in allowed."""
    for a in allowed:
        b = b.replace(a, b"")
    bad = [c for c in b if (c < 0x20 and c not in (0x0a, 0x09)) or c == 0x7f]
    return bad + [0x80 + i for i in range(0x20) if bytes([0xc2, 0x80 + i]) in b]


@test
def trace_bytes_cannot_drive_the_terminal(tmp):
    """A trace whose command line, phase and kernel names hold escape
    sequences (set the title, clear the screen, colour, C1 CSI, a name cut
    inside a sequence), and a file whose name holds one: the text report
    and the error lines write them as \\xNN text. With --color always only
    the report's own bold, yellow and reset remain."""
    evil = "\x1b]0;pwned\x07 \x1b[2J\u009b6n\x7f"
    events = [{"kind": "phase_begin", "api": "gpuspy_phase_push", "tid": 7, "start_ns": 2000, "end_ns": 2000,
               "result": 0, "device": 0, "name": "ph" + evil},
              {"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": 2100, "end_ns": 2200, "result": 0,
               "device": 0, "name": "k\x1b[31mred" + evil * 6},
              {"kind": "copy", "api": "cudaMemcpy", "tid": 7, "start_ns": 2300, "end_ns": 9000, "result": 0,
               "device": 0, "bytes": 1 << 20, "dir": "h2d", "host_mem": "pageable"},
              {"kind": "phase_end", "api": "gpuspy_phase_pop", "tid": 7, "start_ns": 9100, "end_ns": 9100,
               "result": 0, "device": 0, "name": "ph" + evil}]
    header = {"type": "process", "format_version": 2, "pid": 7, "ppid": 1, "host": "h\x1b[2J", "rank": -1,
              "local_rank": -1, "command": "cmd" + evil, "events": len(events), "dropped": 0, "clean_exit": True,
              "state": "exited", "truncated": False, "threads": 1, "start_realtime_ns": 1, "start_ns": 1000,
              "device_mem": [1 << 30], "clock": "monotonic"}
    f = os.path.join(tmp, "evil.jsonl")
    with open(f, "w") as out:
        out.write("\n".join(json.dumps(x) for x in [header] + [dict(type="event", **e) for e in events]) + "\n")
    ours = (b"\x1b[1m", b"\x1b[33m", b"\x1b[0m")
    for args, allowed in ((["--color", "never"], ()), (["--color", "always"], ours)):
        p = subprocess.run([GPUSPY, "report", *args, f], capture_output=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"report {args}: exit {p.returncode}: {p.stderr[-200:]!r}")
        check(not control_bytes(p.stdout, allowed), f"report {args}: control bytes {control_bytes(p.stdout, allowed)[:8]}")
        check(b"cmd\\x1b]0;pwned\\x07 \\x1b[2J\\u009b6n\\x7f" in p.stdout, "command line not shown escaped")
    if args[-1] == "always":
        check(b"\x1b[1m" in p.stdout, "--color always lost the report's own bold")
    bad = os.path.join(tmp, "x\x1b[2Jy.gspy")
    with open(bad, "w") as out:
        out.write("garbage")
    p = subprocess.run([GPUSPY, "report", tmp], capture_output=True, timeout=TIMEOUT)
    check(b"x\\x1b[2Jy.gspy" in p.stderr and not control_bytes(p.stderr), f"error line: {p.stderr[-300:]!r}")


def write_trace(path, events, timing="none"):
    """A made-up one-process trace (pid 7, thread 7) in JSON Lines."""
    header = {"type": "process", "format_version": 2, "pid": 7, "ppid": 1, "host": "vm", "rank": -1,
              "local_rank": -1, "command": "t", "events": len(events), "dropped": 0, "clean_exit": True,
              "state": "exited", "truncated": False, "threads": 1, "start_realtime_ns": 1, "start_ns": 1000,
              "gpu_timing": timing, "device_mem": [80 << 30], "clock": "monotonic"}
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(x) for x in [header] + [dict(type="event", tid=7, device=0, **e)
                                                               for e in events]) + "\n")
    return path


@test
def failed_calls_are_counted_apart(tmp):
    """A cudaMalloc of 80 GiB that returned cudaErrorMemoryAllocation (2),
    two cuMemcpyHtoD_v2 that returned CUDA_ERROR_INVALID_VALUE (1) and a
    failed launch, beside one good allocation and copy: the totals,
    bandwidths and memory count only the good calls (the report said
    'allocations: device 2 (80 GiB)' and 1073741.82 GB/s), and the failed
    ones are listed per entry point and error code, in the text and in
    --json."""
    G = 1 << 30
    ev = [dict(kind="alloc", api="cudaMalloc", start_ns=2000, end_ns=3000, result=0, bytes=1 << 20, mem="device", addr=4096),
          dict(kind="alloc", api="cudaMalloc", start_ns=4000, end_ns=7000, result=2, bytes=80 * G, mem="device", addr=0),
          dict(kind="copy", api="cuMemcpyHtoD_v2", start_ns=8000, end_ns=9000, result=1, bytes=G, dir="h2d", host_mem="pageable"),
          dict(kind="copy", api="cuMemcpyHtoD_v2", start_ns=9500, end_ns=9600, result=1, bytes=2 * G, dir="h2d", host_mem="pageable"),
          dict(kind="copy", api="cuMemcpyHtoD_v2", start_ns=10000, end_ns=1_010_000, result=0, bytes=1 << 20, dir="h2d", host_mem="pageable"),
          dict(kind="launch", api="cuLaunchKernel", start_ns=1_100_000, end_ns=1_100_500, result=719, name="k")]
    f = write_trace(os.path.join(tmp, "t.jsonl"), ev)
    p = gspy("report", "--json", f)
    check(p.returncode == 0, p.stderr)
    o = json.loads(p.stdout)
    t = o["totals"]
    check(t["alloc"]["device"]["count"] == 1 and t["alloc"]["device"]["bytes"] == 1 << 20, f"alloc {t['alloc']['device']}")
    h2d = t["copy"]["h2d"]["pageable"]
    check(h2d["count"] == 1 and h2d["bytes"] == 1 << 20 and h2d["host_ns"] == 1_000_000, f"h2d {h2d}")
    check(t["launch"]["count"] == 0, f"launch {t['launch']}")
    want = [{"api": "cudaMalloc", "result": 2, "error": "cudaErrorMemoryAllocation", "count": 1, "first_ns": 2000,
             "first_bytes": 80 * G, "bytes": 80 * G},
            {"api": "cuMemcpyHtoD_v2", "result": 1, "error": "CUDA_ERROR_INVALID_VALUE", "count": 2, "first_ns": 6000,
             "first_bytes": G, "bytes": 3 * G},
            {"api": "cuLaunchKernel", "result": 719, "error": "CUDA_ERROR_LAUNCH_FAILED", "count": 1,
             "first_ns": 1_098_000, "first_bytes": 0, "bytes": 0}]
    check(o["failed"] == want, f"failed: {o['failed']}")
    text = gspy("report", "--color", "never", f).stdout
    for line in ("4 failed calls (in no total above)",
                 "cudaMalloc                 cudaErrorMemoryAllocation (2): 1 time, the first at 2.0 us for 80 GiB",
                 "cuMemcpyHtoD_v2            CUDA_ERROR_INVALID_VALUE (1): 2 times, the first at 6.0 us for 1.0 GiB",
                 "cuLaunchKernel             CUDA_ERROR_LAUNCH_FAILED (719): 1 time, the first at 1.1 ms",
                 "allocations: device 1 (1.0 MiB)"):
        check(line in text, f"report lacks {line!r}:\n{text}")


@test
def busy_in_phases_counts_only_time_in_phases(tmp):
    """A kernel launched in a 1 ms phase runs 9.5 ms past its end (a
    GPU-bound loop's last step, a final sync): 'in phases: busy' counts
    the 0.5 ms inside the phase, not 10 ms (2159% was seen)."""
    ev = [dict(kind="phase_begin", api="gpuspy_phase_push", start_ns=1_000_000, end_ns=1_000_000, result=0, name="step"),
          dict(kind="launch", api="cuLaunchKernel", start_ns=1_400_000, end_ns=1_410_000, result=0, name="k", corr=1),
          dict(kind="gpu_kernel", api="cupti_kernel", start_ns=1_500_000, end_ns=11_000_000, result=0, stream=7, corr=1, name="k"),
          dict(kind="phase_end", api="gpuspy_phase_pop", start_ns=2_000_000, end_ns=2_000_000, result=0, name="step")]
    f = write_trace(os.path.join(tmp, "t.jsonl"), ev, timing="cupti")
    o = json.loads(gspy("report", "--json", f).stdout)
    d = o["gpu"]["devices"][0]
    check((d["busy_ns"], d["busy_in_phases_ns"]) == (9_500_000, 500_000), f"device: {d}")
    text = gspy("report", "--color", "never", f).stdout
    check("in phases: busy 500.0 us of 1.0 ms (50.0%)" in text, f"report:\n{text}")


@test
def pageable_upload_diagnosis_names_an_upload_site(tmp):
    """1 MiB copied host to device at upload_batch and 100 MiB device to
    host at read_back_logits, both pageable: the host-to-device diagnosis
    names upload_batch with all its 1.0 MiB (it named read_back_logits,
    'The largest: 100 MiB')."""
    M = 1 << 20
    ev = [dict(kind="copy", api="cudaMemcpy", start_ns=2000, end_ns=900_000, result=0, bytes=M, dir="h2d",
               host_mem="pageable", stack=1),
          dict(kind="copy", api="cudaMemcpy", start_ns=1_000_000, end_ns=9_000_000, result=0, bytes=100 * M,
               dir="d2h", host_mem="pageable", stack=2)]
    f = os.path.join(tmp, "t.jsonl")
    write_trace(f, ev)
    lines = open(f).read().splitlines()
    stacks = [json.dumps({"type": "stack", "id": 1, "frames": ["upload_batch (train.c:40)", "main (train.c:90)"]}),
              json.dumps({"type": "stack", "id": 2, "frames": ["read_back_logits (train.c:60)", "main (train.c:95)"]})]
    with open(f, "w") as out:
        out.write("\n".join(lines[:1] + stacks + lines[1:]) + "\n")
    text = gspy("report", "--color", "never", f).stdout
    diag = " ".join(text.split("Diagnoses")[1].split())  # lines are wrapped
    check("All 1.0 MiB copied in upload_batch (train.c:40)." in diag and "read_back_logits" not in diag,
          f"diagnoses: {diag}")


@test
def report_json_has_no_sentinels_or_host_memory_for_device_copies(tmp):
    """A kernel seen only on the GPU (a graph's) has null host times in
    --json, not 1.8e19; a device-to-device copy is filed under 'device',
    not 'pageable'; gpuspy's own time longer than a short run says so
    instead of '142.7% of the traced time'."""
    ev = [dict(kind="gpu_kernel", api="cupti_kernel", start_ns=2000, end_ns=5000, result=0, stream=7, corr=0, name="graphk"),
          dict(kind="copy", api="cudaMemcpy", start_ns=6000, end_ns=9000, result=0, bytes=4096, dir="d2d"),
          dict(kind="sync", api="cudaDeviceSynchronize", start_ns=10000, end_ns=1_002_000, result=0)]
    f = write_trace(os.path.join(tmp, "t.jsonl"), ev, timing="cupti")
    o = json.loads(gspy("report", "--json", f).stdout)
    k = [x for x in o["kernels"] if x["name"] == "graphk"]
    check(k and k[0]["count"] == 0 and k[0]["host_min_ns"] is None and k[0]["host_max_ns"] is None, f"kernels: {k}")
    d2d = o["totals"]["copy"]["d2d"]
    check(set(d2d) == {"device"} and d2d["device"]["count"] == 1 and d2d["device"]["bytes"] == 4096, f"d2d: {d2d}")
    lines = open(f).read().splitlines()
    head = json.loads(lines[0])
    head.update(stacks_taken=2, stacks_ns=5_000_000)
    with open(f, "w") as out:
        out.write("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    text = gspy("report", "--color", "never", f).stdout
    check("gpuspy's own time: about 5.0 ms (more than the 1.0 ms traced: a thread's first stacks set the unwinder "
          "up), CUPTI's own cost aside\n      2 records at ~300 ns each (estimated), 2 call stacks at 2.5 ms each\n" in text and "% of the traced time" not in text, f"report:\n{text}")


def write_raw_trace(path, command, phase, kernel, launches=4):
    """A one-process JSON Lines trace whose command line, phase and kernel
    names are these bytes, raw (JSON's strings carry any byte but quotes,
    backslashes and C0 as they are)."""
    def s(b):
        return b'"' + b.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\x1b", b"\\u001b").replace(b"\n", b"\\n") + b'"'
    ev = [b'{"type":"event","kind":"phase_begin","api":"gpuspy_phase_push","tid":7,"start_ns":2000,"end_ns":2000,'
          b'"result":0,"device":0,"name":' + s(phase) + b'}']
    for i in range(launches):
        t = 2100 + 200 * i
        ev.append(b'{"type":"event","kind":"launch","api":"cuLaunchKernel","tid":7,"start_ns":%d,"end_ns":%d,'
                  b'"result":0,"device":0,"name":' % (t, t + 100) + s(kernel) + b'}')
    ev.append(b'{"type":"event","kind":"phase_end","api":"gpuspy_phase_pop","tid":7,"start_ns":9100,"end_ns":9100,'
              b'"result":0,"device":0,"name":' + s(phase) + b'}')
    header = (b'{"type":"process","format_version":2,"pid":7,"ppid":1,"host":"h","rank":-1,"local_rank":-1,'
              b'"command":' + s(command) + b',"events":%d,"dropped":0,"clean_exit":true,"state":"exited",'
              b'"truncated":false,"threads":1,"start_realtime_ns":1,"start_ns":1000,"device_mem":[1073741824],'
              b'"clock":"monotonic"}' % len(ev))
    with open(path, "wb") as f:
        f.write(b"\n".join([header] + ev) + b"\n")
    return path


C1_NAMES = dict(command=b"cmd\xc2\x9b[2J+\x9b[2J+\x1b[2J+caf\xe9+visible",
                phase=b"ph\xc2\x9bA\x9bB\x1bC\xc3", kernel=b"kn\xc2\x9bK\x9bL\x1bM")


def no_c1(out, what):
    """No ESC, CSI or C1 byte, UTF-8 or raw, and no invalid UTF-8 in out."""
    for bad in (b"\x1b", b"\x9b", b"\xc2\x9b"):
        check(bad not in out, f"{what}: {bad!r} reached the terminal: {out[:600]!r}")
    try:
        out.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise Fail(f"{what}: not UTF-8: {e}")


@test
def json_outputs_escape_c1_controls(tmp):
    """Names with C1 CSI as UTF-8, a DEL, a raw 0x9b, ESC and a character
    cut short: report --json, dump, export (chrome) and diff --json write
    valid JSON, UTF-8 through, with no raw ESC, DEL or C1 byte; C1 and DEL
    are written \\u009b and \\u007f and read back as those characters,
    invalid bytes as U+FFFD."""
    phase = b"ph\xc2\x9bA\x7fB\x9bC\x1bD\xc3"
    f = write_raw_trace(os.path.join(tmp, "c1.jsonl"), C1_NAMES["command"], phase, C1_NAMES["kernel"])
    g = os.path.join(tmp, "steps.jsonl")
    with open(f, "rb") as src:
        lines = src.read().split(b"\n")
    t = 10000
    body = []
    for _ in range(8):  # steps of one phase, for diff
        for kind, api in ((b"phase_begin", b"gpuspy_phase_push"), (b"phase_end", b"gpuspy_phase_pop")):
            body.append(b'{"type":"event","kind":"%s","api":"%s","tid":7,"start_ns":%d,"end_ns":%d,"result":0,'
                        b'"device":0,"name":"ph\xc2\x9bA\x7fB\x9bC\\u001bD\xc3"}' % (kind, api, t, t))
            t += 1000
    with open(g, "wb") as out:
        out.write(b"\n".join([lines[0].replace(b'"events":6', b'"events":16')] + body) + b"\n")
    gs = os.path.join(tmp, "c1.gspy")  # dump reads only the binary format
    subprocess.run([os.path.join(BIN, "mktrace"), gs, "40", "1", "4096", "65536", "4242", C1_NAMES["command"],
                    C1_NAMES["kernel"], phase, b"GPU-\xc2\x9b"], check=True, timeout=TIMEOUT)
    want_phase = "ph\u009bA\u007fB\ufffdC\x1bD\ufffd"
    for args in (["report", "--json", f], ["dump", gs], ["export", "--format", "chrome", "-o", "-", f],
                 ["diff", "--json", g, g]):
        p = subprocess.run([GPUSPY, *args], capture_output=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"{args[0]}: exit {p.returncode}: {p.stderr[-300:]!r}")
        for bad in (b"\x1b", b"\x7f", b"\x9b", b"\xc2\x9b"):
            check(bad not in p.stdout, f"{args[0]}: {bad!r} in its JSON: {p.stdout[:600]!r}")
        try:
            text = p.stdout.decode("utf-8", errors="strict")
        except UnicodeDecodeError as e:
            raise Fail(f"{args[0]}: not UTF-8: {e}")
        docs = [json.loads(line) for line in text.splitlines()] if args[0] == "dump" else [json.loads(text)]
        strings = set()

        def walk(x):
            if isinstance(x, str):
                strings.add(x)
            elif isinstance(x, dict):
                for k, v in x.items():
                    walk(k)
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)
        walk(docs)
        check("\\u009b" in text and "\\u007f" in text and want_phase in strings,
              f"{args[0]}: the phase's name not read back as {want_phase!r}: {text[:600]}")


@test
def c1_controls_never_reach_the_terminal(tmp):
    """Command line, phase and kernel names with C1 CSI as UTF-8
    (\\xc2\\x9b) and as a raw byte (\\x9b), ESC, a Latin-1 byte and a
    character cut short: the text report writes none of those bytes and
    only valid UTF-8, each as \\u009b or \\xNN text, the rest of each name
    as it is."""
    f = write_raw_trace(os.path.join(tmp, "c1.jsonl"), **C1_NAMES)
    for color in ("never", "always"):
        p = subprocess.run([GPUSPY, "report", "--color", color, f], capture_output=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"report: exit {p.returncode}: {p.stderr[-300:]!r}")
        out = p.stdout
        if color == "always":
            for ours in (b"\x1b[1m", b"\x1b[33m", b"\x1b[0m"):
                out = out.replace(ours, b"")
        no_c1(out, f"report --color {color}")
        for want in (b"cmd\\u009b[2J+\\x9b[2J+\\x1b[2J+caf\\xe9+visible", b"ph\\u009bA\\x9bB\\x1bC\\xc3",
                     b"kn\\u009bK\\x9bL\\x1bM"):
            check(want in out, f"report --color {color} lacks {want!r}:\n{out.decode(errors='replace')}")


@test
def phases_by_the_thousand_are_each_their_own(tmp):
    """5,000 phase names (an NVTX range a step, named by its number: the
    report found a phase by a scan of every name, 72 s for 100,000), each
    begun 1 to 3 times in a row, then "step 7" once more, in two files:
    --json has each name once, in first-seen order, with its count and
    wall time exact; the report of both, each name's counts summed."""
    lines = ['{"type":"process","format_version":3,"pid":1,"command":"x","state":"exited","gpu_timing":"none"}']
    t, want = 0, {}
    for i in list(range(5000)) + [7]:
        for _ in range(1 if i == 7 and i in want else i % 3 + 1):
            for kind in ("begin", "end"):
                lines.append(f'{{"type":"event","kind":"phase_{kind}","api":"gpuspy_phase_{"push" if kind == "begin" else "pop"}",'
                             f'"tid":1,"start_ns":{t},"end_ns":{t},"result":0,"name":"step {i}"}}')
                t += 5 if kind == "begin" else 1
            want[f"step {i}"] = want.get(f"step {i}", 0) + 1
    for name in ("a.jsonl", "b.jsonl"):
        with open(os.path.join(tmp, name), "w") as out:
            out.write("\n".join(lines) + "\n")
    one = json.loads(gspy("report", "--json", os.path.join(tmp, "a.jsonl")).stdout)["processes"][0]["phases"]
    check([(p["name"], p["count"], p["wall_ns"]) for p in one[1:]] == [(k, v, 5 * v) for k, v in want.items()],
          f"{len(one)} phases: {[(p['name'], p['count']) for p in one[1:4]]}")
    both = json.loads(gspy("report", "--json", os.path.join(tmp, "a.jsonl"), os.path.join(tmp, "b.jsonl")).stdout)
    merged = [(p["name"], p["count"]) for p in both["phases"][1:]]
    check(merged == [(k, 2 * v) for k, v in want.items()], f"merged: {len(merged)} {merged[:3]}")
