# SPDX-License-Identifier: MIT
"""Real traces from the H200 (tests/fixtures/h200/, tests/gpu/fixtures.sh): the report's facts on them.

Each fixture is the traces of one real program, run through the wheel's
`gpuspy run`; the programs are in tests/gpu/zoo/. The assertions are what
those programs did: oom.py holds 17 blocks of 8 GiB and asks for an 18th;
leak.py keeps every step's loss with its graph for 24 steps."""
import json
import os
import re
import subprocess
import tarfile

from harness import GPUSPY, ROOT, TIMEOUT, check, test

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "h200")


def fixture_report(tmp, name, *args):
    with tarfile.open(os.path.join(FIXTURES, name + ".tar.gz")) as t:
        t.extractall(tmp)
    p = subprocess.run([GPUSPY, "report", "--color", "never", *args, os.path.join(tmp, name)],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"report of {name} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def diagnoses(text):
    """The diagnoses, each as one line of words (the report wraps them)."""
    part = text.split("\nDiagnoses\n", 1)[1] if "\nDiagnoses\n" in text else ""
    part = part.split("\nContext (", 1)[0]  # telemetry's observations: not diagnoses
    items = [" ".join(d.split()) for d in ("\n" + part).split("\n  * ") if d.strip()]
    return items


@test
def fixture_oom_is_a_fact_first(tmp):
    """oom.py: the first diagnosis is the out-of-memory failure, with its
    size, what was held (17 blocks of 8 GiB) and the device's total; the
    caching allocator's retry failed too; the line that asked and held is
    oom.py's 8 (`torch.empty`, whose binding released the GIL); no 'close
    to out-of-memory' and no churn from the teardown."""
    d = diagnoses(fixture_report(tmp, "oom"))
    check(d and d[0].startswith("Out of device memory at ") and
          "cudaMalloc asked for 8.0 GiB while 136 GiB was held of the device's 140 GiB "
          "(2 allocations failed for lack of memory)" in d[0], f"first diagnosis: {d[:1]}")
    check("retried: it failed again" in d[0] and re.search(
        r"Asked at <module> \(\S*/oom\.py:8\)\. Held then: 136 GiB in 17 blocks at <module> \(\S*/oom\.py:8\)\.", d[0]),
        d[0])
    check(not any("close to out-of-memory" in x or "device allocations" in x for x in d), f"diagnoses: {d}")


@test
def fixture_leak_is_growth_not_churn(tmp):
    """leak.py: memory grows by the same amount every step and is never
    freed: a leak, with its rate per step (10 GiB over 22 steps after the
    first two) and the steps until the device is full; not churn. The two
    sites that grew most are PyTorch's, on the autograd thread with no
    Python frame: they say they allocated all in 'backward'."""
    d = diagnoses(fixture_report(tmp, "leak"))
    leak = [x for x in d if x.startswith("Device memory grows every step")]
    check(len(leak) == 1, f"diagnoses: {d}")
    check("394 MiB more per step over 22 steps, 10 GiB held at the end; at that rate the device's 140 GiB "
          "is full in 336 more steps: a leak. Grew the most: 5.5 GiB in PyTorch (" in leak[0], leak[0])
    check(re.search(r"Grew the most: 5\.5 GiB in PyTorch \(libc10_cuda\.so\+0x\w+\), all in 'backward'; 2\.8 GiB "
                    r"in PyTorch \(libc10_cuda\.so\+0x\w+\), all in 'backward'; 128 MiB at <module> \(\S*/leak\.py:15\)",
                    leak[0]), leak[0])
    check(not any("allocations" in x and "frees after warm-up" in x for x in d), f"churn reported: {d}")


@test
def fixture_jax_phases_are_not_xlas(tmp):
    """jax_step.py (20 steps of a jitted MLP step): XLA's 5,877 NVTX ranges
    (compiler passes, autotuning) are the library's, not phases; its 7
    compilations are the phase "XLA compile" and each run of a jitted
    function a phase under its name: jit_step 20 times with 160 of the 915
    kernels (the modules XLA ran while compiling stay the compiler's); the
    28 host functions launched outside them are no kernels. The
    compilation, 84% of the run, is a diagnosis with the step's runs. The
    report was 4,408 lines."""
    text = fixture_report(tmp, "jax_step")
    rows = re.findall(r"^  (\S.*?) +(\d+) +[\d.]+ [mun]?s +(\d+) ", text.split("Copies and memsets")[0], re.M)
    check(rows == [("(no phase)", "1", "0"), ("XLA compile", "7", "750"), ("jit_stage", "1", "0"),
                   ("jit__threefry_se", "1", "1"), ("jit__normal", "4", "4"), ("jit_step", "20", "160")],
          f"phase rows: {rows}")
    check("Libraries' own ranges, inside the phases above (which keep their time): 5844 ranges" in text and
          re.search(r"^    XlaCompileBackend +73 ", text, re.M), text[:3000])
    d = diagnoses(text)
    check(any(x.startswith("XLA compiled 7 times for 2.02 s, 84% of the run; the step, jit_step, then ran 20 "
                           "times in the 4.0 ms from its first run to its last, 2.2 ms of it inside its ranges.") for x in d) and not any("'XLA compile'" in x for x in d), f"{d}")
    check(len(text.splitlines()) < 250, f"{len(text.splitlines())} lines")


@test
def fixture_sites_are_the_users_lines(tmp):
    """resnet_loader.py and leak.py under PyTorch 2.11 / CPython 3.12:
    PyTorch's bindings release the GIL, yet the sites name the script's
    lines: the forward pass's allocations at resnet_loader.py:17, the model's
    at :11; leak.py's pageable weight upload at leak.py:10 (`.cuda()`), a
    one-time cost before the steady state, not a diagnosis of the loop.
    CuPy's allocations are the script's lines too (cupy_kernels.py:11-13,
    :17), not the compiled module they go through
    (runtime.cpython-312-x86_64-linux-gnu.so+0x7de6d)."""
    text = fixture_report(tmp, "resnet_loader")
    sites = text.split("Allocation sites by bytes\n", 1)[1]
    first = re.findall(r"^      at (.*)$", sites, re.M)[:2]
    check(len(first) == 2 and first[0].endswith("/resnet_loader.py:17)") and first[1].endswith("/resnet_loader.py:11)"),
          f"first sites: {first}")
    # Read again under the replay: ResNet-18 at a small batch launches 439
    # kernels a step one by one, the GPU working 11% of the 15.6 ms step;
    # a graph of the step leaves out PyTorch's host code between its
    # launches (docs/design.md#replay), not only the short gaps.
    d = diagnoses(text)
    check(len(d) == 1 and d[0].startswith("Each step launches 439 kernels one by one and the GPU works 1.8 ms of "
                                          "its 15.6 ms (11%)") and "Saves about 12.0 ms a step" in d[0], f"{d}")
    leak = fixture_report(tmp, "leak")
    check(re.search(r"^  one-time costs before the steady state: 6 host-to-device copies, 512 MiB, 63\.8 ms\n"
                    r"    the largest at <module> \(\S*/leak\.py:10\)$", leak, re.M), leak.split("  Step")[1][:600])
    check(not any(x.startswith("6 host-to-device copies") for x in diagnoses(leak)), "the upload diagnosed")
    cupy = fixture_report(tmp, "cupy_kernels").split("Allocation sites by bytes\n", 1)[1].split("  Allocation sites by count")[0]
    first = re.findall(r"^      (at|from) (.*)$", cupy, re.M)
    check([f[1].rsplit("/", 1)[-1] for f in first] == ["cupy_kernels.py:11)", "cupy_kernels.py:12)",
                                                       "cupy_kernels.py:13)", "cupy_kernels.py:17)"],
          f"CuPy's allocation sites: {first}")


@test
def fixture_advice_in_each_frameworks_terms(tmp):
    """Each process's framework comes from its trace (PyTorch's phases and
    allocator frames, XLA's ranges, CuPy's kernels) and its advice is in
    those terms: the JAX step is told about lax.scan and jax.device_get,
    never about DataLoader, .item() or torch (and not to pin the copies
    XLA's compiler made). CuPy's 4-byte copies back (.get() of a sum)
    are waits, not a pinning problem, and the replay finds they cost
    nothing here (the GPU is done by then): no pinning advice, and nothing
    in PyTorch's terms."""
    want = {"resnet_loader": "PyTorch", "jax_step": "JAX", "cupy_kernels": "CuPy", "graph_nodes": None}
    for name, fw in want.items():
        text = fixture_report(tmp, name)
        head = re.search(r"^   host \S+, exited cleanly(, (\w+))?, ", text, re.M)
        check(head and head.group(2) == fw, f"{name}: header {head and head.group(0)!r}, expected {fw}")
        d = " ".join(diagnoses(text))
        if name == "jax_step":  # its compilations are one-time costs beside the step
            check("  one-time costs: compilation 2.02 s (7 times), left out of every figure a step\n" in text,
                  text.split("  Step")[1][:500])
            check("lax.scan" in d and "jax.device_get" in d and "pageable" not in d and
                  not re.search(r"DataLoader|\.item\(\)|torch|PYTORCH", d), d)
        if name == "cupy_kernels":
            check("pinned" not in d and "torch" not in d, d)


@test
def fixture_transformers_upload_is_not_a_steps_cost(tmp):
    """transformers_adamw.py (GPT-2 from a config, 10 AdamW steps): PyTorch's
    phases without annotation (forward and backward 10 times, optimizer 20:
    zero_grad and step); its 28 pageable copies are the model's upload at
    transformers_adamw.py:9, made before the loop: a one-time cost before
    the steady state, no diagnosis of the loop. Each steady step (9, from
    26.6 ms on) launches 167 kernels one by one in 7.5 ms, of which the
    GPU works 630 us: launch-bound, and the replay of the last 8 steps as
    one graph launch each saves about 6.1 ms a step (the code between
    launches that is a framework's dispatch goes, the longer gaps stay)."""
    text = fixture_report(tmp, "transformers_adamw")
    rows = re.findall(r"^  (\S.*?) +(\d+) +[\d.]+ [mun]?s +(\d+) ", text.split("Copies and memsets")[0], re.M)
    check(rows == [("(no phase)", "1", "10"), ("forward", "10", "570"), ("optimizer", "20", "136"),
                   ("backward", "10", "1010")], f"phase rows {rows}")
    check(", PyTorch, " in text, text[:600])
    check(re.search(r"^  one-time costs before the steady state: 28 host-to-device copies, 2\.1 MiB, 6\.2 ms\n"
                    r"    the largest at <module> \(\S*/transformers_adamw\.py:9\)$", text, re.M),
          text.split("  Step")[1][:600])
    d = diagnoses(text)
    check(len(d) == 1 and d[0].startswith("Each step launches 167 kernels one by one and the GPU works 629.6 us "
                                           "of its 7.5 ms (8%)") and "torch.compile" in d[0] and
          "Saves about 6.1 ms a step (54.8 ms over 9 steps): each step's launches replayed as one graph launch"
          in d[0], f"diagnoses {d}")


@test
def fixture_graph_runs_what_it_captured(tmp):
    """graph_nodes.cu captures a pinned upload, a memset, a kernel, a copy
    back and memory nodes into one graph and launches it 10 times: the 10
    launches run 10 kernels, 20 copies of 4 MiB each way and 10 memsets,
    every GPU record joins its launch, the captured calls are counted
    apart (they did not run), and nothing is diagnosed."""
    import json
    fixture_report(tmp, "graph_nodes")
    p = subprocess.run([GPUSPY, "report", "--json", os.path.join(tmp, "graph_nodes")], capture_output=True,
                       text=True, timeout=TIMEOUT)
    o = json.loads(p.stdout)
    t = o["totals"]
    got = (t["launch"]["count"], t["launch"]["gpu_count"], o["gpu"]["graph_kernels"],
           t["copy"]["h2d"]["pinned"]["gpu_count"], t["copy"]["h2d"]["pinned"]["gpu_bytes"],
           t["copy"]["d2h"]["pinned"]["gpu_count"], t["copy"]["d2h"]["pinned"]["gpu_bytes"],
           t["memset"]["gpu_count"], t["memset"]["gpu_bytes"], o["gpu"]["matched"], o["gpu"]["records"],
           o["captured"], o["diagnoses"])
    want = (10, 10, 10, 10, 40 << 20, 10, 40 << 20, 10, 40 << 20, 40, 40,
            {"alloc": 1, "free": 1, "copy": 2, "memset": 1, "launch": 1}, [])
    check(got == want, f"graph fixture {got}\n want {want}")
    check([(k["name"], k["gpu_count"]) for k in o["kernels"] if k["gpu_count"]] ==
          [("scale(float*, float const*, int)", 10)], f"kernels {o['kernels']}")


@test
def fixture_ddp_gloo_names_the_slow_rank(tmp):
    """ddp_gloo.py, 4 ranks over gloo on the one H200 (tests/gpu/ranks.sh),
    rank 1 sleeping 30 ms before each forward pass: every rank's
    collectives are gloo's host-side all-reduces; rank 1 is the straggler
    in 38 of the 39 steps compared, 29-33 ms a step after the others'
    mean, and the three others waited about three times that; the clocks,
    one host's, come out within 0.1 ms of each other."""
    import json
    with tarfile.open(os.path.join(FIXTURES, "ddp_gloo.tar.gz")) as t:
        t.extractall(tmp)
    p = subprocess.run([GPUSPY, "report", "--json", os.path.join(tmp, "ddp_gloo")], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0, p.stderr)
    o = json.loads(p.stdout)["ranks"]
    s = o["straggler"]
    check([x["collectives"] for x in o["ranks"]] == ["host"] * 4 and o["steps"] == 39, f"{o}")
    check(s["rank"] == 1 and s["steps"] == 38, f"straggler {s}")
    lead, waited = s["lead_ns"] / s["steps"] / 1e6, s["others_waited_ns"] / s["steps"] / 1e6
    check(29 <= lead <= 33 and 2.9 * lead <= waited <= 3.1 * lead, f"lead {lead:.2f} ms, others waited {waited:.2f}")
    offs = [abs(x["clock_offset_ns"]) for x in o["ranks"]]
    check(max(offs) < 100000, f"clock offsets {offs}")


@test
def fixture_jax_window_says_the_gpu_waits_for_the_host(tmp):
    """A 3 s window recorded on demand from a running JAX loop
    (tests/gpu/ondemand.sh): 27,745 runs of jit_jstep, each one graph
    launch of ten kernels. The kernels are named, 271,842 of the 271,852
    GPU records joined to their calls; the steps ran 271,843 kernels, the
    host functions XLA launches between them none. Each step launches
    once, so it is not called launch-bound (it was, with advice to capture
    the step in a CUDA graph, saving 0 ns); in the loop the GPU sat idle
    1.19 s of 3.00 s waiting for the host, which the report says, in JAX's
    terms, with the saving of several steps a dispatch replayed over the
    later half of its steps, under 2 s (13592 of 108 us), whose GPU records CUPTI handed
    over before the window closed (the last ones have none: they are left
    out of the replay), each graph launch at what it takes without CUPTI
    and the gap before it less CUPTI's work there. (Replayed over the
    last 250 ms of the run's last 262,144 events, 2293 steps, it said
    23.6 us a step over 19123 steps; over the last 40 steps 25.9 us; 36.4 us when CUPTI's cost was
    taken as 4 us a record, at most half the call; 30.0 us when each
    kernel waited for the last to end, where they ran up to a few hundred
    ns beside it; 31.6 us with the launch alone at 2.2 us and 0.2 us a
    node; 23.3 us with no floor under the 12% its ten-kernel launches
    keep.)"""
    text = fixture_report(tmp, "jax_window")
    o = json.loads(subprocess.run([GPUSPY, "report", "--json", os.path.join(tmp, "jax_window")],
                                  capture_output=True, text=True, timeout=TIMEOUT).stdout)
    check("recorded in 1 window, started paused (GPUSPY_START=paused)" in text, text[:1200])
    ph = {p["name"]: p for p in o["phases"]}
    check(ph["jit_jstep"]["count"] == 27745 and ph["jit_jstep"]["launch"]["gpu_count"] == 271843 and
          ph["(no phase)"]["launch"]["gpu_count"] == 9, {k: (p["count"], p["launch"]) for k, p in ph.items()})
    rows = re.findall(r"^  (\S.*?) +(\d+) +[\d.]+ [mun]?s +(\S+) ", text.split("Top kernels")[0], re.M)
    check(rows[:2] == [("(no phase)", "1", "9"), ("jit_jstep", "27745", "272k")], f"phase rows {rows}")
    check(o["gpu"]["records"] == 271852 and o["gpu"]["matched"] == 271842, o["gpu"])
    check(o["kernels"][0]["mangled"].startswith("_ZN7cutlass7Kernel2I") and o["kernels"][0]["gpu_count"] == 27185,
          o["kernels"][0])
    d = diagnoses(text)
    check(not any("launch-bound" in x for x in d), f"called launch-bound: {d}")
    host = [x for x in d if x.startswith("In the loop")]
    check(len(host) == 1 and host[0].startswith(
        "In the loop (3.00 s, from the first 'jit_jstep' on), the GPU sat idle 1.19 s (40%) waiting for the "
        "host") and
        "several steps in one jitted call (lax.scan or lax.fori_loop over the steps)" in host[0] and
        "Saves about 28.2 us a step (783.3 ms over 27744 steps): the step's host work replayed once every "
        "10 steps" in host[0], f"host-bound: {d}")
    step = o["processes"][0]["step"]
    check(step["gpu_ns"] > 0 and step["replayed_steps"] == 13592, f"step {step}")
    # The window began inside a step: the 57 us before the first whole one
    # is that step's end, not warm-up (a window recorded on demand says so).
    check(step["warmup_ns"] == 57015 and "  (the 57.0 us before, warm-up or the step the window began in, is left "
          "out of every figure a step)\n" in text, f"{step['warmup_ns']}: {text[text.find('  Step'):][:400]}")


@test
def readme_sample_report_is_todays(tmp):
    """The README's sample report (`gpuspy report item-slow`) is what this
    version prints for that fixture: each line it shows, in its order, is
    a line of today's report; its saving is what the what-if table says."""
    with tarfile.open(os.path.join(FIXTURES, "whatif", "item-slow.tar.gz")) as t:
        t.extractall(tmp)
    p = subprocess.run([GPUSPY, "report", "--color", "never", "item-slow"], cwd=tmp, capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(p.returncode == 0, p.stderr)
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = re.search(r"\$ gpuspy report item-slow\n(.*?)```", readme, re.S).group(1)
    want = [l for l in block.splitlines() if l.strip() and l.strip() != "..."]
    got = p.stdout.splitlines()
    at = 0
    for line in want:
        check(line in got[at:], f"README's sample line not in today's report (in its order): {line!r}")
        at = got.index(line, at) + 1
    check(len(want) >= 20 and "Saves about 4.2 ms a step" in block, f"{len(want)} lines")


@test
def fixture_no_bound_a_step_is_more_than_a_step_gives_back(tmp):
    """A bound from the run's totals over its steps (warm-up included)
    could pass the step: the what-if suite's second run printed, for the
    fixed DataLoader (6 workers; a 4.6 ms step, 2.3 ms of it GPU work),
    "host-bound, saves up to 4.7 ms a step", where what held it was the
    workers (loader_behind, said after it). Now a host-bound finding
    waits on a named host-side cause, the workers' too, and a bound a
    step is cut to the step's time beyond its GPU work, saying so, or
    goes when that is under 2% of the step (test_advice's
    a_bound_cut_to_the_step_says_so has the words)."""
    def report(name):
        with tarfile.open(os.path.join(FIXTURES, name + ".tar.gz")) as t:
            t.extractall(tmp)
        return subprocess.run([GPUSPY, "report", "--color", "never", os.path.join(tmp, os.path.basename(name))],
                              capture_output=True, text=True, timeout=TIMEOUT).stdout
    d = diagnoses(report("whatif/run2/dataloader-fixed"))
    check(len(d) == 1 and d[0].startswith("Phase 'data' takes 24% of the time in phases (115.1 ms over 68 "
                                          "occurrences) waiting for the 6 worker processes of the DataLoader, "
                                          "and the GPU") and
          "Saves up to 1.7 ms a step" in d[0], f"{d}")
    # The fixed .item() loop's launch-bound bound (run1), cut to the
    # 353.2 us its 31.9 ms step spends beyond its 31.6 ms of GPU work, is
    # under 2% of the step: no change worth making, no diagnosis.
    d = diagnoses(report("whatif/item-fixed"))
    check(d == ["none: nothing in this trace matches a known problem"], f"item-fixed: {d}")


@test
def fixture_churn_is_said_at_the_empty_cache_line(tmp):
    """The what-if suite's empty_cache() loop (run5, an H100): its pool's
    saving, 2.3% of the 48.3 ms step, passes the floor of a change worth
    making (a replayed saving's 1%; run8's pool, replayed at 1.7%, too), and
    the diagnosis names the line whose frees churn,
    `torch.cuda.empty_cache()` at empty_cache.py:23, which made 320 of
    the 356 device frees after warm-up (the step's allocations come from
    line 18, the model's forward). The fixed loop, without it, is told
    nothing."""
    with tarfile.open(os.path.join(FIXTURES, "whatif", "run5", "empty_cache-slow.tar.gz")) as t:
        t.extractall(tmp)
    d = diagnoses(subprocess.run([GPUSPY, "report", "--color", "never", os.path.join(tmp, "empty_cache-slow")],
                                 capture_output=True, text=True, timeout=TIMEOUT).stdout)
    check(len(d) == 1 and d[0].startswith("352 device allocations (25 GiB) and 356 frees after warm-up") and
          "synchronizes the device. The most of those frees from one place, 320, were at step "
          "(/work/main/tests/gpu/whatif/empty_cache.py:23). -> " in d[0] and
          "Saves about 1.1 ms a step (48.7 ms over 44 steps)" in d[0], f"{d}")
    with tarfile.open(os.path.join(FIXTURES, "whatif", "run5", "empty_cache-fixed.tar.gz")) as t:
        t.extractall(tmp)
    d = diagnoses(subprocess.run([GPUSPY, "report", "--color", "never", os.path.join(tmp, "empty_cache-fixed")],
                                 capture_output=True, text=True, timeout=TIMEOUT).stdout)
    check(not any("allocations" in x for x in d), f"fixed: {d}")
    # run8 (another H100): the pool gave back 0.753 ms of a 47.5 ms step,
    # 1.6%; replayed at 792.8 us of 47.7 ms, over the 1% a replayed saving
    # needs (under the 2% a bound from the totals needs), it is said.
    with tarfile.open(os.path.join(FIXTURES, "whatif", "run8", "empty_cache-slow.tar.gz")) as t:
        t.extractall(os.path.join(tmp, "run8"))
    d = diagnoses(subprocess.run([GPUSPY, "report", "--color", "never", os.path.join(tmp, "run8", "empty_cache-slow")],
                                 capture_output=True, text=True, timeout=TIMEOUT).stdout)
    check(len(d) == 1 and d[0].startswith("352 device allocations (25 GiB) and 356 frees after warm-up") and
          "(/work/main/tests/gpu/whatif/empty_cache.py:23). -> " in d[0] and
          "Saves about 792.8 us a step (34.9 ms over 44 steps)" in d[0], f"run8: {d}")


@test
def fixture_train_eval_steps_are_the_optimizers(tmp):
    """train_eval.py (the zoo's, on an H100, CUPTI off): 4 epochs of 40
    optimizer steps, each epoch followed by 10 evaluation batches. The
    step is PyTorch's optimizer step, all 160 of them, not the
    evaluation's batch nor the epoch; the 3 steps that hold an evaluation
    before the last are apart; the model's upload (6 copies, 5.0 MiB, at
    line 13) is a one-time cost. The one diagnosis is the starved
    DataLoader made at line 15 (no workers); the data phase's 400 waits
    after its pageable copies, 8 us of a 2.3 ms step, are under the floor
    of a change worth making and are not said."""
    text = fixture_report(tmp, "train_eval")
    d = diagnoses(text)
    check(len(d) == 1 and d[0].startswith("Phase 'data' takes 27% of the time in phases") and
          re.search(r"from the DataLoader made at <module> \(\S*/train_eval\.py:15\)", d[0]), f"{d}")
    o = json.loads(subprocess.run([GPUSPY, "report", "--json", os.path.join(tmp, "train_eval")], capture_output=True,
                                  text=True, timeout=TIMEOUT).stdout)
    s = o["processes"][0]["step"]
    check(s["what"] == "PyTorch's optimizer steps: data, optimizer, forward, backward, optimizer" and
          s["steps"] == 160 and s["steps_with_other_phases"] == 3 and 2_200_000 < s["step_ns"] < 2_400_000, f"{s}")
    check("  one-time costs before the steady state: 6 host-to-device copies, 5.0 MiB" in text and
          re.search(r"the largest at <module> \(\S*/train_eval\.py:13\)", text), text[-1500:])
    # No GPU records (CUPTI off): nothing is replayed; the evaluation's
    # steps are left out of the step's time, and the data phase's bound is
    # over the step's 160 steps, as the Step section counts them.
    check("  3 of them with other phases too (an evaluation?) are left out of the step's time\n" in text and
          "Saves up to 813.6 us a step (130.2 ms over 160 steps)" in " ".join(text.split()), text[-2200:])


@test
def fixture_torch_compile_ro_ends_its_last_data_phase(tmp):
    """torch_compile_ro.py (the zoo's, on an H100): a small MLP compiled
    with mode="reduce-overhead" over a DataLoader, 40 steps. Its 41st data
    phase, the pass's last next() (StopIteration), ends there: the data
    phases hold 33.3 ms, where an earlier build's ran on through the 7.1 s
    of the process's exit and the report said data took 60% of the loop.
    The step is the optimizer's, 40 of them, after 4.27 s of warm-up
    (compilation); the CUDA graphs ran 468 kernels. No diagnosis: its
    batches load in the main process in about a quarter of each 2.6 ms step,
    and loader workers made that loop slower on the GPU machine
    (tests/gpu/whatif/compiled_loader.py, docs/measurements.md)."""
    text = fixture_report(tmp, "torch_compile_ro")
    check(re.search(r"\n  data +41 +33\.3 ms ", text) and "  CUDA graphs ran 468 kernels (1.9 ms GPU time)" in text,
          text[:1500])
    check("  PyTorch's optimizer steps: data, forward, optimizer, backward, optimizer\n"
          "  40 steps, steady from 4.27 s\n" in text, text[-2000:])
    check(diagnoses(text) == ["none: nothing in this trace matches a known problem"], f"{diagnoses(text)}")


@test
def fixture_lightning_fit_steps_are_its_optimizers(tmp):
    """lightning_fit.py (the zoo's, on an H100): Lightning's Trainer.fit of a
    small MLP, 8 batches. Lightning runs forward and backward inside
    optimizer.step(closure): the step is the optimizer's, data then
    optimizer, 7 of them after 57.4 ms of warm-up; the upload at line 29 a
    one-time cost. Its one diagnosis: the DataLoader made at line 26 loads
    each 1.1 ms batch on the main thread, and workers save about 359.6 us
    of a 3.3 ms step: the batch's loading, less its handoff to the main
    process (750 us: docs/measurements.md)."""
    text = fixture_report(tmp, "lightning_fit")
    check("  PyTorch's optimizer steps: data, optimizer\n  7 steps, steady from 57.4 ms\n" in text and
          re.search(r"the largest at <module> \(\S*/lightning_fit\.py:29\)", text), text[-2500:])
    d = diagnoses(text)
    check(len(d) == 1 and re.match(r"Each step loads its data on the main thread, from the DataLoader made at <module> "
                                   r"\(\S*/lightning_fit\.py:26\), while the GPU waits\.", d[0]) and
          "Saves about 359.6 us a step (2.5 ms over 7 steps)" in d[0] and "a batch takes 1.1 ms to load" in d[0], f"{d}")


def fixture_json(tmp, name):
    fixture_report(tmp, name)
    p = subprocess.run([GPUSPY, "report", "--json", os.path.join(tmp, name)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0, f"report --json of {name} exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


@test
def fixture_zoos_c_programs_are_recorded_whole_and_not_advised(tmp):
    """The zoo's C programs (tests/gpu/zoo/*.cu), recorded on an H100 by
    fixtures.sh: each kernel launch's GPU record kept and joined where
    gpuspy once lost them, and no step and no advice, for none of them
    repeats a step, and no advice but ipc's. callbacks: 8
    threads each launch one kernel and add a stream callback (once 1 of
    the 8 records was kept); ctx_migrate: two threads in turn push one
    context, launch and copy 256 bytes back (once 1 of 2 kept); dynpar: 5
    parent launches (their device-side children are not host calls) and a
    4-byte copy back; vmm: a kernel over cuMemMap'd memory, 4 bytes back;
    ipc: two processes, the parent's one 1 MiB upload from pageable
    memory (pin it, up to its 5.2 ms on the host in all: a bound, with no
    step, and a loose one, as most of it is the first copy's own setup)
    and the child's 1 MiB copy back; um_streams_cublas: 26 cublasDgemv of 40 tasks on 4 OpenMP
    threads, its setup's allocations and its teardown's frees no churn
    (nothing is allocated again after a free), its three alike tasks on a
    thread no loop (under 6 steps)."""
    want = {  # launches, their GPU records, GPU records joined of all, processes, copies (dir, count, bytes)
        "callbacks": (8, 8, 16, 16, 1, []),
        "ctx_migrate": (2, 2, 4, 4, 1, [("d2h", 2, 512)]),
        "dynpar": (5, 5, 7, 7, 1, [("d2h", 1, 4)]),
        "vmm": (1, 1, 2, 2, 1, [("d2h", 1, 4)]),
        "ipc": (0, 0, 2, 2, 2, [("h2d", 1, 1 << 20), ("d2h", 1, 1 << 20)]),
        "um_streams_cublas": (26, 26, 26, 26, 1, []),
    }
    for name, w in want.items():
        o = fixture_json(os.path.join(tmp, name), name)
        t = o["totals"]
        copies = [(d, t["copy"][d]["pageable"]["count"], t["copy"][d]["pageable"]["bytes"])
                  for d in ("h2d", "d2h") if t["copy"][d]["pageable"]["count"]]
        got = (t["launch"]["count"], t["launch"]["gpu_count"], o["gpu"]["matched"], o["gpu"]["records"],
               len(o["processes"]), copies)
        check(got == w, f"{name}: {got}, want {w}")
        ids = [(d["id"], d["saving"]["bound"]) for d in o["diagnoses"]]
        check(ids == ([("pageable_copies", "upper")] if name == "ipc" else []), f"{name}: {ids}")
        check(all(not p["step"]["found"] for p in o["processes"]), f"{name}: a step {o['processes'][0]['step']}")
