# SPDX-License-Identifier: MIT
"""`gpuspy report --html`: the page's numbers are the text and JSON
report's, its series add up to the trace, it loads in Debian's headless
Chromium with no console message and every chart has data, and a trace's
bytes cannot become markup. Then the page as a user meets it, in
Chromium driven through tests/browser.py (resized, clicked, hovered):
whose each diagnosis is, the ranks table, the step axis, the kernels'
names and the legends, the window's width, the NVML panels of the H200
fixtures, the flame graph against the trace's stacks, and the docs
against the page."""
import json
import os
import re
import shutil
import stat
import subprocess

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)
from browser import Browser, BrowserError

NVML = os.path.join(BIN, "nvml")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def trained(tmp, steps="10", env=None):
    """prog_train on the doubles, CUPTI's and NVML's included."""
    e = {"GPUSPY_NVML_MS": "10", "FAKENVML": "util=95/40,power_mw=350000,limit_mw=700000,sm=1500,used_mib=4096",
         "TMPDIR": tmp, "FAKECUDA_SYNC_NS": "20000000", "GPUSPY_CUPTI": "on", "GPUSPY_CLOCK": "mono",
         "LD_LIBRARY_PATH": NVML + ":" + BIN}
    run("prog_train", [steps, "10"], tmp=tmp, env=dict(e, **(env or {})))


def html(tmp, *paths, expect_rc=0, name="r.html"):
    out = os.path.join(tmp, name)
    p = subprocess.run([GPUSPY, "report", "--html", out, *paths], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=ROOT)
    check(p.returncode == expect_rc, f"report --html exited {p.returncode}: {p.stderr.strip()}")
    page = open(out).read()
    m = re.search(r'<script type="application/json" id="gspy-data">(.*?)</script>', page, re.S)
    check(m is not None, "no data in the page")
    return out, page, json.loads(m.group(1))


def chromium(path, view=None):
    """The page as Chromium drew it: its charts (data-charts) and the
    console's lines."""
    url = "file://" + path + (f"#process={view}" if view is not None else "")
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                        "--v=0", "--dump-dom", url], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"chromium exited {p.returncode}: {p.stderr[-500:]}")
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    m = re.search(r'data-charts="([^"]*)"', p.stdout)
    check(m is not None, f"the page was not drawn; console: {console}")
    charts = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    view_m = re.search(r'data-view="(-?\d+)"', p.stdout)
    return charts, console, p.stdout, int(view_m.group(1))


@test
def html_numbers_are_the_reports(tmp):
    """The page's text report is `gpuspy report`'s, whole and per process;
    its report data is `report --json`'s; each headline card reads as the
    text report writes it; the series add up: GPU busy to the device's
    busy time, reserved memory to the peak, the steps to the steps
    counted from the third 'data' phase, where the step is recognized
    (steps 3-10 of 10), each step's phases to its time, each step starting
    at its 'data' phase, the last ending with its 'optimizer'."""
    trained(tmp)
    g = os.path.join(tmp, traces(tmp)[0])
    out, page, d = html(tmp, tmp)
    text = report_text(tmp)
    check(d["text"] == text, "the page's text report differs from gpuspy report's")
    check(d["processes"][0]["text"] == report_text(g), "the process's text report differs")
    check(d["report"] == report_json(tmp), "the page's report data differs from report --json")
    p = d["processes"][0]
    cards = {c["label"]: c["value"] for c in p["cards"]}
    for k in ("traced", "device 0 busy", "peak reserved"):
        check(k in cards, f"no card {k}: {cards}")
    check(f"{cards['traced']} traced" in text and f"busy {cards['device 0 busy']}" in text
          and f"peak reserved device memory: {cards['peak reserved']}" in text
          and f"{cards['events']} events, {cards['dropped']} dropped" in text, f"cards {cards} not in the text report")
    check(cards["pageable copies"] == "30 (20 MiB)", f"pageable copies card {cards['pageable copies']}")
    s = p["series"]
    rep = d["report"]
    busy = rep["gpu"]["devices"][0]["busy_ns"]
    check(sum(s["busy_ns"]) == busy and len(s["busy_ns"]) <= 1024, f"busy bins {sum(s['busy_ns'])} of {busy}")
    check(max(s["reserved"]) == rep["memory"]["peak_reserved_bytes"], f"reserved {max(s['reserved'])}")
    st = s["steps"]
    check(st["per_point"] == 1 and st["first"] == 3 and st["n"] == [1] * 8 and cards["steps"] == "10",
          f"steps {st['n']} from {st['first']}, {cards.get('steps')}")
    names = [x["name"] for x in st["phases"]]
    check(names == ["data", "forward", "backward", "optimizer", "(outside these phases)"], f"step phases {names}")
    for i in range(len(st["n"])):
        parts = sum(x["ns"][i] for x in st["phases"])
        check(parts == st["total_ns"][i], f"step {i}: phases {parts} of {st['total_ns'][i]}")
    ev = dump(g)[1]
    begins = [e["start_ns"] for e in ev if e["kind"] == "phase_begin" and e.get("name") == "data"]
    ends = [e["start_ns"] for e in ev if e["kind"] == "phase_end" and e.get("name") == "optimizer"]
    check(sum(st["total_ns"]) == ends[-1] - begins[2], f"steps' time {sum(st['total_ns'])}, trace {ends[-1] - begins[2]}")
    check(st["t_ns"] == [b - s["t0_ns"] for b in begins[2:]], "the steps' starts")
    util = [v for v in s["nvml"]["util_pct"] if v is not None]
    power = {v for v in s["nvml"]["power_w"] if v is not None}
    check(util and all(40 <= v <= 95 for v in util) and power == {350}, f"nvml bins {util[:5]} {power}")
    check([x["id"] for x in p["diagnoses"]] == [x["id"] for x in rep["diagnoses"]], "diagnoses")
    check("<title>gpuspy report: " in page and "uPlot" in page and "http://" not in page.replace(
        "http://www.w3.org", ""), "the page is not self-contained")


@test
def html_loads_in_chromium(tmp):
    """Debian's headless Chromium draws the page of two processes with no
    console message: one process's seven charts each with data in every
    series; the view of all processes (the select's first choice) with
    the copies and kernels of both."""
    trained(tmp, "6")
    trained(tmp, "6")
    out, page, d = html(tmp, tmp)
    charts, console, dom, view = chromium(out)
    check(not console, f"console: {console}")
    check(view == -1 and dom.count("<option") == 3, f"view {view}, {dom.count('<option')} choices")
    check([c["title"].split(" (")[0] for c in charts] == ["Copies by direction", "Top kernels by GPU time"],
          f"all-processes charts {[c['title'] for c in charts]}")
    for view in (0, 1):
        charts, console, dom, got = chromium(out, view)
        titles = [c["title"] for c in charts]
        check(not console and got == view, f"view {got}: console {console}")
        check(len(charts) == 7, f"view {view}: {len(charts)} charts: {titles}")
        for c in charts:
            check(c["points"] > 0 and len(c["values"]) == c["series"] and all(v > 0 for v in c["values"]),
                  f"chart {c['title']}: {c}")
        check(d["processes"][view]["label"] in dom, f"view {view} does not name its process")


@test
def html_trace_bytes_stay_text(tmp):
    """A command line and phase name that are markup (a closing script
    tag, an element with a handler) stay text: the page's raw bytes hold
    no such tag, Chromium logs nothing, and the page shows the name."""
    trained(tmp, "4")
    g = os.path.join(tmp, traces(tmp)[0])
    j = os.path.join(tmp, "t.jsonl")
    subprocess.run([GPUSPY, "dump", g, "-o", j], check=True, timeout=TIMEOUT)
    bad = '</script><img src=x onerror=console.error(1)>'
    lines = []
    for line in open(j):
        o = json.loads(line)
        if "command" in o:
            o["command"] = "train " + bad
        if o.get("name") == "forward":
            o["name"] = "fwd" + bad
        lines.append(json.dumps(o))
    os.remove(g)
    open(j, "w").write("\n".join(lines) + "\n")
    out, page, d = html(tmp, j)
    check(bad not in page and "<img" not in page, "the trace's markup is in the page")
    check(d["processes"][0]["command"] == "train " + bad, "the command did not survive")
    charts, console, dom, view = chromium(out)
    check(not console, f"console: {console}")
    check("train &lt;/script&gt;&lt;img src=x onerror=console.error(1)&gt;" in dom and "<img" not in dom,
          "the name is not shown as text")


@test
def html_bad_output_path(tmp):
    """An output it cannot write: one line, exit 1, nothing left behind;
    --html without a file: exit 2."""
    trained(tmp, "2")
    p = subprocess.run([GPUSPY, "report", "--html", os.path.join(tmp, "no", "r.html"), tmp],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and p.stderr.count("\n") == 1 and "No such file or directory" in p.stderr,
          f"rc {p.returncode}: {p.stderr!r}")
    p = subprocess.run([GPUSPY, "report", tmp, "--html"], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 2 and "--html needs a value" in p.stderr, f"rc {p.returncode}: {p.stderr!r}")
    left = [f for f in os.listdir(tmp) if ".tmp" in f or f.endswith(".html")]
    check(not left, f"left behind: {left}")


@test
def html_output_never_follows_a_planted_link(tmp):
    """`report --html OUT` with symbolic links planted at the names it used
    to write (OUT.tmpPID, the PID known by exec from a shell) and at OUT
    itself, each to a victim file: the victims keep their bytes, OUT is the
    page, a regular file of mode 0644 under umask 022; nothing is left
    beside it but the planted link."""
    trace = os.path.join(tmp, "t.jsonl")
    write_trace_min(trace)
    victim = os.path.join(tmp, "victim")
    for planted in ("tmp", "out"):
        with open(victim, "w") as f:
            f.write("precious\n")
        d = os.path.join(tmp, planted)
        os.mkdir(d)
        out = os.path.join(d, "r.html")
        link = 'ln -s "$1" "$2.tmp$$"' if planted == "tmp" else 'ln -s "$1" "$2"'
        p = subprocess.run(["sh", "-c", f'umask 022; {link}; exec "$3" report --html "$2" "$4"', "sh", victim, out,
                            GPUSPY, trace], capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"{planted}: report --html exited {p.returncode}: {p.stderr.strip()}")
        check(open(victim).read() == "precious\n", f"link at the {planted} name: the victim was written")
        st = os.lstat(out)
        check(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644, f"{out}: mode {oct(st.st_mode)}")
        check("<html" in open(out).read(), f"{out} is not the page")
        left = sorted(os.listdir(d))
        check("r.html" in left and len(left) == (2 if planted == "tmp" else 1), f"left beside it: {left}")


@test
def dump_and_export_never_write_through_a_link(tmp):
    """dump -o OUT and export -o OUT where OUT is a symbolic link to a
    victim file: one line, status 1, the victim unchanged; to a new name
    they write."""
    trace = os.path.join(tmp, "t.jsonl")
    write_trace_min(trace)
    gspy = os.path.join(tmp, "t.gspy")
    subprocess.run([os.path.join(BIN, "mktrace"), gspy, "100", "1"], check=True, timeout=TIMEOUT)
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    for args in (["dump", gspy, "-o"], ["export", "--format", "chrome", trace, "-o"]):
        link = os.path.join(tmp, "link")
        os.symlink(victim, link)
        p = subprocess.run([GPUSPY, *args, link], capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and p.stderr.startswith(f"gpuspy: error: {link}: ") and p.stderr.count("\n") == 1 and
              "symbolic link" in p.stderr, f"{args[0]} -o LINK: {p.returncode} {p.stderr!r}")
        check(open(victim).read() == "precious\n", f"{args[0]} -o LINK wrote the victim")
        os.unlink(link)
        good = os.path.join(tmp, args[0] + ".out")
        p = subprocess.run([GPUSPY, *args, good], capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and os.path.getsize(good) > 0, f"{args[0]} -o NEW: {p.returncode} {p.stderr!r}")


def write_trace_min(path):
    """A JSON Lines trace of one process with one copy and one launch."""
    events = [{"type": "event", "kind": "copy", "api": "cudaMemcpy", "tid": 7, "start_ns": 2000, "end_ns": 9000,
               "result": 0, "device": 0, "bytes": 4096, "dir": "h2d", "host_mem": "pageable"},
              {"type": "event", "kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": 9100,
               "end_ns": 9200, "result": 0, "device": 0, "name": "k"}]
    header = {"type": "process", "format_version": 2, "pid": 7, "ppid": 1, "host": "h", "rank": -1,
              "local_rank": -1, "command": "t", "events": len(events), "dropped": 0, "clean_exit": True,
              "state": "exited", "truncated": False, "threads": 1, "start_realtime_ns": 1, "start_ns": 1000,
              "device_mem": [1 << 30], "clock": "monotonic"}
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(x) for x in [header] + events) + "\n")


# ---- the page as a user sees it: Chromium driven through tests/browser.py ----

def opened(out, view=None, width=1400, height=1000):
    """A Browser with the page open at view, its first frames drawn. A
    browser that went away while it started and loaded the page (its
    pipe closed: once in the sanitizers' pass of a CI run, under load) is
    started again, once; a page that fails twice fails the test."""
    for attempt in (1, 2):
        b = None
        try:
            b = Browser(width, height)
            b.open("file://" + out + (f"#process={view}" if view is not None else ""))
            b.frames()
            return b
        except Exception as e:
            if b:
                b.close()
            gone = isinstance(e, BrowserError) and str(e).startswith(("chromium closed its pipe", "chromium's pipe"))
            if attempt == 2 or not gone:
                raise


LEGENDS = """[...document.querySelectorAll("figure.chart")].filter(f => f.querySelector(".u-legend")).map(f =>
  [f.querySelector("figcaption").textContent, [...f.querySelectorAll(".u-legend .u-series")].map(s =>
   [s.querySelector(".u-label").textContent, s.querySelector(".u-value").textContent])])"""


@test
def html_all_processes_say_whose_and_show_the_ranks(tmp):
    """The view of all processes labels each diagnosis with its process,
    visibly: for two ranks of prog_train (RANK=0 and 1, each with its
    diagnoses: synchronous copies, allocation churn), each one's label is
    "rank R (pid P)" of the trace it came from, in the order of the text
    report; for two processes without RANK, "pid P". The ranks table is
    on the page, not folded: its head line, columns and rows are those of
    the text report's "== ranks" table, cell for cell, and the lines below
    it too; without ranks there is none."""
    ranks, pids = os.path.join(tmp, "ranks"), os.path.join(tmp, "pids")
    for d, env in ((ranks, [{"RANK": "0", "WORLD_SIZE": "2"}, {"RANK": "1", "WORLD_SIZE": "2"}]), (pids, [{}, {}])):
        os.makedirs(d)
        for e in env:
            trained(d, "6", env=e)
    for d, rank in ((ranks, True), (pids, False)):
        out, page, data = html(d, d)
        heads = sorted((dump(os.path.join(d, t))[0] for t in traces(d)), key=lambda h: (h["rank"], h["pid"]))
        labels = [f"rank {h['rank']} (pid {h['pid']})" if rank else f"pid {h['pid']}" for h in heads]
        want = [[label, label + " " + x["text"].split("\n")[0]] for label, p in zip(labels, data["processes"])
                for x in p["diagnoses"]]
        check(len(want) >= 4 and {w[0] for w in want} == set(labels), f"diagnoses {want}")
        with opened(out) as b:
            got = b.eval("""[...document.querySelectorAll("li.diagnosis")].map(l => [l.querySelector(".who").textContent,
                              l.querySelector("p").textContent, l.querySelector(".who").getBoundingClientRect().height > 0])""")
            table = b.eval("""(() => { const s = document.querySelector("section.ranks"); return s && {
                head: s.querySelector("p").textContent, shown: s.getBoundingClientRect().height > 0 && !s.closest("details"),
                rows: [...s.querySelectorAll("tr")].map(r => [...r.children].map(c => c.textContent)),
                notes: s.querySelector("pre.notes").textContent }; })()""")
            check(not b.console(), f"console: {b.console()}")
        check([g[:2] for g in got] == want and all(g[2] for g in got), f"labels {got}, expected {want}")
        words = " ".join(report_text(d).split())  # the text report's diagnoses, unwrapped
        check(all(f"* {w[0]}: {w[1][len(w[0]) + 1:]}" in words for w in want), "not the text report's labels")
        if not rank:
            check(table is None, f"a ranks table of processes without ranks: {table}")
            continue
        text = report_text(d).split("\n")
        at = next(i for i, l in enumerate(text) if l.startswith("== ranks: "))
        end = text.index("", at)
        rows = ["  %6s %7s %10s %12s %10s %10s %8s %9s %10s" % tuple(r) for r in table["rows"]]
        check(table["shown"] and table["head"] == text[at][len("== ranks: "):], f"ranks head {table}")
        check(rows == text[at + 1:at + 4] and len(rows) == 3, f"ranks rows {rows} vs {text[at + 1:at + 4]}")
        check(table["notes"].split("\n") == text[at + 4:end], f"ranks notes {table['notes']!r}")


def steps_trace(path, ms):
    """pid 7: one PyTorch step a phase "train" (numbered from 1) of ms[k]
    milliseconds, back to back, with one 5 us launch in each."""
    from test_report import phase_event, write_jsonl
    ev, t = [], 10 ** 9
    for k, m in enumerate(ms, 1):
        ev.append(phase_event(True, t, "train", k))
        ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t + 1000, "end_ns": t + 6000,
                   "result": 0, "device": 0, "name": "step_kernel"})
        t += m * 10 ** 6
        ev.append(phase_event(False, t, "train", k))
    return write_jsonl(path, ev)


@test
def html_step_axis_is_the_steady_steps(tmp):
    """30 steps of 10 ms but step 1 (1.5 s, warm-up), step 9 (14 ms), 15
    (30 ms) and 22 (60 ms): the step chart's y axis is not set by step 1.
    It stops at 36 ms, 1.2 times the 95th percentile (nearest rank: the
    28th of 29) of the steps after the first, 30 ms; steps 1 and 22 are
    taller, cut, marked, and the note above the chart names them with
    their times. Before any hover the legend gives the mean of steps
    2-30 (364 ms / 29: 12.55 ms); over step 1 it gives 1500.00 ms."""
    ms = [1500] + [10] * 29
    ms[8], ms[14], ms[21] = 14, 30, 60
    out, page, d = html(tmp, steps_trace(os.path.join(tmp, "steps.jsonl"), ms))
    st = d["processes"][0]["series"]["steps"]
    check(st["first"] == 1 and [v / 1e6 for v in st["total_ns"]] == ms, f"the trace's steps {st}")
    with opened(out) as b:
        c = b.eval("window.gspyCharts[0]")
        top = b.eval("window.gspy ? gspy.plots[0].u.scales.y.max : null")  # the axis drawn
        note = b.eval("""document.querySelector("figure.chart .note").textContent""")
        before = b.eval(LEGENDS)[0][1]
        over = b.eval("""(() => { const u = gspy.plots[0].u; u.setCursor({ left: u.valToPos(1, "x"), top: 20 });
                         return [...u.root.querySelectorAll(".u-series")].map(s => s.textContent); })()""")
    check(c["title"].startswith("Step time by phase") and all(isinstance(x, (int, float)) and abs(x - 36) < 1e-9
                                                               for x in (c.get("top"), top)),
          f"axis top {c.get('top')} {top}")
    check(c.get("cut") == [1, 22], f"cut {c.get('cut')}")
    check(note == "The axis stops at 36.0 ms, 1.2 times the 95th percentile of the steps after the warm-up "
                  "(30.0 ms): steps 1 (1500.0 ms) and 22 (60.0 ms) are taller, cut at the top and marked \u25B2.",
          f"note {note!r}")
    check(before == [["step", "mean of steps 2-30"], ["train", "12.55 ms"]],
          f"legend before hover {before}")
    check(over[0] == "step1" and over[-1] == "train1500.00 ms", f"legend over step 1 {over}")


def kernels_trace(path):
    """pid 7, no GPU timing: twelve kernels launched k + 1 times each,
    10 us a launch, three of them with long C++ names."""
    from test_report import write_jsonl
    names = [f"k{i}" for i in range(12)]
    names[0] = ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
                "at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, "
                "at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
                "at::detail::Array<char*, 2>)")
    names[1] = "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>(cutlass_80_simt_sgemm_64x64_8x5_tn_align1::Params)"
    names[2] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel"
    ev, t = [], 10 ** 9
    for i, n in enumerate(names):
        for _ in range(12 - i):
            ev.append({"kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": t, "end_ns": t + 10000,
                       "result": 0, "device": 0, "name": n})
            t += 20000
    return write_jsonl(path, ev)


@test
def html_kernels_by_name_and_legends_before_hover(tmp):
    """The kernel chart's bars are labelled with the kernels' short names
    (the text report's kernels table's), each cut to its bar's width with
    an ellipsis, never "#1"; wider on a wider window. Before any hover each
    legend says what its chart sums to, never "-": the top ten's launch
    time (sum of 12..3 launches of 10 us: 0.75 ms) of the twelve kernels;
    on prog_train's page, busy and idle over the run as the busy card
    gives it, the peak of reserved memory, NVML's peak used memory (4096
    MiB), the copies' totals per kind of host memory, and NVML's means."""
    out, page, d = html(tmp, kernels_trace(os.path.join(tmp, "k.jsonl")), name="k.html")
    text = report_text(os.path.join(tmp, "k.jsonl")).split("\n")
    at = next(i for i, l in enumerate(text) if l.startswith("  Top kernels"))
    labels = [l[2:50].rstrip() for l in text[at + 1:at + 11]]
    check(labels[0] == "vectorized_elementwise_kernel<4, AUnaryFuncto..." and labels[3] == "k3" and
          d["processes"][0]["kernel_labels"] == labels, f"labels {labels}")
    shown = {}
    for width in (1400, 2400):
        with opened(out, 0, width) as b:
            fig = """[...document.querySelectorAll("figure.chart")].find(f => f.textContent.startsWith("Top kernels"))"""
            shown[width] = json.loads(b.eval(fig + ".dataset.ticks"))
            legend = [x for x in b.eval(LEGENDS) if x[0].startswith("Top kernels")][0][1]
        for tick, label in zip(shown[width], labels):
            check(tick == label or (tick.endswith("\u2026") and label.startswith(tick[:-1]) and len(tick) >= 5),
                  f"{width}: tick {tick!r} for {label!r}")
        check(len(shown[width]) == 10 and not any(t.startswith("#") for t in shown[width]), f"ticks {shown[width]}")
        check(legend == [["kernel", "the top 10 of 12"], ["launch time ms", "0.75 in all"]], f"legend {legend}")
    check(shown[1400][0] != labels[0] and len(shown[2400][0]) > len(shown[1400][0]), f"ticks {shown}")

    trained(tmp, "6")
    out, page, d = html(tmp, tmp)
    p, s = d["processes"][0], d["processes"][0]["series"]
    cards = {c["label"]: c["value"] for c in p["cards"]}
    busy = re.search(r"\(([\d.]+)%\)$", cards["device 0 busy"]).group(1)
    mib = lambda b: f"{b / 1048576:.1f}"
    mean = lambda a: sum(v for v in a if v is not None) / len([v for v in a if v is not None])
    copy = d["report"]["processes"][0]["totals"]["copy"]
    kind = lambda k: mib(sum(c[k]["bytes"] for c in copy.values() if k in c)) + " MiB"
    with opened(out, 0) as b:
        legends = dict((t.split(" (")[0], dict(v)) for t, v in b.eval(LEGENDS))
    want = {"GPU busy and idle": {"s": "the whole run", "busy %": busy, "idle %": f"{100 - float(busy):.1f}"},
            "Device memory": {"s": "peak", "reserved (gpuspy) MiB": mib(max(s["reserved"])), "used (NVML) MiB": "4096.0"},
            "Copies by direction": {"direction": "all", "pageable host memory": kind("pageable"),
                                    "pinned host memory": kind("pinned"), "device to device": kind("device")},
            "GPU utilization": {"s": "the whole run", "utilization %": f"{mean(s['nvml']['util_pct']):.1f} (mean)",
                                "power W": "350.0 (mean)"}}
    for k, v in want.items():
        check(legends.get(k) == v, f"{k}: legend {legends.get(k)}, expected {v}")
    check(len(legends) == 7 and not any(x in ("-", "--") for v in legends.values() for x in v.values()),
          f"legends {legends}")


@test
def html_uses_the_window_width(tmp):
    """The page takes the window's width, up to 1600 px, centred, and each
    chart is as wide as its box and follows it: at 1400 px the main column
    is the window's width and the wide charts over 1300 px; at 1000 px
    every chart is redrawn to its box, within the window; at 2400 px the
    column stops at 1600 px, centred. Nothing is logged."""
    trained(tmp, "6")
    out, page, d = html(tmp, tmp)
    sizes = """[document.getElementById("view").getBoundingClientRect().toJSON(),
      [...document.querySelectorAll("figure.chart")].filter(f => f.querySelector(".uplot")).map(f => {
        const st = getComputedStyle(f), box = f.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
        return [f.querySelector(".uplot").getBoundingClientRect().width, box, f.classList.contains("wide")]; })]"""
    with opened(out, 0, 1400) as b:
        got = {}
        for w in (1400, 1000, 2400):
            b.resize(w, 1000)
            b.frames(3)
            got[w] = b.eval(sizes)
        check(not b.console(), f"console: {b.console()}")
    main, plots = got[1400]
    check(main["width"] == 1400 and len(plots) == 7, f"1400: main {main['width']} px wide, {len(plots)} charts")
    fits = lambda plots: all(0 <= box - u < 1 for u, box, wide in plots)  # whole pixels of the box
    check(fits(plots) and all(u > 1300 for u, box, wide in plots if wide), f"1400: {plots}")
    main, plots = got[1000]
    check(fits(plots) and all(u < 1000 for u, box, wide in plots), f"1000: {plots}")
    main, plots = got[2400]
    check(main["width"] == 1600 and main["left"] == 400 and fits(plots), f"2400: {main}, {plots}")


def fixture(tmp, name):
    """An H200 fixture's traces (tests/fixtures/h200/NAME.tar.gz), unpacked."""
    import tarfile
    with tarfile.open(os.path.join(ROOT, "tests", "fixtures", "h200", name + ".tar.gz")) as t:
        t.extractall(tmp)
    return os.path.join(tmp, os.path.basename(name))


NVML_TITLES = ("GPU utilization", "SM clock")


@test
def html_telemetry_of_the_h200_fixtures(tmp):
    """The NVML panels on the H200's traces. jax_window sampled NVML
    itself: both panels draw its samples (one point a bin that has one).
    In ddp_gloo one process a device samples, rank 3 (pid 2240): the views
    of ranks 0-2, whose device it sampled, draw its samples, and say
    whose. resnet_loader, the README's screenshot, was recorded before
    gpuspy sampled NVML (its header: state off, no period): its panels
    say so in words instead of "NVML unavailable"."""
    d = fixture(tmp, "jax_window")
    out, page, data = html(tmp, d, name="jax.html")
    nv = data["processes"][0]["series"]["nvml"]
    with opened(out, 0) as b:
        charts = [c for c in b.eval("window.gspyCharts") if c["title"].startswith(NVML_TITLES)]
    count = lambda a: len([v for v in a if v is not None])
    check([c["values"] for c in charts] == [[count(nv["util_pct"]), count(nv["power_w"])],
                                            [count(nv["sm_mhz"]), count(nv["temp_c"])]] and count(nv["util_pct"]) > 20,
          f"jax_window: {charts}")

    d = fixture(tmp, "ddp_gloo")
    out, page, data = html(tmp, d, name="ddp.html")
    labels = [p["label"] for p in data["processes"]]
    check(labels[3] == "rank 3 (pid 2240)" and "nvml" in data["processes"][3]["series"] and
          all("nvml" not in p["series"] and p["nvml"]["sampler"][0] == 2240 for p in data["processes"][:3]), labels)
    with opened(out, 3) as b:
        own = [c for c in b.eval("window.gspyCharts") if c["title"].startswith(NVML_TITLES)]
        for view in (0, 1, 2):  # chosen in the page's select, as a user would
            b.eval(f"""(() => {{ const s = document.getElementById("process"); s.value = "{view}";
                                 s.dispatchEvent(new Event("change")); }})()""")
            b.frames()
            got = [c for c in b.eval("window.gspyCharts") if c["title"].startswith(NVML_TITLES)]
            check([(c["points"], c["values"]) for c in got] == [(c["points"], c["values"]) for c in own] and
                  len(got) == 2 and all(v > 80 for c in got for v in c["values"]), f"view {view}: {got} vs {own}")
            check(all(c["title"].endswith("; device 0 as rank 3 (pid 2240) sampled it, seconds since its trace "
                                          "began") for c in got), f"view {view}: {[c['title'] for c in got]}")

    d = fixture(tmp, "resnet_loader")
    out, page, data = html(tmp, d, name="resnet.html")
    check(data["processes"][0]["nvml"] == {"state": "off", "ms": 0, "sampler": [0] * 8} and
          "nvml" not in data["processes"][0]["series"], f"resnet_loader: {data['processes'][0]['nvml']}")
    with opened(out, 0) as b:
        said = b.eval("""[...document.querySelectorAll("figure.chart")].filter(f => /NVML/.test(f.textContent))
                         .map(f => f.querySelector(".none").textContent)""")
    check(said == ["No NVML samples: sampling was off when this trace was recorded (its header has no period: "
                   "GPUSPY_NVML_MS=0, or a gpuspy older than its telemetry)."] * 2, f"resnet_loader: {said}")


def fmt_ns(ns):
    """The page's own format of a time (charts.js's fmtNs)."""
    if ns < 1e3:
        return f"{ns} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} us"
    return f"{ns / 1e6:.1f} ms" if ns < 1e9 else f"{ns / 1e9:.2f} s"


FLAME = """JSON.parse(document.querySelector("figure.flame").dataset.flame)"""


def differ(got, want):
    """The first frames two graphs ({path: value}) disagree on."""
    return [(p[-2:], got.get(p), want.get(p)) for p in sorted(set(got) | set(want)) if got.get(p) != want.get(p)][:3]


def flame_of(b):
    """The flame graph's frames ({path: value}); those drawn are those at
    least half a pixel wide."""
    f = b.eval(FLAME)
    odd = [x for x in f["frames"] if (x["drawn"] and x["w"] < 0.495) or (not x["drawn"] and x["w"] > 0.505)]
    check(not odd and any(x["drawn"] for x in f["frames"]), f"frames drawn though narrow, or not though wide: {odd[:3]}")
    return f, {tuple(x["path"]): x["value"] for x in f["frames"]}


@test
def html_flame_graph_of_the_calls_stacks(tmp):
    """The flame graph, on tests/progs/prog_stacks.c (known call chains,
    GPUSPY_STACKS=all, host allocations of 1 MiB or more), run twice:
    each process's frames are its root ("pid P") and the frames of each
    call's stack, outermost first; each frame's time is the host time of
    the calls made under it, to the nanosecond, as the trace's own events
    and stacks give it (and as `export --format collapsed` sums it); with
    the switch, each frame's bytes are the device and pinned bytes
    allocated under it (64 MiB under alloc_weights, 1 MiB under
    alloc_staging), frames with none left out. A click on main's line
    that calls model_init zooms into it: it spans the width, its callers
    above it, each of its four callees (model_init's two lines, then
    alloc_weights and alloc_staging) as wide as its share of its bytes. A frame's title names it, with its
    value and share. The view of both processes has a root "all processes"
    over the two."""
    if SANITIZED:
        raise Skip("the sanitizer's allocator comes before gpuspy's host hooks")
    env = {"GPUSPY_HOST_ALLOC_MIN": "1M", "GPUSPY_STACKS": "all"}
    run("prog_stacks", ["4"], tmp=tmp, env=env)
    run("prog_stacks", ["2"], tmp=tmp, env=env)
    out, page, d = html(tmp, tmp)
    want = []
    for t in traces(tmp):
        head = dump(os.path.join(tmp, t))[0]
        ev, stacks = dump_stacks(os.path.join(tmp, t))
        ns, nbytes, calls = {}, {}, {}
        for e in ev:
            if e["kind"] not in ("alloc", "free", "copy", "memset", "launch", "sync", "map", "unmap") or \
                    e.get("result", 0) != 0 or "stack" not in e:
                continue
            path = [f"pid {head['pid']}"] + stacks[e["stack"]][::-1]
            for k in range(1, len(path) + 1):
                p = tuple(path[:k])
                ns[p] = ns.get(p, 0) + e["end_ns"] - e["start_ns"]
                calls[p] = calls.get(p, 0) + 1
                if e["kind"] == "alloc" and e.get("mem") != "host":
                    nbytes[p] = nbytes.get(p, 0) + e["bytes"]
        want.append((head["pid"], ns, {p: v for p, v in nbytes.items() if v}, calls))
        collapsed = subprocess.run([GPUSPY, "export", "--format", "collapsed", os.path.join(tmp, t), "-o", "-"],
                                   capture_output=True, text=True, timeout=TIMEOUT).stdout.splitlines()
        for p, v in ns.items():
            s = sum(int(l.rsplit(" ", 1)[1]) for l in collapsed if (l.rsplit(" ", 1)[0] + ";").startswith(";".join(p) + ";"))
            check(s == v, f"export --format collapsed sums {s} under {p}, the trace {v}")
    for view, (pid, ns, nbytes, calls) in enumerate(want):
        root = (f"pid {pid}",)
        weights = [p for p in nbytes if p[-1].startswith("alloc_weights (prog_stacks.c:")]
        check(len(ns) > 10 and len(weights) == 1 and nbytes[weights[0]] == 64 << 20 and
              nbytes[root] == 65 << 20, f"the trace's stacks: {sorted(nbytes.items())}")
        with opened(out, view) as b:
            f, got = flame_of(b)
            check(f["metric"] == "ns" and list(f["focus"]) == list(root) and got == ns,
                  f"view {view}: time (frame, page, trace) {differ(got, ns)}")
            top = b.eval("""document.querySelector("figure.flame g.frame title").textContent""")
            check(top == f"{root[0]}\n{fmt_ns(ns[root])} in {calls[root]} calls, 100.0% of all", f"title {top!r}")
            b.eval("""document.querySelector("figure.flame input[value=bytes]").click()""")
            f, got = flame_of(b)
            check(f["metric"] == "bytes" and got == nbytes, f"view {view}: bytes (frame, page, trace) {differ(got, nbytes)}")
            init = weights[0][:-2]  # main's line that calls model_init
            b.eval("""[...document.querySelectorAll("figure.flame g.frame")].find(g => g.querySelector("title")
                      .textContent.split("\\n")[0] === %s).dispatchEvent(new MouseEvent("click", {bubbles: true}))"""
                   % json.dumps(init[-1]))
            f = b.eval(FLAME)
            W, at = f["width"], {tuple(x["path"]): x for x in f["frames"]}
            check(tuple(f["focus"]) == init and at[init]["x"] == 0 and at[init]["w"] == W, f"zoom: {f['focus']}")
            for p, x in at.items():
                if len(p) < len(init):
                    check(x["w"] == W and init[:len(p)] == p, f"caller {p}: {x}")
                else:
                    check(p[:len(init)] == init and abs(x["w"] - W * nbytes[p] / nbytes[init]) < 0.01, f"{p}: {x}")
            check(len(at) == len(init) + 4 and weights[0] in at and init[-1].startswith("main (prog_stacks.c:"),
                  f"zoomed frames {sorted(at)}")
            title = b.eval("""[...document.querySelectorAll("figure.flame g.frame title")].map(t => t.textContent)
                              .find(t => t.startsWith(%s))""" % json.dumps(weights[0][-1] + "\n"))
            check(title == f"{weights[0][-1]}\n64 MiB, 98.5% of all", f"title {title!r}")
            check(not b.console(), f"console: {b.console()}")
    with opened(out, -1) as b:
        f, got = flame_of(b)
    both = ("all processes",)
    check(got[both] == sum(w[1][(f"pid {w[0]}",)] for w in want) and
          all(got.get(both + p) == v for w in want for p, v in w[1].items()), f"all processes: {sorted(got.items())[:2]}")


@test
def html_flame_graph_without_stacks_says_so(tmp):
    """A trace whose calls carry no stack: the flame graph's panel says so,
    in words, and how to record stacks; nothing is drawn."""
    trace = os.path.join(tmp, "t.jsonl")
    write_trace_min(trace)
    out, page, d = html(tmp, trace)
    check(d["processes"][0]["flame"]["cover"] == {"calls": 2, "host_ns": 7100, "stacked": 0, "stacked_ns": 0},
          f"cover {d['processes'][0]['flame']['cover']}")
    with opened(out, 0) as b:
        said = b.eval("""[document.querySelector("figure.flame .none").textContent,
                          document.querySelectorAll("figure.flame svg").length]""")
    check(said == ["No call stacks in this trace: gpuspy records the stacks of allocations, frees, pageable copies "
                   "and waits of 10 us or more by default (GPUSPY_STACKS), so none of its calls has one. Record with "
                   "GPUSPY_STACKS=all GPUSPY_STACK_LAUNCHES=1 GPUSPY_STACK_MIN=0 for a stack on every call.", 0],
          f"said {said}")


@test
def html_flame_graph_says_what_it_holds(tmp):
    """When some calls carry no stack, the flame graph says how many do
    and how much of the host time they hold (2 of 5, 40.0%), as the export
    does; it draws those (400 ns under main;inner). Past 2000 frames the
    page keeps the largest: of 2200 leaves under main, each called once
    for 1000 + i ns, the 1998 largest (i = 202..2199) with the root and
    main, whose totals still hold every call; the note says 202 are left
    out."""
    from test_export import stack_trace
    t = stack_trace(os.path.join(tmp, "some.jsonl"), {5: [b"inner", b"main"]},
                    [("alloc", "cudaMalloc", 300, 5), ("launch", "cuLaunchKernel", 200, None),
                     ("sync", "cudaDeviceSynchronize", 100, 5), ("launch", "cuLaunchKernel", 250, None),
                     ("sync", "cudaDeviceSynchronize", 150, None)])
    out, page, d = html(tmp, t, name="some.html")
    with opened(out, 0) as b:
        note = b.eval("""document.querySelector("figure.flame .note").textContent""")
        f, got = flame_of(b)
    check(note == "2 of 5 CUDA calls carry a call stack (40.0% of their host time): only they are drawn. "
                  "GPUSPY_STACKS=all GPUSPY_STACK_LAUNCHES=1 GPUSPY_STACK_MIN=0 give every call one.", f"note {note!r}")
    check(got == {("pid 7",): 400, ("pid 7", "main"): 400, ("pid 7", "main", "inner"): 400}, f"frames {got}")

    n = 2200
    t = stack_trace(os.path.join(tmp, "many.jsonl"), {i + 1: [b"leaf%d" % i, b"main"] for i in range(n)},
                    [("sync", "cudaDeviceSynchronize", 1000 + i, i + 1) for i in range(n)])
    out, page, d = html(tmp, t, name="many.html")
    total = sum(1000 + i for i in range(n))
    want = {("pid 7",): total, ("pid 7", "main"): total}
    want.update({("pid 7", "main", f"leaf{i}"): 1000 + i for i in range(202, n)})
    check(d["processes"][0]["flame"]["pruned"] == 202, f"pruned {d['processes'][0]['flame']['pruned']}")
    with opened(out, 0) as b:
        note = b.eval("""document.querySelector("figure.flame .note").textContent""")
        f, got = flame_of(b)
    check(got == want, f"{len(got)} frames, expected {len(want)}: {differ(got, want)}")
    check(note == "202 smaller frames are left out of the page: their time and bytes are in their callers'.",
          f"note {note!r}")


@test
def html_docs_describe_todays_page(tmp):
    """The docs describe the page as it is. docs/html.md's list of what
    the page shows names every panel that Chromium draws for the H200
    what-if fixture item-slow (the README's screenshot), in the page's order, the
    flame graph included; its screenshots (taken by
    scripts/html-screenshots.py) are PNGs of a 1400 px page under 300 KB,
    the README shows the first. Each fixture the fixtures' README calls
    launch-bound or host-bound is diagnosed so today, and one it says is
    not, is not."""
    d = fixture(tmp, "whatif/item-slow")
    out, page, data = html(tmp, d)
    with opened(out, 0) as b:
        captions = b.eval("""[...document.querySelectorAll("figure.chart figcaption")].map(c => c.textContent)""")
    text = open(os.path.join(ROOT, "docs", "html.md"), encoding="utf-8").read()
    shows = text.split("## What it shows", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^\* \*\*(.+?)\*\*", shows, re.M)
    panel = lambda c: next((i for i, x in enumerate(items) if c.startswith(x) or (x == "Telemetry" and "NVML" in c)),
                           None)
    at = [panel(c) for c in captions]
    check(len(captions) == 8 and None not in at and at == sorted(at), f"panels {list(zip(captions, at))}, docs {items}")
    check(set(items) - {items[i] for i in at} == {"Cards", "Diagnoses", "The text report"}, f"docs list {items}")
    for name, width in (("html-report.png", 1400), ("html-flame.png", None)):
        png = open(os.path.join(ROOT, "docs", name), "rb").read()
        w = int.from_bytes(png[16:20], "big")
        check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) < 300 << 10 and (width is None or w == width) and
              f"]({name})" in text, f"docs/{name}: {len(png)} bytes, {w} px wide")
    check("](docs/html-report.png)" in open(os.path.join(ROOT, "README.md"), encoding="utf-8").read(), "README")
    readme = open(os.path.join(ROOT, "tests", "fixtures", "h200", "README.md"), encoding="utf-8").read()
    rows = re.findall(r"^\| `(\w+)` \|.*\| ([^|]*) \|$", readme, re.M)
    said = 0
    for name, what in rows:
        claims = {k: (None if not re.search(k, what) else not re.search("not " + k, what))
                  for k in ("launch-bound", "host-bound")}
        if not any(v is not None for v in claims.values()):
            continue
        ids = [x["id"] for x in report_json(fixture(tmp, name))["diagnoses"]]
        for k, yes in claims.items():
            if yes is not None:
                said += 1
                check((k.replace("-", "_") in ids) == yes, f"fixtures' README: {name} {'is' if yes else 'is not'} "
                                                           f"{k}, but the report's diagnoses are {ids}")
    check(said >= 3, f"{said} claims checked in {rows}")
