# SPDX-License-Identifier: MIT
"""Device telemetry (GPUSPY_NVML_MS): the sampler against the NVML double,
one sampler per device, the report's numbers and diagnoses."""
import fcntl
import json
import math
import os
import subprocess

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from test_report import strip_files

NVML = os.path.join(BIN, "nvml")


def traced(tmp, nvml, ms="10", steps="10", extra=None, path=True):
    """prog_train with a 20 ms wait a step (about 200 ms), the NVML double
    answering `nvml`; the samples the double gave, from its log."""
    log = os.path.join(tmp, "nvml.log")
    env = {"GPUSPY_NVML_MS": ms, "FAKENVML": nvml, "FAKENVML_LOG": log, "TMPDIR": tmp,
           "FAKECUDA_SYNC_NS": "20000000", "GPUSPY_CUPTI": "off"}
    if path:
        env["LD_LIBRARY_PATH"] = NVML + ":" + BIN
    env.update(extra or {})
    run("prog_train", [steps, "10"], tmp=tmp, env=env)
    given = open(log).read().splitlines() if os.path.exists(log) else []
    proc, ev = only_trace(tmp)
    return proc, [e for e in ev if e["kind"] == "nvml"], given


@test
def telemetry_samples_are_nvmls_values(tmp):
    """Every sample NVML gave is one nvml record with NVML's values, in
    order; what NVML lacks reads null; the header names this process as
    the device's sampler; the JSON Lines dump reads back to the same report."""
    proc, ev, given = traced(tmp, "util=95/40,mem_util=30,power_mw=350000,limit_mw=700000,sm=1500,sm_max=1980,"
                                  "reasons=0x4/0/0/0,used_mib=4096,other_mib=2048,missing=pcie")
    n = len(ev)
    check(n >= 5 and given == [f"device 0 sample {i}" for i in range(n)],
          f"{n} nvml records, NVML gave {len(given)}: {given[:3]}")
    check(proc["nvml_ms"] == 10 and proc["nvml"] == "on" and proc["nvml_sampler"] == [proc["pid"]] + [0] * 7,
          f"header: {proc['nvml_ms']} {proc['nvml']} {proc['nvml_sampler']}")
    for i, e in enumerate(ev):
        want = dict(device=0, uuid="GPU-fake-0", util_gpu=95 if i % 2 == 0 else 40, util_mem=30, used_mib=4096,
                    other_mib=2048, power_dw=3500, limit_w=700, sm_mhz=1500, sm_max_mhz=1980, mem_mhz=2619,
                    mem_max_mhz=2619, reasons=4 if i % 4 == 0 else 0, temp_c=40, tx_mbs=None, rx_mbs=None,
                    gen=5, gen_max=5, width=16, width_max=16)
        got = {k: e.get(k) for k in want}
        check(got == want, f"sample {i}: {got}\n    expected {want}")
        check(e["end_ns"] >= e["start_ns"] and (i == 0 or e["start_ns"] > ev[i - 1]["start_ns"]), f"sample {i} times")
    g = os.path.join(tmp, traces(tmp)[0])
    j = os.path.join(tmp, "t.jsonl")
    subprocess.run([GPUSPY, "dump", g, "-o", j], check=True, timeout=TIMEOUT)
    a, b = strip_files(report_json(g)), strip_files(report_json(j))
    check(a == b, "report --json differs between the .gspy and its JSON Lines dump")
    t = a["telemetry"]
    held = math.ceil(n / 4)
    check(len(t) == 1 and t[0]["samples"] == n and t[0]["uuid"] == "GPU-fake-0", f"telemetry: {t}")
    t = t[0]
    util = (95 * math.ceil(n / 2) + 40 * (n // 2)) / n
    check(abs(t["util_gpu_mean"] - util) < 1e-9 and t["util_mem_mean"] == 30 and t["power_w_mean"] == 350
          and t["power_limit_w"] == 700 and t["sm_mhz_mean"] == 1500 and t["sm_max_mhz"] == 1980
          and t["used_max_mib"] == 4096 and t["other_max_mib"] == 2048 and t["temp_max_c"] == 40,
          f"means: {t}")
    check(t["pattern"] == "throttled", f"pattern {t['pattern']}")
    check(t["reasons"] == {"sw_power_cap": held} and t["slowed_busy_samples"] == held and t["busy_samples"] == n
          and t["throttled_ns"] == held * 10_000_000, f"reasons: {t['reasons']}, {t['slowed_busy_samples']} slowed")
    ph = {p["name"]: p.get("nvml", {}).get("samples", 0) for p in a["phases"]}
    check(sum(ph.values()) == n, f"samples by phase {ph}, {n} in all")
    # Telemetry's observations are context: nothing to change for them,
    # so none is a diagnosis.
    tele = ("clocks_throttled", "power_below_limit", "other_process_memory", "pcie_link_below_max", "gpu_hot",
            "gpu_util_vs_busy")
    ids = sorted(d["id"] for d in a["context"] if d["id"] in tele)
    check(ids == ["clocks_throttled", "other_process_memory", "power_below_limit"], f"context {ids}")
    check(not [d for d in a["diagnoses"] if d["id"] in tele], f"diagnoses {a['diagnoses']}")
    out = os.path.join(tmp, "t.json")
    subprocess.run([GPUSPY, "export", "--format", "chrome", g, "-o", out], check=True, timeout=TIMEOUT)
    te = json.load(open(out))["traceEvents"]
    util = [e["args"]["gpu"] for e in te if e.get("ph") == "C" and e["name"] == "GPU 0 GPU-Util %"]
    power = [e["args"]["watts"] for e in te if e.get("ph") == "C" and e["name"] == "GPU 0 power W"]
    check(util == [95 if i % 2 == 0 else 40 for i in range(n)] and power == [350] * n
          and not [e for e in te if e.get("name") == "GPU 0 PCIe TX MB/s"], f"export counters: {util} {power}")
    text = report_text(g)
    check(f"GPU 0's clocks were held back in {100 * held / n:.0f}% of the busy samples" in text
          and "software power cap" in text and f"device 0 GPU-fake-0: {n} samples over " in text
          and "SM clock 1500 of 1980 MHz" in text, "report text:\n" + text)


@test
def telemetry_link_and_heat(tmp):
    """A link below its best while moving data and a hot GPU are said (as
    context, not diagnoses); an idle slow link and a cool GPU are not."""
    proc, ev, given = traced(tmp, "util=80,gen=4,width=8,tx_kbs=500000,rx_kbs=0,temp=90/80,power_mw=650000")
    n = len(ev)
    o = report_json(os.path.join(tmp, traces(tmp)[0]))
    t = o["telemetry"][0]
    check(t["pattern"] == "link_below_max", f"pattern {t['pattern']}")
    check(t["pcie"] == {"gen": 4, "gen_max": 5, "width": 8, "width_max": 16, "moving_samples": n,
                        "below_max_samples": n} and t["temp_max_c"] == 90, f"telemetry {t}")
    d = {x["id"]: x["text"] for x in o["context"]}
    check(not {"pcie_link_below_max", "gpu_hot"} & {x["id"] for x in o["diagnoses"]}, f"{o['diagnoses']}")
    hot = math.ceil(n / 2)
    check("PCIe link ran at gen4 x8 while moving data (100% of those samples); it can run gen5 x16"
          in d.get("pcie_link_below_max", "") and f"reached 90 C (85 C or more in {100 * hot / n:.0f}%"
          in d.get("gpu_hot", "") and "power_below_limit" not in d and "clocks_throttled" not in d, f"diagnoses {d}")
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    proc, ev, given = traced(tmp, "util=0,gen=2,width=16,tx_kbs=0,rx_kbs=0")
    o = report_json(os.path.join(tmp, traces(tmp)[0]))
    check(o["telemetry"][0]["pattern"] == "starved", f"pattern {o['telemetry'][0]['pattern']}")
    check(o["telemetry"][0]["pcie"]["below_max_samples"] == 0
          and not {"pcie_link_below_max", "gpu_hot"} & {x["id"] for x in o["diagnoses"] + o["context"]},
          f"an idle link's downshift diagnosed: {o['telemetry'][0]['pcie']}")


@test
def telemetry_patterns_healthy_and_memory_full(tmp):
    """nvidia-smi's patterns: busy at full clocks is healthy; memory at 95%
    of the device's (FAKECUDA_DEVICE_MEM_MB) is memory_full, before all else."""
    proc, ev, given = traced(tmp, "util=90,power_mw=600000")
    g = os.path.join(tmp, traces(tmp)[0])
    check(report_json(g)["telemetry"][0]["pattern"] == "healthy"
          and "pattern: healthy (GPU-Util 80% or more, clocks not held back)" in report_text(g), "not healthy")
    os.unlink(g)
    proc, ev, given = traced(tmp, "util=90,used_mib=7800,reasons=0x4", extra={"FAKECUDA_DEVICE_MEM_MB": "8192"})
    check(report_json(os.path.join(tmp, traces(tmp)[0]))["telemetry"][0]["pattern"] == "memory_full", "not memory_full")


@test
def telemetry_one_sampler_per_device(tmp):
    """A device whose lock another process holds is not sampled here: no
    NVML reading, the header and the report name that process."""
    lock = os.path.join(tmp, "gpuspy-nvml-0000_10_00_0.lock")
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write("4242\n")
        f.flush()
        proc, ev, given = traced(tmp, "util=95")
    check(not ev and proc["nvml_sampler"][0] == 4242 and proc["nvml"] == "on",
          f"{len(ev)} samples, sampler {proc['nvml_sampler']}")
    check(all(not l.startswith("device 0 sample") for l in given), f"NVML was read: {given[:2]}")
    check("device 0 is sampled by pid 4242 (one process per device samples)"
          in report_text(os.path.join(tmp, traces(tmp)[0])), "report does not name the sampler")
    # Released, the next process samples.
    os.unlink(os.path.join(tmp, traces(tmp)[0]))
    proc, ev, given = traced(tmp, "util=95")
    check(ev and proc["nvml_sampler"][0] == proc["pid"], f"after release: {len(ev)} samples, {proc['nvml_sampler']}")


@test
def telemetry_pauses_with_gpuspy_pause(tmp):
    """While gpuspy_pause() holds (prog_train paused: every step from the
    second, about 180 ms), NVML is not read: no sample starts later than
    one period after the last recorded call, and NVML gave only those."""
    log = os.path.join(tmp, "nvml.log")
    env = {"GPUSPY_NVML_MS": "10", "FAKENVML": "util=50", "FAKENVML_LOG": log, "TMPDIR": tmp,
           "FAKECUDA_SYNC_NS": "20000000", "GPUSPY_CUPTI": "off", "LD_LIBRARY_PATH": NVML + ":" + BIN}
    run("prog_train", ["10", "10", "paused"], tmp=tmp, env=env)
    proc, ev = only_trace(tmp)
    calls = [e for e in ev if e["kind"] != "nvml"]
    samples = [e for e in ev if e["kind"] == "nvml"]
    given = open(log).read().splitlines() if os.path.exists(log) else []
    last = max(e["end_ns"] for e in calls)
    late = [e["start_ns"] - last for e in samples if e["start_ns"] > last + 12_000_000]
    check(not late and len(given) == len(samples), f"samples {len(samples)}, NVML gave {len(given)}, late by {late}")


@test
def telemetry_off_and_without_nvml(tmp):
    """GPUSPY_NVML_MS=0 reads no NVML at all; without libnvidia-ml the
    header says unavailable; neither has samples or a telemetry section."""
    proc, ev, given = traced(tmp, "util=95", ms="0")
    check(not ev and not given and proc["nvml_ms"] == 0 and proc["nvml"] == "off", f"off: {proc['nvml']}, {given}")
    g = os.path.join(tmp, traces(tmp)[0])
    check("Telemetry" not in report_text(g) and report_json(g)["telemetry"] == [], "a telemetry section when off")
    os.unlink(g)
    proc, ev, given = traced(tmp, "util=95", path=False)
    check(not ev and proc["nvml"] == "unavailable" and proc["nvml_ms"] == 10, f"no NVML: {proc['nvml']}")


@test
def telemetry_lock_file_is_never_followed(tmp):
    """Another user plants, at the device's lock path in a shared TMPDIR, a
    symbolic link to a victim's file, a hard link to it, a FIFO, or a file
    of their own: no victim's byte changes, the program runs as untraced
    (exit 0, same output), nothing blocks, and the device is still sampled
    (through this user's own lock file, gpuspy-nvml-BUS-uUID.lock)."""
    lock = os.path.join(tmp, "gpuspy-nvml-0000_10_00_0.lock")
    victim = os.path.join(tmp, "victim")
    untraced = run("prog_train", ["10", "10"], tmp=tmp, preload=False,
                   env={"FAKECUDA_SYNC_NS": "20000000"}).stdout
    other = 1 if os.geteuid() != 1 else 2
    for how in ("symlink", "hardlink", "fifo", "other user"):
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        write(victim, b"precious\n" * 1000)
        if how == "symlink":
            os.symlink(victim, lock)
        elif how == "hardlink":
            os.link(victim, lock)
        elif how == "fifo":
            os.mkfifo(lock)
        else:
            write(lock, b"precious\n" * 1000)
            if os.geteuid() == 0:
                os.chown(lock, other, other)
            else:
                os.chmod(lock, 0o666)  # not ours to write, though the mode allows it
        log = os.path.join(tmp, "nvml.log")
        env = {"GPUSPY_NVML_MS": "10", "FAKENVML": "util=95", "FAKENVML_LOG": log, "TMPDIR": tmp,
               "FAKECUDA_SYNC_NS": "20000000", "GPUSPY_CUPTI": "off", "LD_LIBRARY_PATH": NVML + ":" + BIN}
        p = run("prog_train", ["10", "10"], tmp=tmp, env=env)
        check(p.stdout == untraced, f"{how}: output changed: {p.stdout!r}")
        check(open(victim, "rb").read() == b"precious\n" * 1000, f"{how}: the victim's file was changed")
        if how == "other user":
            check(open(lock, "rb").read() == b"precious\n" * 1000, f"{how}: the other user's file was changed")
        proc, ev = only_trace(tmp)
        n = sum(e["kind"] == "nvml" for e in ev)
        check(n >= 5 and proc["nvml_sampler"][0] == proc["pid"], f"{how}: {n} samples, sampler {proc['nvml_sampler']}")


@test
def telemetry_link_sets_the_pinned_rate_of_a_replay(tmp):
    """prog_train copies 2 MiB a step from pageable memory and makes no
    pinned copy: the replay of pinning them takes the bandwidth of the
    PCIe link NVML saw (the double's gen5 x16, 63 GB/s raw) at 87% of its
    rate, 54.8 GB/s, as the H200's pinned 64 MiB copies ran on such a link
    (docs/design.md#replay); it was 80% (50.4 GB/s)."""
    proc, ev, given = traced(tmp, "util=50", steps="30", extra={"GPUSPY_CUPTI": "on", "GPUSPY_CLOCK": "mono",
                                                                 "FAKECUDA_SYNC_NS": "0"})
    o = json.loads(subprocess.run([GPUSPY, "report", "--json", tmp], capture_output=True, text=True,
                                  timeout=TIMEOUT).stdout)
    pin = [d for d in o["diagnoses"] if d["id"] == "pageable_copies"]
    check(len(pin) == 1 and pin[0]["saving"]["how"].startswith(
        "the copies replayed as asynchronous copies from pinned memory at 54.8 GB/s (the PCIe link NVML saw, "
        "at 87% of its rate)") and o["processes"][0]["step"]["pinned_bytes_per_s"] == 3.94e9 * 16 * 0.87,
          f"{pin} {o['processes'][0]['step'].get('pinned_bytes_per_s')}")


def throttled_loop(path, kernel_ns, held=lambda i: 0x40 if i >= 0 else 0, busy=lambda i: i >= 0, pre=30, post=0,
                   device=0, steps=40, step=10_000_000):
    """A loop of `steps` 10 ms steps on device 0: a kernel of kernel_ns
    (CUPTI) and a synchronize to its end, then the host's work. NVML
    samples `device` every 10 ms, from `pre` before the loop to `post`
    after it (sample i: i < 0 before, i >= steps after): GPU-Util 95 where
    busy(i), else 0; held back for the reasons held(i) (NVML's bits: 0x40
    hardware thermal slowdown, 0x4 the software power cap) at 1500 of
    1980 MHz, else at 1980."""
    t0 = 10 ** 12
    lines = [{"type": "process", "format_version": 3, "pid": 100, "ppid": 1, "host": "h", "rank": -1,
              "local_rank": -1, "command": "loop", "events": 0, "dropped": 0, "clean_exit": True,
              "state": "exited", "truncated": False, "threads": 1, "start_ns": t0 - (pre + 1) * step,
              "nvml_ms": 10, "nvml": "on", "gpu_timing": "cupti", "device_mem": [1 << 34] * 2,
              "clock": "monotonic"}]
    ev = []
    for k in range(steps):
        t = t0 + k * step
        ev.append(dict(kind="launch", api="cuLaunchKernel", start_ns=t, end_ns=t + 10_000, name="gemm", corr=k + 1))
        ev.append(dict(kind="gpu_kernel", api="cupti_kernel", start_ns=t + 20_000, end_ns=t + 20_000 + kernel_ns,
                       name="gemm", corr=k + 1))
        ev.append(dict(kind="sync", api="cuStreamSynchronize", start_ns=t + 15_000, end_ns=t + 30_000 + kernel_ns))
    ev = [{"device": 0, **e} for e in ev]
    for i in range(-pre, steps + post):
        t, why = t0 + i * step + 5_000_000, held(i)
        ev.append(dict(kind="nvml", api="nvml_sample", tid=101, start_ns=t, end_ns=t + 8000, device=device,
                       uuid=f"GPU-fake-{device}", util_gpu=95 if busy(i) else 0, util_mem=10, used_mib=1024,
                       other_mib=0, power_dw=6000, limit_w=700, sm_mhz=1500 if why else 1980, sm_max_mhz=1980,
                       mem_mhz=2619, mem_max_mhz=2619, reasons=why, temp_c=60, tx_mbs=0, rx_mbs=0, gen=5,
                       gen_max=5, width=16, width_max=16))
    ev = [{"type": "event", "tid": 100, "result": 0, "stream": 7, **e} for e in ev]
    ev.sort(key=lambda e: e["start_ns"])
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(x) for x in lines + ev) + "\n")


@test
def clocks_held_back_in_a_gpu_bound_loop_are_a_diagnosis(tmp):
    """Clocks held back are context, no change to make, but where the
    loop's step is the GPU's work and heat held them back in it: then a
    diagnosis, bounded by the GPU's work at the max clock, 9 ms a step
    at 1500 of 1980 MHz: 9 ms x 480 / 1980 = 2.18 ms a step over the 39
    steady steps. Held back in a host-bound loop (its kernels 2 ms of a
    10 ms step), only before a GPU-bound loop, or in it by the software
    power cap alone (the GPU at its power limit, as designed): context,
    its lines with no change to make (it had said "-> Check the power
    limit" under "nothing to change for it")."""
    path = os.path.join(tmp, "gpu.jsonl")
    throttled_loop(path, 9_000_000)
    o = report_json(path)
    d = o["diagnoses"][0]
    check(d["id"] == "clocks_throttled" and d["saving"]["steps"] == 39 and d["saving"]["bound"] == "upper" and
          d["saving"]["per_step_ns"] == 9_000_000 * 480 // 1980 and d["text"].startswith(
              "GPU 0's clocks were held back in 100% of the loop's busy samples (hardware thermal slowdown): the SM "
              "clock averaged 1500 of 1980 MHz there, and the GPU's work holds 90% of the step.\n  Raise the power "
              "limit") and "clocks_throttled" not in [x["id"] for x in o["context"]], f"{o['diagnoses']} {o['context']}")
    check("    -> Raise the power limit or improve the cooling" in report_text(path), "no change line")
    for name, kernel, held, busy in (("host", 2_000_000, None, None),
                                     ("before", 9_000_000, lambda i: 0x40 if i < 0 else 0, lambda i: True),
                                     ("cap", 9_000_000, lambda i: 0x4 if i >= 0 else 0, None)):
        path = os.path.join(tmp, name + ".jsonl")
        throttled_loop(path, kernel, **{k: v for k, v in (("held", held), ("busy", busy)) if v})
        o = report_json(path)
        ctx = [x["text"] for x in o["context"] if x["id"] == "clocks_throttled"]
        check(len(ctx) == 1 and "clocks_throttled" not in [x["id"] for x in o["diagnoses"]] and
              "\n" not in ctx[0], f"{name}: {o['diagnoses']} {o['context']}")
        text = report_text(path)
        context = text[text.index("\nContext ("):]
        check("->" not in context and "Check the power limit" not in text and
              (name == "cap" or "\n    GPU-Util counts any kernel resident" in context), f"{name}: {context}")


@test
def clocks_held_back_are_the_loops_own(tmp):
    """What a loop's clocks lost is its own samples': (a) 4 of the 39
    in its steps found held back by heat, the rest by the power cap
    alone, bound the saving by those 4: 9 ms x 4 x 480 / 1980 / 39 = 224
    us a step (the mean clock of all had said 2.18 ms); (b) samples after the loop,
    an evaluation held back by heat, are not the loop's (no diagnosis);
    (c) another GPU held back, busy with another process's work, is not
    the loop's; (d) a loop held back in all its samples after 400 busy
    ones at full clocks (9% of the run's) is a diagnosis, though the
    run's share leaves no context."""
    def ids(o, key):
        return [x["id"] for x in o[key]]
    path = os.path.join(tmp, "mixed.jsonl")
    throttled_loop(path, 9_000_000, held=lambda i: (0x40 if i % 10 == 0 else 0x4) if i >= 0 else 0)
    d = [x for x in report_json(path)["diagnoses"] if x["id"] == "clocks_throttled"]
    d = d[0] if len(d) == 1 else {}
    check(d and d["saving"]["per_step_ns"] == 9_000_000 * 4 * 480 // 1980 // 39 and
          "held back in 10% of the loop's busy samples (hardware thermal slowdown)" in d["text"], f"{d}")
    for name, kw in (("after", dict(held=lambda i: 0x40 if i >= 40 else 0, busy=lambda i: i >= 0, post=100)),
                     ("other", dict(device=1, busy=lambda i: True))):
        path = os.path.join(tmp, name + ".jsonl")
        throttled_loop(path, 9_000_000, **kw)
        o = report_json(path)
        check("clocks_throttled" not in ids(o, "diagnoses") and "clocks_throttled" in ids(o, "context"),
              f"{name}: {o['diagnoses']} {o['context']}")
    path = os.path.join(tmp, "late.jsonl")
    throttled_loop(path, 9_000_000, pre=400, busy=lambda i: True)
    o = report_json(path)
    d = [x for x in o["diagnoses"] if x["id"] == "clocks_throttled"]
    check(len(d) == 1 and d[0]["saving"]["per_step_ns"] == 9_000_000 * 480 // 1980 and
          "clocks_throttled" not in ids(o, "context"), f"{o['diagnoses']} {o['context']}")
