# SPDX-License-Identifier: MIT
"""The house: `make demo`, the docs against the code, the library's layers."""
import json
import os
import re
import shlex
import subprocess
import sys

from harness import BIN, GPUSPY, ROOT, SANITIZED, TIMEOUT, Skip, check, run, test


@test
def demo_prints_a_report_and_commands_that_work(tmp):
    """scripts/demo.sh (what `make demo` runs) prints the report of the
    traced example, no build output and no raw JSON, and every command it
    prints works as printed from the repository root."""
    if SANITIZED:
        raise Skip("the demo builds and preloads its own library, not the sanitized one")
    p = subprocess.run(["sh", "scripts/demo.sh"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"demo exited {p.returncode}: {p.stderr[-500:]}")
    out = p.stdout
    check("Diagnoses" in out and "Phases" in out, f"no report:\n{out[:2000]}")
    check(not re.search(r"^\s*(CC|LD|NVCC)\s", out, re.M) and "{\"type\"" not in out,
          f"build noise or JSON in the demo:\n{out[:2000]}")
    cmds = re.findall(r"^   (tools/gpuspy .*?)\s+#", out, re.M)
    check(len(cmds) == 3, f"commands printed: {cmds}")
    for c in cmds:
        r = subprocess.run(shlex.split(c), cwd=ROOT, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"`{c}` exited {r.returncode}: {r.stderr.strip()}")
    d = re.search(r"^== tools/gpuspy report (\S+)$", out, re.M).group(1)
    check(os.path.exists(os.path.join(d, "timeline.json")) and os.path.exists(os.path.join(d, "trace.jsonl")),
          "the exported files are missing")


@test
def committed_binary_trace_reads_as_its_dump(tmp):
    """tests/golden/format-v2.gspy.gz and format-v3.gspy.gz, traces written
    by libgpuspy in format versions 2 and 3 (prog_graph on the doubles,
    CUPTI on, stacks off, a 1 MiB buffer), each dump byte for byte to
    their committed JSON Lines, whose reports golden_reports checks: a
    change that reads old files differently fails here. A new format
    version commits a file of its own. The version 3 file is as its clean
    exit cut it: header, one chunk, its strings and their 64 KiB of room."""
    import gzip
    gold = os.path.join(ROOT, "tests", "golden")
    for v, size in ((2, 4263936), (3, 4096 + (64 << 10) + (64 << 10) + 4096)):
        path = os.path.join(tmp, f"format-v{v}.gspy")
        with gzip.open(os.path.join(gold, f"format-v{v}.gspy.gz")) as f, open(path, "wb") as g:
            g.write(f.read())
        check(os.path.getsize(path) == size, f"format-v{v}.gspy is {os.path.getsize(path)} bytes")
        p = subprocess.run([os.path.join(ROOT, "tools", "gpuspy"), "dump", path], capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 0, f"dump failed: {p.stderr.strip()}")
        want = open(os.path.join(gold, f"format-v{v}.jsonl")).read()
        check(p.stdout == want, f"the committed trace no longer dumps as format-v{v}.jsonl")
        check(f'"format_version":{v}' in want.splitlines()[0], f"not a version {v} trace")


@test
def env_shows_the_values_as_the_library_reads_them(tmp):
    """`gpuspy env` runs the library's own parser (common/options.c) on this
    environment: the values the library warns about are exactly the ones it
    marks, with the same default; a good value is shown plain; the
    environment's bytes are escaped."""
    bad = {"GPUSPY_CUPTI": "maybe", "GPUSPY_STACKS": "off,all", "GPUSPY_STACK_DEPTH": "65",
           "GPUSPY_STACK_MIN": "20 us", "GPUSPY_HOST_ALLOC_MIN": "1T", "GPUSPY_NVTX": "sometimes"}
    good = {"GPUSPY_BUFFER_MB": "512", "GPUSPY_STACK_LAUNCHES": "7", "GPUSPY_NVTX_RANGES": "step\x1b[2J"}
    e = dict(os.environ, **bad, **good)
    for k in list(e):
        if k.startswith("GPUSPY_") and k not in bad and k not in good:
            del e[k]
    out = subprocess.run([GPUSPY, "env"], env=e, capture_output=True, text=True, timeout=TIMEOUT)
    check(out.returncode == 0, f"gpuspy env: {out.stderr}")
    rows = {l.split()[0]: l for l in out.stdout.splitlines()[1:] if l.startswith("GPUSPY_")}
    check(len(rows) >= 20 and "GPUSPY_QUIET" in rows, f"rows: {sorted(rows)}")
    marked = {k for k, l in rows.items() if "<- not " in l}
    check(marked == set(bad), f"marked {sorted(marked)}, expected {sorted(bad)}")
    check(rows["GPUSPY_BUFFER_MB"].split() == ["GPUSPY_BUFFER_MB", "256", "512"], rows["GPUSPY_BUFFER_MB"])
    check(rows["GPUSPY_NVTX_RANGES"].split() == ["GPUSPY_NVTX_RANGES", "all", "step\\x1b[2J"],
          rows["GPUSPY_NVTX_RANGES"])
    check(rows["GPUSPY_STACK_DEPTH"].endswith("65  <- not a number (1..64): the library uses 32"),
          rows["GPUSPY_STACK_DEPTH"])
    check("6 values the library would refuse" in out.stdout, out.stdout)
    # The library, given the same environment, warns about the same six,
    # in the table's order, each with the default env showed.
    p = run("prog_rt_dyn", tmp=tmp, env=dict(bad, GPUSPY_QUIET="0", GPUSPY_LOG="stderr"))
    warned = [l.split("=")[0][len("gpuspy: "):] for l in p.stderr.splitlines() if " is not " in l]
    order = [k for k in rows if k in bad]
    check(warned == order, f"library warned about {warned}, env marked {order}")
    for k in bad:
        used = rows[k].rsplit("the library uses ", 1)[1]
        check(f"{k}={bad[k]} is not " in p.stderr and f"; using {used}" in p.stderr, f"{k}: {p.stderr!r}")


@test
def core_and_writer_reach_modules_through_their_table(tmp):
    """lib/ in layers: core.c and writer.c call no module by name (their
    setup, fork, file, exit and end hooks), and core.c not the writer;
    gs.h's inline record path names
    no module either (its rare extras are out of line in record.c); each
    module registers its hooks once with GS_MODULE, at the order module.h
    lists. cupti.c and phase.c call nothing of control.c's (the module
    above them): CUPTI's deferred start is a flag control.c reads."""
    src = lambda f: open(os.path.join(ROOT, "lib", f), encoding="utf-8").read()
    # (strtab.c is the writer's own string table, in a file of its own.)
    mods = "stacks|stack|cupti|signals|nvtx|python|host|events|memmap|names|phase|control|symbol|capture"
    for f in ("core.c", "writer.c", "gs.h"):
        calls = set(re.findall(r"\bgs_(?:%s)_\w+(?=\()" % mods, src(f)))
        check(not calls, f"{f} calls {sorted(calls)}")
    # core.c is below the writer too: it reads the file's state and pid
    # from globals the writer sets (gs.h's record path is the writer's
    # client, the store every call ends in).
    calls = set(re.findall(r"\bgs_writer_\w+(?=\()", src("core.c")))
    check(not calls, f"core.c calls the writer: {sorted(calls)}")
    for f in ("cupti.c", "phase.c"):
        calls = set(re.findall(r"\bgs_(?:control_\w+|recording)(?=\()", src(f)))
        check(not calls, f"{f} calls up into control.c: {sorted(calls)}")
    listed = dict((m, int(n)) for m, n in re.findall(r"(\w+) (\d+)[,.) ]", src("module.h").split("Order:")[1].split("*/")[0]))
    found = {}
    for f in sorted(os.listdir(os.path.join(ROOT, "lib"))):
        if f.endswith(".c"):
            for m, n in re.findall(r"^GS_MODULE\((\w+), (\d+)", src(f), re.M):
                check(m not in found, f"module {m} registered twice")
                found[m] = int(n)
    check(found == listed, f"GS_MODULE entries {found}, module.h lists {listed}")


def code_of(dirs, exts=(".c", ".h", ".py")):
    """The text of every source file under each of dirs (relative to ROOT), recursively."""
    out = []
    for d in dirs:
        for base, _, files in sorted(os.walk(os.path.join(ROOT, d))):
            out += [open(os.path.join(base, f), encoding="utf-8").read() for f in sorted(files) if f.endswith(exts)]
    return "".join(out)


def readme_section(text, heading):
    """The lines of README.md's section `## heading`, up to the next `## `."""
    m = re.search(r"^## " + re.escape(heading) + r"\n(.*?)(?=^## )", text, re.S | re.M)
    check(m, f"README has no section '## {heading}'")
    return m.group(1)


@test
def docs_list_every_variable_and_option(tmp):
    """The docs stay true to the code: docs/environment.md's table is the
    library's options table (`gpuspy env --markdown`), which names every
    GPUSPY_ variable lib/, tools/ or python/ name, each read where the
    table says; README's Options table only real ones;
    docs/commands.md shows every option the commands take; README's
    Commands block has each word of `gpuspy --help`."""
    table = subprocess.run([GPUSPY, "env", "--markdown"], capture_output=True, text=True, timeout=TIMEOUT).stdout
    doc = lambda name: open(os.path.join(ROOT, name), encoding="utf-8").read()
    readme, env, commands = doc("README.md"), doc("docs/environment.md"), doc("docs/commands.md")
    check(table.startswith("| variable |") and table in env,
          "docs/environment.md's table is not `gpuspy env --markdown` (common/options.c): paste it in")
    rows = set(re.findall(r"^\| `(GPUSPY_[A-Z0-9_]+)` \|", table, re.M))
    check(len(rows) >= 20, f"only {sorted(rows)} in the table")
    # Every variable the code names is in the table; every row is read by
    # what the table says reads it (the library through gs_opt[GS_OPT_X]).
    lib, py, tools = code_of(["lib"]), code_of(["python"]), code_of(["tools"])
    named = set(re.findall(r"[\"'](GPUSPY_[A-Z0-9_]+)[\"']", lib + py + tools))
    check(named <= rows, f"named in the code but not in common/options.c: {sorted(named - rows)}")
    by = dict(re.findall(r'\[GS_OPT_(\w+)\] = \{ "(?:GPUSPY_\w+)", GS_OPT_\w+, (GS_BY_\w+)',
                         open(os.path.join(ROOT, "common", "options.c")).read()))
    check(len(by) == len(rows), f"{len(by)} rows parsed from common/options.c, {len(rows)} in the table")
    unread = [i for i, b in by.items() if
              (b == "GS_BY_LIB" and f"GS_OPT_{i})" not in lib and f"GS_OPT_{i}]" not in lib) or
              (b == "GS_BY_PYTHON" and f"GPUSPY_{i}" not in py) or (b == "GS_BY_TOOL" and f"GPUSPY_{i}" not in tools)]
    check(not unread, f"in common/options.c but never read: {unread}")
    read = rows
    few = set(re.findall(r"^\| `(GPUSPY_[A-Z0-9_]+)` \|", readme_section(readme, "Options"), re.M))
    check(few and few <= read, f"README's Options that are not read: {sorted(few - read)}")
    opts = set(re.findall(r'"(--?[a-z][a-z-]*)"', code_of(["tools"], exts=(".c",))))
    check({"--dir", "--json", "--format", "-o", "--help"} <= opts, f"options found: {sorted(opts)}")
    missing = sorted(o for o in opts if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", commands))
    check(not missing, f"options not in docs/commands.md: {missing}")
    usage = subprocess.run([GPUSPY, "--help"], capture_output=True, text=True, timeout=TIMEOUT).stdout
    block = re.search(r"```\n(.*?)```", readme_section(readme, "Commands"), re.S).group(1)
    shown = set(re.findall(r"--?[a-z][a-z-]*|[A-Z][A-Z.|]+(?:\.\.\.)?", block))
    for word in re.findall(r"--?[a-z][a-z-]*|[A-Z][A-Z.|]+(?:\.\.\.)?", usage.split("FILE is")[0]):
        check(word in shown, f"'{word}' of `gpuspy --help` is not in README's usage block")
    links = re.findall(r"\]\((docs/[a-z-]+\.md)\)", readme)
    check(links and all(os.path.exists(os.path.join(ROOT, l)) for l in links), f"README links {links}")
    check(len(readme.splitlines()) <= 300, f"README.md is {len(readme.splitlines())} lines")


def tree_texts():
    """(path, text) of the repository's own text files: code, scripts and
    docs, not build output, results or fixtures."""
    skip = {".git", "bin", "out", "results", "fixtures", "corpus", "golden", "__pycache__", "dist", "build", ".gpu"}
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if x not in skip and not x.endswith(".egg-info"))
        for f in sorted(files):
            if f.endswith((".c", ".h", ".cu", ".py", ".sh", ".md", ".mk", ".S")) or f == "Makefile":
                p = os.path.join(d, f)
                with open(p, encoding="utf-8", errors="replace") as fh:
                    yield os.path.relpath(p, ROOT), fh.read()


@test
def lab_results_are_few_and_cited(tmp):
    """tests/gpu/results keeps only what the docs cite: at most 30 files
    and 0.5 MB, every file cited somewhere by its path (or a pattern such
    as final/ex_*.report.txt), and every path cited there exists. The
    experiments' output is not committed: their figures are in
    docs/measurements.md."""
    base = os.path.join(ROOT, "tests", "gpu", "results")
    have = sorted(os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(base) for f in fs)
    size = sum(os.path.getsize(os.path.join(ROOT, f)) for f in have)
    check(len(have) <= 30 and size <= 512 * 1024, f"{len(have)} files, {size} bytes in tests/gpu/results")
    import fnmatch
    cited = set()
    for path, text in tree_texts():
        for c in re.findall(r"tests/gpu/results/[\w./*{},-]*[\w*}]", text):
            m = re.match(r"(.*)\{([^}]*)\}(.*)", c)
            pats = [m.group(1) + x + m.group(3) for x in m.group(2).split(",")] if m else [c]
            for pat in pats:
                hits = [f for f in have if fnmatch.fnmatch(f, pat) or f.startswith(pat.rstrip("/") + "/")]
                check(hits, f"{path} cites {pat}, which is not in tests/gpu/results")
                cited.update(hits)
    check(set(have) <= cited, f"not cited by any doc: {sorted(set(have) - cited)}")


@test
def the_root_holds_the_layout_and_nothing_else(tmp):
    """The repository's root holds the layout's rooms (lib/ include/ tools/
    tests/ examples/ and the rest HOUSE.md names) and the packaging's and
    project's files: a file committed there by mistake (a results file
    copied to the root once, 'call6') fails this."""
    p = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip("not a git checkout: no committed files to list")
    root = {f.split("/")[0] for f in p.stdout.splitlines()}
    layout = {".ci", ".gitignore", "LICENSE", "Makefile", "README.md", "VERSION", "bench", "common", "debian",
              "docs", "examples", "gpuspy.pc.in", "include", "lib", "pyproject.toml", "python", "scripts",
              "setup.py", "tests", "tools"}
    check(root <= layout, f"at the root, outside the layout: {sorted(root - layout)}")


@test
def comments_cite_files_of_the_repository(tmp):
    """No comment or doc cites design notes kept outside the repository
    (DESIGN.md, FIELD-NOTES, WHATIF, HOUSE.md, STYLE.md): they cite
    docs/design.md, and every section they name there exists."""
    heads = re.findall(r"^#+ (.+)$", open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8").read(), re.M)
    slugs = {re.sub(r"[^\w -]", "", h.lower()).replace(" ", "-") for h in heads}
    for path, text in tree_texts():
        if path in (os.path.join("docs", "design.md"), os.path.join("tests", "test_house.py")):
            continue
        bad = re.findall(r"\bDESIGN\.md|FIELD-NOTES|WHATIF|\bHOUSE\.md|\bSTYLE\.md|\.\./shared/", text)
        check(not bad, f"{path} cites {sorted(set(bad))}")
        for s in re.findall(r"design\.md#([\w-]+)", text):
            check(s in slugs, f"{path} cites docs/design.md#{s}, which has no such section ({sorted(slugs)})")


# The rooms of tools/, each above the ones it may include (docs/hacking.md).
ROOMS = {"cmd": {"report", "render", "read", "util"}, "render": {"report", "read", "util"},
         "report": {"read", "util"}, "read": {"util"}, "util": set()}
ROOM_EXCEPTIONS = set()
# Files under tools/report/ that are no section: the pass and its
# timeline, the table, the results' own code, the merge's frame, what the
# diagnoses are made with, the series over time, the frameworks, the
# program's own period and where the steps begin (the algorithms the steps
# are found with), the
# replay and the advice made from it (the steps section's diagnose), the
# steps section's text and JSON (steps_show.c: steps.c finds and replays),
# and the faulted kernel the steps section finds, said in the process's lines.
NOT_SECTIONS = {"pass.c", "timeline.c", "sections.c", "report.c", "merge.c", "diag.c", "series.c",
                "frameworks.c", "period.c", "bounds.c", "replay.c", "advice.c", "fault.c", "steps_show.c"}


@test
def tools_rooms_include_downward_and_sections_are_in_the_table(tmp):
    """tools/ has no circle between its rooms: every #include "room/x.h"
    of a file in a room names its own room or one the room may use, in an
    order derived from ROOMS (one known exception); and every section file
    under tools/report/ is a row of gs_sections[] (report/sections.c),
    every row a file."""
    # The order: a room goes after every room it may use; a circle would
    # leave rooms unplaced.
    order, left = [], dict(ROOMS)
    while left:
        ready = sorted(r for r, uses in left.items() if uses <= set(order))
        check(ready, f"the rooms {sorted(left)} use each other in a circle")
        order += ready
        for r in ready:
            del left[r]
    tools = os.path.join(ROOT, "tools")
    bad, seen = [], set()
    for room in order:
        for f in sorted(os.listdir(os.path.join(tools, room))):
            if not f.endswith((".c", ".h")):
                continue
            text = open(os.path.join(tools, room, f), encoding="utf-8").read()
            for full in re.findall(r'^#include "((\w+)/[\w.]+\.h)"', text, re.M):
                e, to = (f"{room}/{f}", full[0]), full[1]
                if to not in ROOMS:
                    continue  # gpuspy/format.h and the like: not a room
                if e in ROOM_EXCEPTIONS:
                    seen.add(e)
                elif to != room and to not in ROOMS[room]:
                    bad.append(f"{e[0]} includes {e[1]}")
    check(not bad, "includes against the rooms' order " + " < ".join(order) + ":\n" + "\n".join(bad))
    check(seen == ROOM_EXCEPTIONS, f"exceptions no longer needed: {sorted(ROOM_EXCEPTIONS - seen)}")
    table = open(os.path.join(tools, "report", "sections.c"), encoding="utf-8").read()
    rows = re.findall(r'^\t\{ \.name = "(\w+)"', table, re.M)
    files = {f[:-2] for f in os.listdir(os.path.join(tools, "report")) if f.endswith(".c")}
    check(len(rows) == len(set(rows)) >= 10, f"rows: {rows}")
    check(set(rows) <= files, f"rows without a file report/NAME.c: {sorted(set(rows) - files)}")
    loose = files - set(rows) - {f[:-2] for f in NOT_SECTIONS}
    check(not loose, f"report/ files that are no row of gs_sections[] (add the row, or list the file "
                     f"in NOT_SECTIONS with why): {sorted(loose)}")


@test
def one_version_everywhere(tmp):
    """VERSION is the one place the version is written: the Makefile, the
    command (`gpuspy --version`) and the wheel (setup.py) read it; the
    copies that cannot read it (include/gpuspy.h's string and numbers,
    debian/changelog, the Python package, the man page, the README's
    package names) say the same."""
    v = open(os.path.join(ROOT, "VERSION")).read().strip()
    check(re.fullmatch(r"\d+\.\d+\.\d+", v), f"VERSION is {v!r}")
    out = subprocess.run([GPUSPY, "--version"], capture_output=True, text=True, timeout=TIMEOUT).stdout
    check(out.startswith(f"gpuspy {v} "), f"gpuspy --version: {out!r}")
    text = lambda f: open(os.path.join(ROOT, f), encoding="utf-8").read()
    major, minor, patch = v.split(".")
    check(f'#define GPUSPY_VERSION_STRING "{v}"' in text("include/gpuspy.h") and
          f"#define GPUSPY_VERSION_MAJOR {major}\n#define GPUSPY_VERSION_MINOR {minor}\n"
          f"#define GPUSPY_VERSION_PATCH {patch}\n" in text("include/gpuspy.h"), "include/gpuspy.h")
    check(f'.TH GPUSPY 1 "" "gpuspy {v}"' in text("docs/gpuspy.1"), "docs/gpuspy.1")
    check(text("README.md").count(f"gpuspy_{v}_amd64.deb") == 2 and
          text("README.md").count(f"gpuspy-{v}-py3-none-linux_x86_64.whl") == 2 and
          not re.search(r"gpuspy[_-](?!%s)\d+\.\d+\.\d+" % re.escape(v), text("README.md")),
          "README.md's package names")
    check(text("debian/changelog").startswith(f"gpuspy ({v})"), "debian/changelog")
    check(f'__version__ = "{v}"' in text("python/gpuspy/__init__.py"), "python/gpuspy/__init__.py")
    check("VERSION := $(shell cat VERSION)" in text("Makefile"), "the Makefile does not read VERSION")
    check('version = "' not in text("pyproject.toml") and '"VERSION"' in text("setup.py"), "the wheel's version")


@test
def every_header_rebuilds_its_users(tmp):
    """The build tracks headers (-MMD -MP, tests/tests.mk too), so no
    header list is kept by hand: in the built tree, `make -n -W HEADER`
    (as if HEADER had just been edited) would rebuild every object, double
    and test program whose dependency file names HEADER, for each header
    of lib/, common/, include/, tools/ and tests/ (the doubles' and the
    programs'), and an untouched tree has nothing to rebuild; `make` with
    no goal builds all."""
    if SANITIZED:
        raise Skip("the sanitized build is a copy of the tree")
    make = lambda *a: subprocess.run(["make", "-n", *a, "all", "test-build"], cwd=ROOT, capture_output=True,
                                     text=True, timeout=120).stdout
    built = lambda out: (set(re.findall(r"(?:CC|AS|LD) +(\S+?)\\?\"?$", out, re.M)) |
                         set(re.findall(r" -o (\S+)", out)))
    stale = built(make())
    check(not stale, f"stale outputs: {sorted(stale)[:5]}")
    files = subprocess.run(["git", "ls-files", "lib", "common", "include", "tools", "tests"], cwd=ROOT,
                           capture_output=True, text=True).stdout.split()
    heads = sorted(f for f in files if f.endswith(".h"))
    check(len(heads) > 30 and "tests/doubles/fakecuda.h" in heads, f"headers: {heads}")
    # Each output's prerequisites as its .d file spells them (a test
    # program's "../../lib/cuda_api.h" is lib/cuda_api.h).
    deps = {}
    for d in ("lib", "tools", os.path.join("tests", "bin")):
        for base, _, fs in os.walk(os.path.join(ROOT, d)):
            for f in fs:
                if f.endswith(".d"):
                    rule = open(os.path.join(base, f)).read().split("\n\n")[0].replace("\\\n", " ")
                    target, prereqs = rule.split(":", 1)
                    deps[target.strip()] = set(prereqs.split())
    tested = {o for o in deps if o.startswith("tests/")}
    check(len(deps) > 60 and len(tested) > 50, f"{len(deps)} dependency files, {len(tested)} of tests/: is it built?")
    for h in heads:
        spelt = {o: {p for p in ps if os.path.normpath(p) == h} for o, ps in deps.items()}
        users = {o for o, ps in spelt.items() if ps}
        check(users, f"{h}: nothing depends on it")
        out = built(make(*[a for p in set().union(*spelt.values()) for a in ("-W", p)]))
        check(users <= out, f"editing {h} would not rebuild {sorted(users - out)[:5]}")
    # `make` alone is `make all`, though every .d file names a target (it
    # built lib/common_options.o alone, and said it was up to date).
    plain = subprocess.run(["make", "-n", "-W", "lib/core.c"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120).stdout
    check("lib/core.o" in plain and "libgpuspy.so" in plain, f"`make` is not `make all`: {plain[:200]!r}")


# Where the house rules on size hold: C under these folders, and the
# tests' own Python (tests/*.py). Build output, recorded traces and the
# fuzzer's corpus are no source; tests/fuzz's target is.
SMALL_C = ("lib", "common", "tools", "include", "tests")
NOT_SOURCE = {"bin", "out", "fixtures", "golden", "results", "corpus", "__pycache__"}


def c_functions(lines):
    """(first line, last line) of each function a C file defines, 0-based:
    a signature that begins a line with a letter (after its return type,
    if that has a line of its own) and may go on over indented lines, its
    last ending with ")", then "{" alone on a line, up to the first "}"
    alone on a line."""
    found = []
    for i, l in enumerate(lines):
        if l != "{" or i == 0 or not lines[i - 1].endswith(")"):
            continue
        k = i - 1
        while k > 0 and lines[k][:1] in (" ", "\t") and lines[k].strip():
            k -= 1
        if k > 0 and re.fullmatch(r"[A-Za-z_][\w *]*", lines[k - 1]):
            k -= 1
        if re.match(r"[A-Za-z_]", lines[k]):
            found.append((k, next((j for j in range(i + 1, len(lines)) if lines[j] == "}"), i)))
    return found


def py_functions(text):
    """(first line, last line) of each function (nested ones too) of a
    Python file, 0-based: from its first decorator, or its def, to its
    last line; the lines counted are those from the def."""
    import ast
    found = []
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([n.lineno] + [d.lineno for d in n.decorator_list]) - 1
            found.append((first, n.end_lineno - 1, n.lineno - 1))
    return found


@test
def files_and_functions_stay_small(tmp):
    """No source file is over 800 lines (the C of lib/, common/, tools/,
    include/ and tests/, and tests/*.py), and a function over 80 lines
    (from its signature's first line, which may go on over several, to
    its closing brace; in Python from its def to its last line) says why
    in the comment right above it (one that begins "Long (")."""
    files = []
    for d in SMALL_C:
        for base, dirs, fs in os.walk(os.path.join(ROOT, d)):
            dirs[:] = sorted(x for x in dirs if x not in NOT_SOURCE)
            files += [os.path.join(base, f) for f in sorted(fs) if f.endswith((".c", ".h"))]
    tests = os.path.join(ROOT, "tests")
    files += [os.path.join(tests, f) for f in sorted(os.listdir(tests)) if f.endswith(".py")]
    check(len(files) > 150 and os.path.join(tests, "doubles", "fakecuda.c") in files, f"{len(files)} files")
    big, long, seen = [], [], set()
    for path in files:
        rel = os.path.relpath(path, ROOT)
        text = open(path, encoding="utf-8").read()
        lines = text.split("\n")
        if len(lines) > 801:
            big.append(f"{rel}: {len(lines) - 1} lines")
        if path.endswith(".py"):
            funcs, comment = py_functions(text), lambda l: l.lstrip().startswith("#")
        else:
            funcs, comment = [(k, end, k) for k, end in c_functions(lines)], lambda l: l.startswith((" *", "/*"))
        for first, end, start in funcs:
            seen.add(lines[start].split("(")[0])
            if end - start + 1 <= 80:
                continue
            k = first - 1
            while k >= 0 and comment(lines[k]) and "Long (" not in lines[k]:
                k -= 1
            if k < 0 or "Long (" not in lines[k]:
                long.append(f"{rel}:{start + 1} {lines[start].strip()[:50]} ({end - start + 1} lines)")
    # Signatures on two lines, and Python's tests, are seen.
    check({"int gs_export_flame", "def files_and_functions_stay_small"} <= seen, "functions not found")
    check(not big, f"files over 800 lines: {big}")
    check(not long, f"functions over 80 lines that do not say why: {long}")


@test
def readme_quick_start_works_as_written(tmp):
    """The README's Quick start, each line typed as written, in order, in
    a fresh directory on the doubles: `python train.py` is a script that
    becomes tests/bin/prog_train (20 steps, 200 us of data work), the
    gpuspy on PATH is the tree's. Each command does what its comment says:
    run traces and reports; the hand-preloaded run leaves its trace in
    the directory, which `report .` reads (20 steps of its phases); the
    page, the timeline, the flame graph and the dump are written, each
    with the trace's numbers in it (460 launches, its pid)."""
    if SANITIZED:
        raise Skip("gpuspy run puts libgpuspy before the sanitizer runtime")
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = re.search(r"```sh\n(.*?)```", readme_section(text, "Quick start"), re.S).group(1)
    lines = [l.split("  #")[0].strip() for l in block.strip().splitlines()]
    shim = os.path.join(tmp, "shim")
    os.mkdir(shim)
    os.symlink(sys.executable, os.path.join(shim, "python"))
    work = os.path.join(tmp, "work")
    os.mkdir(work)
    with open(os.path.join(work, "train.py"), "w") as f:
        f.write(f"import os\nos.execv({os.path.join(BIN, 'prog_train')!r}, ['prog_train', '20', '200'])\n")
    env = dict(os.environ, PATH=shim + ":" + os.path.dirname(GPUSPY) + ":" + os.environ["PATH"],
               LD_LIBRARY_PATH=BIN)
    for k in ("LD_PRELOAD", "GPUSPY_DIR", "GPUSPY_QUIET"):
        env.pop(k, None)
    out = {}
    for line in lines:
        p = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True,
                           timeout=TIMEOUT)
        check(p.returncode == 0, f"`{line}` exited {p.returncode}: {p.stderr[-400:]}")
        out[line] = p.stdout
    check(lines[0] == "gpuspy run -- python train.py" and "Phases" in out[lines[0]] and
          "Diagnoses" in out[lines[0]], f"run: {out[lines[0]][:300]}")
    here = [f for f in os.listdir(work) if f.endswith(".gspy")]
    check(len(here) == 1, f"the hand-preloaded run left {here} in the directory")
    pid = int(re.search(r"-(\d+)\.gspy$", here[0]).group(1))
    rep = out[next(l for l in lines if l == "gpuspy report .")]
    check(f"== pid {pid}:" in rep and re.search(r"\n  data +20 ", rep), f"report .: {rep[:400]}")
    page = open(os.path.join(work, "report.html"), encoding="utf-8").read()
    check(page.lstrip().lower().startswith("<!doctype html>") and re.search(rf'"pid":\s*{pid}\b', page),
          "report.html has not the trace's pid")
    tl = json.load(open(os.path.join(work, "timeline.json")))
    check(sum(1 for e in tl["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "launch") == 460,
          "timeline.json: not 460 launches")
    fl = json.load(open(os.path.join(work, "flame.json")))
    check(fl.get("$schema", "").startswith("https://www.speedscope.app/"), "flame.json is not speedscope's")
    dump = [json.loads(x) for x in open(os.path.join(work, "trace.jsonl"))]
    check(dump[0]["type"] == "process" and dump[0]["pid"] == pid and
          sum(1 for e in dump if e.get("kind") == "launch") == 460, "trace.jsonl: not the trace's 460 launches")


@test
def readme_without_a_gpu_works_as_written(tmp):
    """The README's "Without a GPU" command, run as written from the
    repository's root: it traces and reports (phases and diagnoses), and
    the run it made is removed again."""
    if SANITIZED:
        raise Skip("gpuspy run puts libgpuspy before the sanitizer runtime")
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = re.search(r"```sh\n(.*?)```", readme_section(text, "Without a GPU"), re.S).group(1)
    before = set(os.listdir(ROOT))
    try:
        for line in block.strip().splitlines():
            p = subprocess.run(["sh", "-c", line], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
            check(p.returncode == 0 and "Phases" in p.stdout and "Diagnoses" in p.stdout,
                  f"`{line}`: {p.returncode} {p.stderr[-300:]}")
    finally:
        import shutil
        for d in set(os.listdir(ROOT)) - before:
            path = os.path.join(ROOT, d)
            if os.path.islink(path) or not os.path.isdir(path):
                os.unlink(path)
            else:
                shutil.rmtree(path)
