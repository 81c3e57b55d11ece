# SPDX-License-Identifier: MIT
"""The command line: gpuspy run, misuse, and the library's refusal of unknown option values."""
import json  # noqa: F401
import os  # noqa: F401
import re  # noqa: F401
import shutil  # noqa: F401
import subprocess  # noqa: F401
import sys  # noqa: F401
import tempfile  # noqa: F401
import time  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)


@test
def switches_and_choices_refuse_unknown_values(tmp):
    """On/off variables take 1, on, yes, true and 0, off, no, false (any
    case); another value warns once and keeps the default (GPUSPY_DISABLE=off
    traces: it used to disable, as any value but 0 did). GPUSPY_CUPTI and
    GPUSPY_CLOCK warn on an unknown choice and use auto."""
    def once(env):
        for f in traces(tmp):
            os.unlink(os.path.join(tmp, f))
        p = run("prog_rt_dyn", tmp=tmp, env=dict(LOG_STDERR, **env))
        warn = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
        return warn, [dump(os.path.join(tmp, f))[0] for f in traces(tmp)]

    for v in ("off", "OFF", "no", "false", "0"):
        warn, procs = once({"GPUSPY_DISABLE": v})
        check(warn == [] and len(procs) == 1, f"GPUSPY_DISABLE={v}: {warn} {len(procs)} traces")
    for v in ("1", "on", "Yes", "true"):
        warn, procs = once({"GPUSPY_DISABLE": v})
        check(warn == [] and procs == [], f"GPUSPY_DISABLE={v}: {warn} {len(procs)} traces")
    warn, procs = once({"GPUSPY_DISABLE": "maybe"})
    check(warn == ["gpuspy: GPUSPY_DISABLE=maybe is not 1 or 0 (on or off); using 0"] and len(procs) == 1,
          f"GPUSPY_DISABLE=maybe: {warn} {len(procs)} traces")
    warn, _ = once({"GPUSPY_QUIET": "on", "GPUSPY_MODE": "circle", "GPUSPY_CLOCK": "wall"})
    check(warn == [], f"GPUSPY_QUIET=on still warned: {warn}")
    warn, procs = once({"GPUSPY_CLOCK": "wall", "GPUSPY_CUPTI": "maybe"})
    check(warn == ["gpuspy: GPUSPY_CLOCK=wall is not auto or mono; using auto",
                   "gpuspy: GPUSPY_CUPTI=maybe is not auto, on, off or events; using auto"] and len(procs) == 1,
          f"GPUSPY_CLOCK=wall GPUSPY_CUPTI=maybe: {warn}")
    p = run("prog_nvtx", tmp=tmp, env=dict(LOG_STDERR, GPUSPY_NVTX_NESTING="middle"))
    warn = [l for l in p.stderr.splitlines() if l.startswith("gpuspy:")]
    check(warn == ["gpuspy: GPUSPY_NVTX_NESTING=middle is not innermost or outermost; using innermost"],
          f"GPUSPY_NVTX_NESTING=middle: {warn}")
    warn, procs = once({"GPUSPY_CLOCK": "mono", "GPUSPY_CUPTI": "auto"})
    check(warn == [] and procs[0]["clock"] == "monotonic", f"GPUSPY_CLOCK=mono: {warn} {procs[0]['clock']}")


def _run_env(sanitized=False):
    """The environment gpuspy run gets in these tests: the doubles on the
    library path, nothing preloaded already. Under the sanitizers a test
    is skipped (gpuspy run puts libgpuspy before their runtime) unless it
    says it passes there (sanitized=True: gpuspy refuses before it
    preloads anything, or runs only a shell that makes no CUDA call, which
    ASAN_OPTIONS lets load the runtime second)."""
    if SANITIZED and not sanitized:
        raise Skip("gpuspy run puts libgpuspy before the sanitizer runtime")
    e = dict(os.environ, LD_LIBRARY_PATH=BIN)
    e.pop("LD_PRELOAD", None)
    return e


@test
def run_reports_each_process_and_cuts_the_file(tmp):
    """gpuspy run traces a forking command: one report per process, the
    count of trace files, --buffer-mb applied, each file cut to its chunks."""
    d = os.path.join(tmp, "runs")
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--buffer-mb", "8", "--",
                        os.path.join(BIN, "prog_fork")], env=_run_env(), capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    parent, child = [int(x) for x in p.stdout.split()[1:4:2]]
    check(f"== pid {parent}" in p.stdout and f"== pid {child}" in p.stdout,
          "report of both processes missing")
    check("2 trace files in" in p.stderr, p.stderr)
    path = os.path.join(d, sorted(traces(d))[0])
    proc, _ = dump(path)
    h = header(path)
    check(proc["buffer_bytes"] == 8 << 20, "--buffer-mb not applied")
    check(h["chunk_count"] == 1 and os.path.getsize(path) == proc["file_bytes"] == trimmed_size(h),
          f"the file is not cut to its chunk and strings at exit: {os.path.getsize(path)} bytes, {h}")


@test
def run_makes_a_directory_of_its_own(tmp):
    """Without --dir, gpuspy run makes a new directory: with the default
    name of this second and the next four made (another run started in
    the same second: a launcher's ranks), it traces into NAME-2, and those
    stay empty (it traced into the first, and each run reported the
    other's processes). report DIR takes such names for runs, the newest
    by time, then by suffix."""
    now = time.time()
    pre = [time.strftime("gpuspy-%Y%m%d-%H%M%S", time.localtime(now + k)) for k in range(5)]
    for name in pre:
        os.mkdir(os.path.join(tmp, name), 0o700)
    p = subprocess.run([GPUSPY, "run", "--", os.path.join(BIN, "prog_drv")], cwd=tmp, env=_run_env(),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and all(os.listdir(os.path.join(tmp, n)) == [] for n in pre), f"{p.returncode} {p.stderr}")
    made = [x for x in os.listdir(tmp) if x not in pre and x != "gpuspy-latest"]
    check(len(made) == 1 and made[0] in [name + "-2" for name in pre] and len(traces(os.path.join(tmp, made[0]))) == 1
          and os.readlink(os.path.join(tmp, "gpuspy-latest")) == made[0], f"{made} {p.stderr}")
    src, d = os.path.join(tmp, made[0]), os.path.join(tmp, "many")
    for name in ("gpuspy-20260101-000000", "gpuspy-20260101-000000-2", "gpuspy-20260101-000000-10", "gpuspy-x-2"):
        os.makedirs(os.path.join(d, name))
        shutil.copy(os.path.join(src, traces(src)[0]), os.path.join(d, name))
    p = subprocess.run([GPUSPY, "report", d], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stderr == f"gpuspy: {d} has no traces of its own: reading the newest run, "
          f"{d}/gpuspy-20260101-000000-10\n", f"report DIR: {p.returncode} {p.stderr!r}")


@test
def run_exits_with_the_commands_status(tmp):
    """gpuspy run exits with the command's status, and 128 + N for a signal."""
    e = _run_env()
    p = subprocess.run([GPUSPY, "run", "--dir", tmp, "--no-report", "--", "sh", "-c", "exit 7"], env=e,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 7 and p.stdout == "", f"exit {p.returncode}")
    p = subprocess.run([GPUSPY, "run", "--dir", tmp, "--", "sh", "-c", "kill -9 $$"], env=e,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 128 + 9, f"killed child: exit {p.returncode}")


def _sigterm_reaches(tmp, env, sleep):
    script = f"trap 'echo got TERM; exit 3' TERM; echo ready; sleep {sleep} >/dev/null 2>&1 & wait"
    q = subprocess.Popen([GPUSPY, "run", "--dir", tmp, "--no-report", "--", "sh", "-c", script], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(q.stdout.readline() == "ready\n", "the command did not start")
    q.terminate()
    out, _ = q.communicate(timeout=TIMEOUT)
    check(q.returncode == 3 and "got TERM" in out, f"SIGTERM not forwarded: {q.returncode} {out!r}")


@test
def run_forwards_a_signal_to_the_command(tmp):
    """A SIGTERM sent to gpuspy run reaches the command, whose handler
    decides the exit status."""
    _sigterm_reaches(tmp, _run_env(), 20)


@test
def run_forwards_a_signal_sent_right_after_the_fork(tmp):
    """A SIGTERM that comes between the fork and gpuspy's note of the
    child's pid (tests/progs/fork_delay.c holds gpuspy there for 300 ms while the
    command runs) still reaches the command: gpuspy waits, then goes on."""
    _sigterm_reaches(tmp, dict(_run_env(), LD_PRELOAD=os.path.join(BIN, "fork_delay.so")), 2)


@test
def run_refuses_a_bad_option_in_one_line(tmp):
    """An option value gpuspy run does not know is one line and exit 2."""
    p = subprocess.run([GPUSPY, "run", "--cupti", "maybe", "--", "true"], capture_output=True, text=True)
    check(p.returncode == 2 and p.stderr.count("\n") == 1, "bad option not refused in one line")


@test
def run_without_cuda_leaves_no_directory(tmp):
    """A command that makes no CUDA call: the directory gpuspy made for the
    run (the default one, or --dir) is removed again; one that was there
    stays; one line says there is no trace."""
    e = _run_env()
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    for opts in ([], ["--dir", "made"], ["--dir", "."]):
        p = subprocess.run([GPUSPY, "run", *opts, "--", "true"], env=e, cwd=empty, capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and os.listdir(empty) == [] and p.stderr.count("\n") == 1 and
              "no trace" in p.stderr, f"gpuspy run {opts} -- true: {p.stderr!r}, left {os.listdir(empty)}")


@test
def run_refuses_a_missing_gpuspy_lib(tmp):
    """GPUSPY_LIB naming no file is a one-line error before anything runs."""
    p = subprocess.run([GPUSPY, "run", "--", "sh", "-c", "echo ran"],
                       env=dict(_run_env(), GPUSPY_LIB=tmp + "/none.so"),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and p.stdout == "" and p.stderr.count("\n") == 1 and "none.so" in p.stderr,
          f"a missing GPUSPY_LIB: rc {p.returncode} {p.stdout!r} {p.stderr!r}")


@test
def run_preloads_gpuspy_lib(tmp):
    """GPUSPY_LIB: that library is preloaded instead of the one next to
    gpuspy, and it traces."""
    other = os.path.join(tmp, "other-libgpuspy.so")
    shutil.copy(os.path.realpath(LIB), other)
    d = os.path.join(tmp, "runs-lib")
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c",
                        'echo "$LD_PRELOAD"; exec "$0" 1', os.path.join(BIN, "prog_stacks")],
                       env=dict(_run_env(), GPUSPY_LIB=other), capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout.splitlines()[0] == other and len(traces(d)) == 1,
          f"GPUSPY_LIB: rc {p.returncode} {p.stdout!r} {traces(d)}")


FLUSH_ABC = "GPUSPY_CUPTI_FLUSH=abc is not a number of seconds (1..3600); using 5"


@test
def warnings_are_notes_not_the_programs_stderr(tmp):
    """A value gpuspy cannot read (GPUSPY_CUPTI_FLUSH=abc), GPUSPY_QUIET=0,
    no GPUSPY_LOG: the program's stdout and stderr are byte for byte what
    they are untraced, and the trace keeps the warning as its one note,
    which the report shows under the process's line and --json and the
    dump carry. GPUSPY_LOG=stderr: the line gpuspy wrote before, once,
    first; with GPUSPY_QUIET=1 too, none, and the note still."""
    env = {"GPUSPY_CUPTI_FLUSH": "abc", "GPUSPY_QUIET": "0"}
    a = run("prog_rt_dyn", tmp=tmp, env=env, preload=False)
    b = run("prog_rt_dyn", tmp=tmp, env=env)
    check((b.stdout, b.stderr) == (a.stdout, a.stderr), f"traced output differs: {b.stderr!r} vs {a.stderr!r}")
    check(notes(tmp) == [FLUSH_ABC], f"notes {notes(tmp)!r}")
    text = report_text(tmp)
    check(text.count("gpuspy's notes") == 1 and f" 0 dropped\n   gpuspy's notes:\n     {FLUSH_ABC}\n   gpuspy's own time"
          in text, f"report:\n{text}")
    proc = report_json(tmp)["processes"][0]
    check(proc["notes"] == [FLUSH_ABC] and "notes_lost" not in proc, f"--json: {proc.get('notes')!r}")
    for f in traces(tmp):
        os.unlink(os.path.join(tmp, f))
    c = run("prog_rt_dyn", tmp=tmp, env=dict(env, GPUSPY_LOG="stderr"))
    check(c.stdout == a.stdout and c.stderr == f"gpuspy: {FLUSH_ABC}\n" + a.stderr, f"GPUSPY_LOG=stderr: {c.stderr!r}")
    check(notes(tmp) == [FLUSH_ABC], f"GPUSPY_LOG=stderr: notes {notes(tmp)!r}")
    for f in traces(tmp):
        os.unlink(os.path.join(tmp, f))
    q = run("prog_rt_dyn", tmp=tmp, env=dict(env, GPUSPY_LOG="stderr", GPUSPY_QUIET="1"))
    check((q.stdout, q.stderr) == (a.stdout, a.stderr) and notes(tmp) == [FLUSH_ABC],
          f"GPUSPY_QUIET=1: {q.stderr!r}, notes {notes(tmp)!r}")


@test
def notes_that_do_not_fit_are_counted_lost(tmp):
    """15 messages of 99 bytes (tests/hostile/prog_notes), made after the
    trace exists, or before (kept in the early buffer and copied in): the
    1024-byte notes hold the first 10 lines (1000 bytes), the other 5 are
    counted lost, and the report, --json and the dump say so."""
    env = {"GPUSPY_CUPTI": "off", "GPUSPY_STACKS": "off"}  # no note of their own
    want = [f"p0 m{i:04d} " + "x" * 90 for i in range(10)]
    for when in ("after", "early"):
        d = os.path.join(tmp, when)
        os.makedirs(d)
        p = run("prog_notes", ["15", "99", "1", when], tmp=d, env=env)
        check(p.stdout == "notes done\n" and gpuspy_lines(p.stderr) == [], f"{when}: {p.stdout!r} {p.stderr!r}")
        proc, _ = only_trace(d)
        check(proc.get("notes") == want and proc.get("notes_lost") == 5,
              f"{when}: notes {proc.get('notes')!r}, lost {proc.get('notes_lost')}")
        text = report_text(d)
        shown = "".join(f"     {w}\n" for w in want)
        check(f"   gpuspy's notes:\n{shown}     5 more notes were lost: the trace keeps 1024 bytes of notes\n"
              in text, f"{when}: report:\n{text}")
        j = report_json(d)["processes"][0]
        check(j["notes"] == want and j["notes_lost"] == 5, f"{when}: --json {j.get('notes_lost')}")
    d = os.path.join(tmp, "one")
    os.makedirs(d)
    run("prog_notes", ["11", "99"], tmp=d, env=env)
    check("     1 more note was lost: the trace keeps 1024 bytes of notes\n" in report_text(d), "1 lost")


@test
def run_relays_notes_after_the_program(tmp):
    """gpuspy run says gpuspy's messages about the command's processes on
    its own stderr after the command's output, never inside it, each once,
    as "gpuspy: pid N: ...": the program's from its trace, and the shell's
    (it made no trace) from the log run set GPUSPY_LOG to, which is gone
    afterwards: the same text, said once for both. GPUSPY_QUIET=1: none, the note still in the trace. The
    user's GPUSPY_LOG=stderr: the lines came as they were made, not
    repeated. The user's own log file: the trace's note repeated, the log
    left to the user. A process whose trace could not be made (its
    GPUSPY_DIR does not exist): its message, through the log, and run says
    no trace was left, not that no CUDA call was made."""
    script = f'"{BIN}/prog_rt_dyn" >/dev/null; echo "the program is done" >&2'

    def gpuspy_run(name, **extra):
        d = os.path.join(tmp, name)
        p = subprocess.run([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c", script],
                           env=dict(_run_env(), GPUSPY_CUPTI_FLUSH="abc", **extra), capture_output=True,
                           text=True, timeout=TIMEOUT)
        t = traces(d)
        check(p.returncode == 0 and len(t) == 1 and os.listdir(d) == t, f"{name}: {p.returncode} {os.listdir(d)}")
        proc, _ = dump(os.path.join(d, t[0]))
        check(proc.get("notes") == [FLUSH_ABC], f"{name}: notes {proc.get('notes')!r}")
        return d, proc["pid"], p.stderr.splitlines()

    d, pid, lines = gpuspy_run("relayed")
    check(lines == ["the program is done", f"gpuspy: pid {pid} and 1 other process: {FLUSH_ABC}",
                    f"gpuspy: 1 trace file in {d}"], f"relayed: {lines}")
    d, pid, lines = gpuspy_run("quiet", GPUSPY_QUIET="1")
    check(lines == ["the program is done", f"gpuspy: 1 trace file in {d}"], f"GPUSPY_QUIET=1: {lines}")
    d, pid, lines = gpuspy_run("live", GPUSPY_LOG="stderr")
    check(lines == [f"gpuspy: {FLUSH_ABC}"] * 2 + ["the program is done", f"gpuspy: 1 trace file in {d}"],
          f"GPUSPY_LOG=stderr: {lines}")
    log = os.path.join(tmp, "mine.log")
    d, pid, lines = gpuspy_run("mine", GPUSPY_LOG=log)
    check(lines == ["the program is done", f"gpuspy: pid {pid}: {FLUSH_ABC}", f"gpuspy: 1 trace file in {d}"],
          f"GPUSPY_LOG=file: {lines}")
    got = open(log).read().splitlines()
    check(len(got) == 2 and f"gpuspy[{pid}]: {FLUSH_ABC}" in got, f"the user's log: {got}")
    d = os.path.join(tmp, "none")
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c",
                        f'GPUSPY_DIR=/nonexistent/gpuspy "{BIN}/prog_rt_dyn" >/dev/null'], env=_run_env(),
                       capture_output=True, text=True, timeout=TIMEOUT)
    lines = p.stderr.splitlines()
    check(p.returncode == 0 and len(lines) == 2 and not os.path.exists(d) and
          re.fullmatch(r"gpuspy: pid \d+: cannot create a trace file in /nonexistent/gpuspy: No such file or "
                       r"directory; tracing off", lines[0]) and
          lines[1] == "gpuspy: sh left no trace: gpuspy's messages above say why", f"no trace made: {lines}")


@test
def run_of_a_command_without_cuda_says_so(tmp):
    """A command that makes no CUDA call and exits 3: run exits 3, says so
    in one line and removes the directory it made. Run under the
    sanitizers too: with no note to relay, run gave qsort a null array
    (UBSan's report)."""
    d = os.path.join(tmp, "none")
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c", "exit 3"],
                       env=_run_env(sanitized=True), capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 3 and p.stdout == "" and not os.path.exists(d) and
          p.stderr == "gpuspy: sh made no CUDA call that gpuspy saw; no trace written\n",
          f"exit {p.returncode}: {p.stderr!r}")


@test
def run_says_each_message_once_and_at_most_twenty(tmp):
    """A command of 32 processes (a shell, its seq and 30 programs), each
    told GPUSPY_NVML_MS=zz and each program its own bad
    GPUSPY_CUPTI_FLUSH: run says the traces' notes in the order their
    processes started, the first program's two, the common one once for it
    and 31 other processes, then the next 18 programs' own, each once, and
    one line for the 11 it did not say, naming its log, which it keeps:
    all 62 messages."""
    d = os.path.join(tmp, "many")
    script = f'for i in $(seq 30); do GPUSPY_CUPTI_FLUSH=x$i "{BIN}/prog_rt_dyn" >/dev/null; done'
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c", script],
                       env=dict(_run_env(), GPUSPY_NVML_MS="zz"), capture_output=True, text=True, timeout=TIMEOUT)
    lines = p.stderr.splitlines()
    common = "GPUSPY_NVML_MS=zz is not a number of milliseconds (0..60000); using 100"
    own = [re.fullmatch(r"gpuspy: pid (\d+): GPUSPY_CUPTI_FLUSH=x(\d+) is not a number of seconds \(1\.\.3600\); "
                        r"using 5", line) for line in lines[:1] + lines[2:20]]
    check(p.returncode == 0 and len(lines) == 22 and len(traces(d)) == 30 and all(own) and
          [int(m.group(2)) for m in own] == list(range(1, 20)) and
          lines[1] == f"gpuspy: pid {own[0].group(1)} and 31 other processes: {common}" and
          re.fullmatch(r"gpuspy: 11 more messages not shown here; all of them are in " + re.escape(d) +
                       r"/gpuspy-run-\d+\.log", lines[20]) and
          lines[21] == f"gpuspy: 30 trace files in {d}", f"rc {p.returncode}, {len(lines)} lines: {lines}")
    log = lines[20].rsplit(" ", 1)[1]
    got = open(log).read().splitlines()
    check(len(got) == 62 and sum(common in x for x in got) == 32, f"the log kept: {len(got)} lines")


@test
def debug_says_how_entry_points_were_handed_out(tmp):
    """GPUSPY_DEBUG=1: at exit, after the trace was finished, one note
    saying how entry points were handed out (none unwrapped or passed
    through with the doubles: the driver double's table answers with
    gpuspy's own wrappers); nothing on the program's stderr."""
    p = run("prog_stacks", ["1"], tmp=tmp, env={"GPUSPY_DEBUG": "1", "GPUSPY_QUIET": "0"})
    dbg = notes(tmp)
    check(len(dbg) == 1 and re.fullmatch(r"pid \d+: entry points handed out: \d+ wrapped, \d+ gpuspy's "
                                         r"already, 0 unwrapped \(real pointer differed\), 0 passed through "
                                         r"\(not a real function\)", dbg[0]), f"GPUSPY_DEBUG: {dbg!r}")
    check(gpuspy_lines(p.stderr) == [], f"GPUSPY_DEBUG wrote on the program's stderr: {p.stderr!r}")


@test
def command_line_errors_are_one_line(tmp):
    """Every misuse of gpuspy's commands: exit status 2, nothing on stdout,
    one line on stderr that says what is wrong; --version and --help
    exactly as documented."""
    run("prog_train", ["1", "2"], tmp=tmp)
    g = os.path.join(tmp, traces(tmp)[0])
    cases = [
        (["--version", "x"], "--version takes no arguments"), (["--help", "x"], "--help takes no arguments"),
        (["frob"], "unknown command 'frob'"),
        (["report"], "report: no trace (FILE|DIR) given"), (["report", "--json"], "report: no trace (FILE|DIR) given"),
        (["report", "--color"], "report: --color needs a value"), (["report", "--colour", g], "report: unknown option --colour"),
        (["report", "--color", "red", g], "--color red: use auto, always or never"),
        (["dump"], "dump: no trace (FILE.gspy) given"), (["dump", g, "-o"], "dump: -o needs a value"),
        (["dump", g, g], "dump: one trace at a time"), (["dump", "-x", g], "dump: unknown option -x"),
        (["export", "--format", "chrome", "-o", os.path.join(tmp, "x.json")], "export: no trace (FILE|DIR) given"),
        (["export", "--format", "chrome", g], "export: no output (-o OUT.json) given"),
        (["export", g, "-o", os.path.join(tmp, "x.json"), "--format"], "export: --format needs a value"),
        (["export", "--format", "chrome", g, "-o"], "export: -o needs a value"),
        (["export", g, "-o", os.path.join(tmp, "x.json")], "export: --format (missing) is not known"),
        (["run"], "run: no command given"), (["run", "--"], "run: no command given"),
        (["run", "--dir", "--", "true"], "run: --dir needs a value"), (["run", "--cupti"], "run: --cupti needs a value"),
        (["run", "--buffer-mb"], "run: --buffer-mb needs a value"),
        (["run", "--host-alloc", "--", "true"], "run: --host-alloc needs a value"),
        (["run", "--bogus", "--", "true"], "run: unknown option --bogus"),
        (["run", "--buffer-mb", "1048577", "--", "true"], "run: --buffer-mb 1048577 is not a size in MiB (1..1048576)"),
        (["run", "--buffer-mb", "-5", "--", "true"], "run: --buffer-mb -5 is not a size in MiB (1..1048576)"),
        (["run", "--buffer-mb", "0", "--", "true"], "run: --buffer-mb 0 is not a size in MiB (1..1048576)"),
    ]
    for args, want in cases:
        p = subprocess.run([GPUSPY, *args], capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and
              p.stderr.startswith("gpuspy: error: " + want), f"gpuspy {args}: rc {p.returncode} {p.stderr!r}")
    check(not os.path.exists(os.path.join(tmp, "x.json")), "a refused export created its output")
    p = subprocess.run([GPUSPY, "--version"], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and re.fullmatch(r"gpuspy \d+\.\d+\.\d+ \(trace format 3\)\n", p.stdout),
          f"--version: {p.stdout!r}")
    p = subprocess.run([GPUSPY, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout.startswith("usage: gpuspy run") and p.stderr == "", "--help")
    p = subprocess.run([GPUSPY], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 2 and p.stdout == "" and p.stderr.startswith("usage: gpuspy run"), "no command")


@test
def run_refuses_a_trace_directory_not_its_own(tmp):
    """gpuspy run reuses only a directory of the user's own: a symbolic
    link to one (--dir LINK), one anybody may write to without the sticky
    bit and, as root, another user's (--dir) are each refused in one
    line, status 1, before the command runs, where the traces went into
    them. The default name planted for the next seconds by user nobody in
    a sticky directory like /tmp is left alone: run makes NAME-2, its own.
    Without root the owner part is skipped."""
    e = _run_env(sanitized=True)
    prog = [os.path.join(BIN, "prog_stacks"), "1"]
    mine = os.path.join(tmp, "mine")
    os.mkdir(mine, 0o700)
    link = os.path.join(tmp, "link")
    os.symlink(mine, link)
    open_dir = os.path.join(tmp, "open")
    os.mkdir(open_dir)
    os.chmod(open_dir, 0o777)
    cases = [(link, mine, "is a symbolic link"), (open_dir, open_dir, "is writable by others and not sticky")]
    root = os.geteuid() == 0
    if root:
        other = os.path.join(tmp, "other")
        os.mkdir(other)
        os.chmod(other, 0o700)
        os.chown(other, 65534, 65534)
        cases.append((other, other, "belongs to another user (uid 65534)"))
    for d, inside, why in cases:
        p = subprocess.run([GPUSPY, "run", "--dir", d, "--no-report", "--", *prog], env=e, capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and p.stderr.count("\n") == 1 and
              p.stderr.startswith(f"gpuspy: error: {d}: the trace directory {why}") and p.stdout == "" and
              os.listdir(inside) == [], f"--dir {d}: {p.returncode} {p.stderr!r} {os.listdir(inside)}")
    if not root or SANITIZED:
        raise Skip("not root (no chown), or a sanitizer (the planted name's run traces): the --dir parts passed")
    cwd = os.path.join(tmp, "shared")
    os.mkdir(cwd)
    os.chmod(cwd, 0o1777)
    now = time.time()
    planted = [time.strftime("gpuspy-%Y%m%d-%H%M%S", time.localtime(now + k)) for k in range(6)]
    for name in planted:
        os.mkdir(os.path.join(cwd, name))
        os.chmod(os.path.join(cwd, name), 0o700)
        os.chown(os.path.join(cwd, name), 65534, 65534)
    p = subprocess.run([GPUSPY, "run", "--no-report", "--", *prog], env=e, cwd=cwd, capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(time.time() < now + 5, "too slow to hit a planted name")
    made = [x for x in os.listdir(cwd) if x not in planted and x != "gpuspy-latest"]
    check(p.returncode == 0 and all(os.listdir(os.path.join(cwd, n)) == [] for n in planted) and len(made) == 1 and
          made[0] in [n + "-2" for n in planted] and os.stat(os.path.join(cwd, made[0])).st_uid == os.geteuid() and
          len(traces(os.path.join(cwd, made[0]))) == 1, f"the default name planted: {p.returncode} {p.stderr!r} {made}")


@test
def run_cuts_the_traces_of_a_killed_command(tmp):
    """A command killed by a signal (SIGKILL here; Ctrl-C likewise) cannot
    cut its own trace: it would keep its whole 64 MiB buffer and 16 MiB
    string table. run saw it end, so it cuts the file as the library does
    at a clean exit: the string table's used bytes move down to right
    after the chunks in use (5000 launches: one 64 KiB chunk), and the
    file ends with them: exactly header + chunk + strings. Every event
    still reads back, by its kernel's name, and the trace still says it
    did not exit cleanly. With its 1 MiB buffer full (16 chunks of 16),
    the table has no room below it: it stays, cut to its used bytes."""
    for mb, launches, chunks in ((64, 5000, 1), (1, 200000, 16)):
        d = os.path.join(tmp, f"runs-{mb}")
        p = subprocess.run([GPUSPY, "run", "--dir", d, "--buffer-mb", str(mb), "--no-report", "--",
                            os.path.join(BIN, "prog_kill"), str(launches)], env=_run_env(), capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(p.returncode == 137, f"exit {p.returncode}: {p.stderr}")
        path = os.path.join(d, traces(d)[0])
        proc, ev = dump(path)
        h, size = header(path), os.path.getsize(path)
        check(h["chunk_count"] == chunks and h["chunks_claimed"] == chunks + (mb << 4) and
              h["strtab_offset"] == 4096 + chunks * CHUNK and h["strtab_size"] == h["strtab_used"] > 0 and
              size == proc["file_bytes"] == 4096 + chunks * CHUNK + h["strtab_used"],
              f"{mb} MiB: a killed command's trace is {size} bytes, header {h}")
        recorded = launches if chunks == 1 else len(ev)
        check(len(ev) == recorded and proc["state"] == "running or killed" and
              len(ev) + proc["dropped"] == launches and {e.get("name") for e in ev} == {"doomed_kernel"} and
              [e["grid"][0] for e in ev] == [(i % 1000) + 1 for i in range(len(ev))],
              f"{mb} MiB: {len(ev)} events, {proc['dropped']} dropped, {proc['state']}")


@test
def run_cuts_the_trace_of_an__exit(tmp):
    """A process that ends by _exit (os._exit) runs no exit handler: its
    trace says it exited, with its status 3, but keeps its whole buffer.
    run cuts it as a killed command's: exactly header + chunk + strings,
    its 10 events read back."""
    d = os.path.join(tmp, "exit")
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--no-report", "--", os.path.join(BIN, "prog_life"), "_exit"],
                       env=_run_env(), capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 3, f"exit {p.returncode}: {p.stderr}")
    path = os.path.join(d, traces(d)[0])
    proc, ev = dump(path)
    h, size = header(path), os.path.getsize(path)
    check(size == proc["file_bytes"] == 4096 + CHUNK + h["strtab_used"] and len(ev) == 10 and
          proc["state"] == "exited" and proc.get("exit_code") == 3, f"{size} bytes, {len(ev)} events, {proc}")


@test
def run_never_cuts_the_trace_of_a_process_still_running(tmp):
    """The command leaves a process running (a daemon) whose header's pid
    run cannot see (a pid of another pid namespace, as under `unshare -p`:
    here the pid is changed to one that does not exist): run leaves its
    trace whole, since the library holds a lock on the file while it
    writes it. The process's second batch (120,000 calls after run ended)
    reads back, and the library says nothing of a cut file on its stderr
    (GPUSPY_LOG=stderr: run cut it, and the batch was lost)."""
    d, out, err, flag = (os.path.join(tmp, n) for n in ("runs", "out", "err", "flag"))
    fifo = os.path.join(tmp, "go")
    os.mkfifo(fifo)
    w = os.open(fifo, os.O_RDWR)
    script = (f'"{os.path.join(BIN, "prog_live")}" 0 <"{fifo}" >"{out}" 2>"{err}" & '
              f'while [ ! -e "{flag}" ]; do sleep 0.05; done')
    r = subprocess.Popen([GPUSPY, "run", "--dir", d, "--no-report", "--", "sh", "-c", script],
                         env=dict(_run_env(), GPUSPY_LOG="stderr"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        end = time.time() + TIMEOUT
        while time.time() < end and not (os.path.exists(out) and open(out).read()):
            time.sleep(0.05)
        path = os.path.join(d, traces(d)[0])
        with open(path, "r+b") as f:  # the header's pid (include/gpuspy/format.h)
            f.seek(64)
            f.write((0x7ffffff0).to_bytes(4, "little"))
        open(flag, "w").close()
        r.communicate(timeout=TIMEOUT)
        os.write(w, b"go\n")
        while time.time() < end and dump(path)[0]["state"] != "exited":
            time.sleep(0.1)
    finally:
        os.close(w)
        if r.poll() is None:
            r.kill()
    proc, ev = dump(path)
    check(open(out).read() == "batch 1 done 0\nbatch 2 done 0\n" and "cut" not in open(err).read(),
          f"output {open(out).read()!r}, stderr {open(err).read()[-300:]!r}")
    check(proc["state"] == "exited" and len(ev) >= 120000, f"{proc['state']}, {len(ev)} events")


@test
def report_of_a_directory_reads_its_newest_run(tmp):
    """The quick start as written: `gpuspy run -- CMD` puts its traces in
    ./gpuspy-DATE-TIME/, then `gpuspy report .` (and `export .`) read the
    newest such run and say which; `top --once` follows it too. A
    directory with neither traces nor runs is one error line; `serve` of a
    directory that is not there is an error, not an empty node."""
    e = _run_env()
    p = subprocess.run([GPUSPY, "run", "--no-report", "--", os.path.join(BIN, "prog_train"), "3", "10"], env=e,
                       cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, p.stderr)
    runs = [d for d in os.listdir(tmp) if d.startswith("gpuspy-2")]
    check(len(runs) == 1 and os.readlink(os.path.join(tmp, "gpuspy-latest")) == runs[0], f"run directories {runs}")
    r = subprocess.run([GPUSPY, "report", "--color", "never", "."], cwd=tmp, capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(r.returncode == 0 and "Phases" in r.stdout and
          r.stderr == f"gpuspy: . has no traces of its own: reading the newest run, ./{runs[0]}\n",
          f"report .: {r.returncode} {r.stderr!r}")
    x = subprocess.run([GPUSPY, "export", "--format", "chrome", ".", "-o", "t.json"], cwd=tmp, capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(x.returncode == 0 and json.load(open(os.path.join(tmp, "t.json")))["traceEvents"], x.stderr)
    os.makedirs(os.path.join(tmp, "empty"))
    n = subprocess.run([GPUSPY, "report", "empty"], cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(n.returncode == 1 and n.stderr.count("\n") == 1 and "no .gspy or .jsonl traces" in n.stderr, n.stderr)
    s = subprocess.run([GPUSPY, "serve", "--listen", "127.0.0.1:0", "nowhere"], cwd=tmp, capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(s.returncode == 1 and s.stderr.startswith("gpuspy: error: serve: nowhere: "), f"serve: {s.stderr!r}")


def _fallback_report(cwd, *args):
    """`gpuspy report --json . ARGS` in cwd: its exit, the run it said it
    read (None when it said none), its stderr."""
    r = subprocess.run([GPUSPY, "report", "--json", *args, "."], cwd=cwd, capture_output=True, text=True,
                       timeout=TIMEOUT)
    m = re.fullmatch(r"gpuspy: \. has no traces of its own: reading the newest run(?: with traces)?, \./(\S+)\n",
                     r.stderr)
    return r.returncode, m.group(1) if m else None, r.stderr


@test
def report_of_a_directory_skips_what_is_not_a_run(tmp):
    """The run directory a DIR without traces falls back to is one `gpuspy
    run` names, gpuspy-YYYYMMDD-HHMMSS: a gpuspy-notes directory, an
    `-o gpuspy-x` one, a longer name or a file beside the run (each sorting
    after it) is not read instead of it; nor is a newer run of another
    user's, planted in a shared directory (as root)."""
    e = _run_env()
    run = "gpuspy-20260101-000000"
    p = subprocess.run([GPUSPY, "run", "-o", run, "--no-report", "--", os.path.join(BIN, "prog_train"), "2", "10"],
                       env=e, cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and len(traces(os.path.join(tmp, run))) == 1, p.stderr)
    for d in ("gpuspy-notes", "gpuspy-x", "gpuspy-20260101-0000009", "gpuspy-2026010-1000000"):
        os.mkdir(os.path.join(tmp, d))
    open(os.path.join(tmp, "gpuspy-20991231-235959"), "w").close()
    rc, read, err = _fallback_report(tmp)
    check(rc == 0 and read == run, f"report .: {rc} {err!r}")
    if os.geteuid() != 0:
        raise Skip("not root: another user's run directory cannot be made (chown); the names part passed")
    other = os.path.join(tmp, "gpuspy-20991231-235958")
    shutil.copytree(os.path.join(tmp, run), other)
    for f in [other] + [os.path.join(other, t) for t in os.listdir(other)]:
        os.chown(f, 65534, 65534)
    rc, read, err = _fallback_report(tmp)
    check(rc == 0 and read == run, f"another user's run was read: {rc} {err!r}")


@test
def report_of_a_directory_reads_the_newest_run_with_traces(tmp):
    """A newer run that has no traces (yet, or never will) does not hide
    an older one that has: report reads the newest run with traces, and
    says it skipped some. With no run holding traces it is the one error
    line."""
    e = _run_env()
    old, new = "gpuspy-20260101-000000", "gpuspy-20260102-000000"
    p = subprocess.run([GPUSPY, "run", "-o", old, "--no-report", "--", os.path.join(BIN, "prog_train"), "2", "10"],
                       env=e, cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and len(traces(os.path.join(tmp, old))) == 1, p.stderr)
    os.mkdir(os.path.join(tmp, new))
    rc, read, err = _fallback_report(tmp)
    check(rc == 0 and read == old and "with traces" in err, f"report .: {rc} {err!r}")
    shutil.rmtree(os.path.join(tmp, old))
    r = subprocess.run([GPUSPY, "report", "."], cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and "no .gspy or .jsonl traces" in r.stderr, r.stderr)


@test
def report_of_a_directory_prefers_gpuspy_latest(tmp):
    """DIR/gpuspy-latest, the link `gpuspy run` makes, names the run to
    read before any newer name: only a link of ours, to a run directory
    (gpuspy-YYYYMMDD-HHMMSS) right inside DIR. One to elsewhere, to
    another name or to a run without traces is passed over for the newest
    run with traces."""
    e = _run_env()
    old, new = "gpuspy-20260101-000000", "gpuspy-20260102-000000"
    p = subprocess.run([GPUSPY, "run", "-o", old, "--no-report", "--", os.path.join(BIN, "prog_train"), "2", "10"],
                       env=e, cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and len(traces(os.path.join(tmp, old))) == 1, p.stderr)
    shutil.copytree(os.path.join(tmp, old), os.path.join(tmp, new))
    latest = os.path.join(tmp, "gpuspy-latest")
    os.symlink(old, latest)
    rc, read, err = _fallback_report(tmp)
    check(rc == 0 and read == old and "with traces" not in err, f"gpuspy-latest -> {old}: {rc} {err!r}")
    os.mkdir(os.path.join(tmp, "sub"))
    shutil.copytree(os.path.join(tmp, old), os.path.join(tmp, "sub", old))
    os.mkdir(os.path.join(tmp, "gpuspy-20260103-000000"))
    for target in (os.path.join(tmp, "sub", old), os.path.join("sub", old), "sub", "gpuspy-20260103-000000",
                   "gpuspy-20269999-99999"):
        os.unlink(latest)
        os.symlink(target, latest)
        rc, read, err = _fallback_report(tmp)
        check(rc == 0 and read == new, f"gpuspy-latest -> {target}: {rc} {err!r}")


@test
def every_command_has_help_with_its_options(tmp):
    """`gpuspy CMD --help`, `-h` and `gpuspy help CMD` print the command's
    usage and every option its parser takes (found in its source under
    tools/cmd/), each described; a run's own command keeps its -h; help
    of no command is one error line."""
    srcs = {"report": "report.c", "run": "run.c", "dump": "dump.c", "export": "export.c", "diff": "diff.c",
            "top": "top.c", "serve": "serve.c", "env": "env.c", "record": "control.c"}
    for cmd, src in srcs.items():
        text = open(os.path.join(ROOT, "tools", "cmd", src)).read()
        opts = set(re.findall(r'strcmp\((?:argv\[i\]|a), "(--?[a-z][a-z-]*)"\)', text)) - {"--"}
        outs = [subprocess.run([GPUSPY, *args], capture_output=True, text=True, timeout=TIMEOUT)
                for args in ([cmd, "--help"], [cmd, "-h"], ["help", cmd])]
        check(all(o.returncode == 0 and o.stdout == outs[0].stdout for o in outs), f"{cmd}: {outs[0].stderr}")
        check(outs[0].stdout.startswith(f"usage: gpuspy {cmd}"), outs[0].stdout[:200])
        listed = set(re.findall(r"^  (--?[a-z][a-z-]*)", outs[0].stdout, re.M))
        check(opts <= listed, f"{cmd}: options not in its help: {sorted(opts - listed)}")
    p = subprocess.run([GPUSPY, "run", "--no-report", "--", "sh", "-c", "echo $1", "sh", "-h"], env=_run_env(),
                       cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.stdout == "-h\n", f"run's command lost its -h: {p.stdout!r}")
    # -h after an option's value is help; an option's value is not (it
    # was "unknown option -h", and `-o --help CMD` printed help).
    p = subprocess.run([GPUSPY, "run", "-o", "d", "-h"], cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout.startswith("usage: gpuspy run"), f"run -o d -h: {p.stderr!r}")
    p = subprocess.run([GPUSPY, "run", "--no-report", "-o", "--help", "sh", "-c", "echo ran"], env=_run_env(),
                       cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.stdout == "ran\n", f"run -o --help CMD: {p.stdout!r} {p.stderr!r}")
    p = subprocess.run([GPUSPY, "help", "nosuch"], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr)


@test
def man_page_and_completion_come_from_the_help_table(tmp):
    """docs/gpuspy.1 (installed by `make install` and the .deb) is
    `gpuspy help --man`, from the help table: a change to the table that
    did not remake it fails here; it names every command and its options.
    The bash completion, from the same table, completes a command and its
    options."""
    man = subprocess.run([GPUSPY, "help", "--man"], capture_output=True, text=True, timeout=TIMEOUT).stdout
    check(man == open(os.path.join(ROOT, "docs", "gpuspy.1")).read(),
          "docs/gpuspy.1 is not `gpuspy help --man`: remake it (tools/gpuspy help --man > docs/gpuspy.1)")
    for word in (".SS report", ".SS export", "\\-\\-fail\\-if", "\\-\\-html", "\\-\\-listen"):
        check(word in man, f"{word} not in the man page")
    comp = os.path.join(tmp, "c.bash")
    with open(comp, "w") as f:
        f.write(subprocess.run([GPUSPY, "help", "--bash"], capture_output=True, text=True, timeout=TIMEOUT).stdout)
    p = subprocess.run(["bash", "-c", f"source {comp}; COMP_WORDS=(gpuspy rep); COMP_CWORD=1; _gpuspy; "
                        "echo ${COMPREPLY[@]}; COMP_WORDS=(gpuspy export --f); COMP_CWORD=2; _gpuspy; "
                        "echo ${COMPREPLY[@]}"], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.stdout == "report\n--format\n", f"completion: {p.stdout!r} {p.stderr}")
    # File names are neither split nor globbed, and the user's shell keeps
    # no variable of the completion's (it had `a b.gspy` as [a] [b.gspy], a
    # file named `*` as every file, and $opts left set).
    for name in ("a b.gspy", "*"):
        open(os.path.join(tmp, name), "w").close()
    p = subprocess.run(["bash", "-c", f"source {comp}; COMP_WORDS=(gpuspy report ''); COMP_CWORD=2; _gpuspy; "
                        "printf '[%s]' \"${COMPREPLY[@]}\"; echo \" ${opts-unset}\""], cwd=tmp,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(sorted(re.findall(r"\[([^]]*)\]", p.stdout)) == ["*", "a b.gspy", "c.bash"] and
          p.stdout.endswith(" unset\n"), f"completion of files: {p.stdout!r} {p.stderr}")
    # zsh's: the #compdef file's body completes when run (through bash's
    # bashcompinit it only defined a function: the first TAB did nothing),
    # with compadd and _files stubbed to print what they are given.
    if shutil.which("zsh"):
        zc = os.path.join(tmp, "_gpuspy")
        with open(zc, "w") as f:
            f.write(subprocess.run([GPUSPY, "help", "--zsh"], capture_output=True, text=True, timeout=TIMEOUT).stdout)
        p = subprocess.run(["zsh", "-f", "-c", "compadd() { [[ $1 == -- ]] && shift; print -r -- \"$*\"; }; "
                            "_files() { print FILES; }; words=(gpuspy rep); CURRENT=2; source " + zc +
                            "; words=(gpuspy export --f); CURRENT=3; PREFIX=--f; source " + zc +
                            "; words=(gpuspy report x); CURRENT=3; PREFIX=x; source " + zc],
                           capture_output=True, text=True, timeout=TIMEOUT)
        lines = p.stdout.splitlines()
        check(len(lines) == 3 and "report" in lines[0].split() and "--format" in lines[1].split() and
              lines[2] == "FILES", f"zsh completion: {p.stdout!r} {p.stderr}")


@test
def run_names_its_output_and_links_the_latest(tmp):
    """`gpuspy run -o NAME` (or --output) writes its traces into NAME;
    without a name each run makes ./gpuspy-DATE-TIME and points
    ./gpuspy-latest at it, so that `gpuspy report gpuspy-latest` is the
    run just made; a file at that name is never replaced."""
    e = _run_env()
    prog = os.path.join(BIN, "prog_train")
    p = subprocess.run([GPUSPY, "run", "-o", "mine", "--no-report", "--", prog, "2", "10"], env=e, cwd=tmp,
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and len(traces(os.path.join(tmp, "mine"))) == 1, f"-o: {p.stderr}")
    check(not os.path.lexists(os.path.join(tmp, "gpuspy-latest")), "a named run moved gpuspy-latest")
    dirs = []
    for _ in range(2):
        time.sleep(1.1)  # the default names are by the second
        p = subprocess.run([GPUSPY, "run", "--no-report", "--", prog, "2", "10"], env=e, cwd=tmp,
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 0, p.stderr)
        dirs.append(os.readlink(os.path.join(tmp, "gpuspy-latest")))
    runs = sorted(d for d in os.listdir(tmp) if d.startswith("gpuspy-2"))
    check(dirs == runs and len(runs) == 2, f"gpuspy-latest pointed at {dirs}, runs {runs}")
    r = subprocess.run([GPUSPY, "report", "--json", "gpuspy-latest"], cwd=tmp, capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(r.returncode == 0 and json.loads(r.stdout)["processes"], r.stderr)
    os.unlink(os.path.join(tmp, "gpuspy-latest"))
    with open(os.path.join(tmp, "gpuspy-latest"), "w") as f:
        f.write("mine\n")
    time.sleep(1.1)
    p = subprocess.run([GPUSPY, "run", "--no-report", "--", prog, "2", "10"], env=e, cwd=tmp, capture_output=True,
                       text=True, timeout=TIMEOUT)
    check(open(os.path.join(tmp, "gpuspy-latest")).read() == "mine\n", "a file at gpuspy-latest was replaced")
    check(re.search(r"^gpuspy: \./gpuspy-latest is not a link gpuspy made; left as it is, not pointed at "
                    r"gpuspy-\d{8}-\d{6}$", p.stderr, re.M), f"not said: {p.stderr!r}")


@test
def env_lib_is_the_library_run_preloads(tmp):
    """`gpuspy env --lib` prints the library `gpuspy run` preloads (the
    README's LD_PRELOAD=$(gpuspy env --lib) CMD): the tree's own here,
    GPUSPY_LIB when set, and one error line when that is not there; a
    program preloaded by hand with it is traced."""
    p = subprocess.run([GPUSPY, "env", "--lib"], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and os.path.realpath(p.stdout.strip()) == os.path.realpath(LIB), p.stdout)
    e = dict(os.environ, GPUSPY_LIB="/nonexistent/libgpuspy.so")
    p = subprocess.run([GPUSPY, "env", "--lib"], env=e, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr)
    if SANITIZED:
        raise Skip("a preload by hand puts libgpuspy before the sanitizer runtime")
    lib = subprocess.run([GPUSPY, "env", "--lib"], capture_output=True, text=True, timeout=TIMEOUT).stdout.strip()
    e = dict(os.environ, LD_LIBRARY_PATH=BIN, LD_PRELOAD=lib, GPUSPY_DIR=tmp, GPUSPY_QUIET="1")
    subprocess.run([os.path.join(BIN, "prog_train"), "2", "10"], env=e, capture_output=True, timeout=TIMEOUT)
    check(len(traces(tmp)) == 1, f"traces {os.listdir(tmp)}")


@test
def run_reports_a_trace_directory_named_like_an_option(tmp):
    """`gpuspy run --dir -x -- PROG`: the run's report reads -x's trace
    (handed over as ./-x/NAME, not taken for an option): status 0, one
    process reported, no error."""
    p = subprocess.run([GPUSPY, "run", "--dir", "-x", "--", os.path.join(BIN, "prog_train"), "2", "10"],
                       env=_run_env(), cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and "gpuspy report: 1 process," in p.stdout and "error" not in p.stderr and
          p.stderr.endswith("gpuspy: 1 trace file in -x\n") and len(traces(os.path.join(tmp, "-x"))) == 1,
          f"{p.returncode} {p.stderr!r} {p.stdout[:200]!r}")
