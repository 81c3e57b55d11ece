# SPDX-License-Identifier: MIT
"""`gpuspy report --html`: the page's numbers are the text and JSON
report's, its series add up to the trace, it loads in Debian's headless
Chromium with no console message and every chart has data, and a trace's
bytes cannot become markup."""
import json
import os
import re
import shutil
import stat
import subprocess

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)

NVML = os.path.join(BIN, "nvml")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def trained(tmp, steps="10"):
    """prog_train on the doubles, CUPTI's and NVML's included."""
    env = {"GPUSPY_NVML_MS": "10", "FAKENVML": "util=95/40,power_mw=350000,limit_mw=700000,sm=1500,used_mib=4096",
           "TMPDIR": tmp, "FAKECUDA_SYNC_NS": "20000000", "GPUSPY_CUPTI": "on", "GPUSPY_CLOCK": "mono", "LD_LIBRARY_PATH": NVML + ":" + BIN}
    run("prog_train", [steps, "10"], tmp=tmp, env=env)


def html(tmp, *paths, expect_rc=0):
    out = os.path.join(tmp, "r.html")
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
