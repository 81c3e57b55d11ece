# SPDX-License-Identifier: MIT
"""The trace's and the log's files under attack: a trace's name made a
link, a shared or wrong trace directory, stderr swapped, the header
overwritten or the file emptied while the program runs, log files that
are links, FIFOs or another user's, notes someone else wrote, a string
table out of place.

Each test reproduces one way a real job could hang,
crash or change behaviour under gpuspy, and asserts what the program did."""
import json
import os
import re
import shutil
import subprocess

from harness import (BIN, CHUNK, GPUSPY, HEADER_FIELDS, LIB, PRELOAD_PREFIX, SANITIZED, TIMEOUT, Fail, Skip, check,
                     dump, header, notes, report_json, report_text, run, slow, test, traces)
from test_hostile import preload_env
from test_tracegen import control_bytes


@test
def trim_at_exit_never_follows_the_name(tmp):
    """While the program runs, its trace's name in the directory is made a
    symbolic link to another file (a user with write access to a shared
    trace directory can): the trim at exit cuts gpuspy's own file through
    its fd, and the other file keeps every byte. The trace stays whole."""
    victim = os.path.join(tmp, "victim")
    with open(victim, "wb") as f:
        f.write(b"precious" * 100000)
    d = os.path.join(tmp, "traces")
    os.mkdir(d, 0o700)
    p = subprocess.Popen([os.path.join(BIN, "prog_files"), "wait"], env=preload_env(d, GPUSPY_QUIET="1"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline() == "alloc 0\n", "the program did not start")
    t = traces(d)
    check(len(t) == 1, f"traces: {t}")
    real = os.path.join(tmp, "moved.gspy")
    os.rename(os.path.join(d, t[0]), real)
    os.symlink(victim, os.path.join(d, t[0]))
    p.communicate("go\n", timeout=TIMEOUT)
    check(p.returncode == 0, f"exit {p.returncode}")
    check(open(victim, "rb").read() == b"precious" * 100000, "the other file was changed")
    check(os.path.getsize(real) < 64 << 20, f"gpuspy's own file was not trimmed: {os.path.getsize(real)} bytes")
    proc, ev = dump(real)
    check([e["api"] for e in ev] == ["cuMemAlloc_v2"] and proc["clean_exit"], f"trace: {proc}, {ev}")


@test
def group_writable_trace_directory_is_refused(tmp):
    """A trace directory its group (not this process's own) may write, not
    sticky: refused with one warning (on stderr with GPUSPY_LOG=stderr;
    by default nowhere the program sees), nothing written, the program as
    untraced. With the sticky bit, or the process's own group, it is used."""
    d = os.path.join(tmp, "shared")
    os.mkdir(d)
    other = 1 if os.getegid() != 1 else 2
    os.chown(d, -1, other)
    os.chmod(d, 0o770)
    for log, want in (("stderr", f"gpuspy: GPUSPY_DIR {d} is writable by its group and not sticky; refusing it, "
                                 "tracing off\n"), ("", "")):
        p = subprocess.run([os.path.join(BIN, "prog_files")], env=preload_env(d, GPUSPY_LOG=log),
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and p.stdout == "alloc 0\n", f"program changed: {p.returncode} {p.stdout!r}")
        check(p.stderr == want, f"GPUSPY_LOG={log}: stderr: {p.stderr!r}")
    check(not os.listdir(d), f"written: {os.listdir(d)}")
    for mode, group in ((0o1770, other), (0o770, os.getegid())):
        os.chown(d, -1, group)
        os.chmod(d, mode)
        p = subprocess.run([os.path.join(BIN, "prog_files")], env=preload_env(d), capture_output=True,
                           text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and not p.stderr and len(traces(d)) == 1,
              f"mode {oct(mode)} group {group}: {p.stderr!r} {os.listdir(d)}")
        for f in traces(d):
            os.unlink(os.path.join(d, f))


@test
def warnings_go_to_the_stderr_the_process_started_with(tmp):
    """With GPUSPY_LOG=stderr, the program closes fd 2 and opens its own
    file there before its first CUDA call, on which gpuspy warns
    (GPUSPY_DIR is not a directory): the warning goes to the original
    stderr, and the program's file holds only the program's line."""
    own = os.path.join(tmp, "own.log")
    notdir = os.path.join(tmp, "file")
    open(notdir, "w").close()
    p = subprocess.run([os.path.join(BIN, "prog_files"), "stderr", own], env=preload_env(notdir, GPUSPY_LOG="stderr"),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and p.stdout == "alloc 0\n", f"program changed: {p.returncode} {p.stdout!r}")
    check(open(own).read() == "the program's own line\n", f"own file: {open(own).read()!r}")
    check(p.stderr == f"gpuspy: GPUSPY_DIR {notdir} is not a directory; tracing off\n", f"stderr: {p.stderr!r}")


@test
def run_dir_survives_a_change_of_directory(tmp):
    """`gpuspy run --dir rel` with a command that changes directory before
    its first CUDA call: the trace lands in rel (run exports the absolute
    path), and run reports it instead of saying no CUDA call was made."""
    if PRELOAD_PREFIX:
        raise Skip("gpuspy run puts libgpuspy before the sanitizer runtime")
    prog = os.path.join(BIN, "prog_files")
    env = dict(os.environ, LD_LIBRARY_PATH=BIN)
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([GPUSPY, "run", "--dir", "rel", "--", prog, "chdir", "/"],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-300:]}")
    t = traces(os.path.join(tmp, "rel"))
    check(len(t) == 1, f"traces in rel: {t}; stderr {p.stderr[-300:]}")
    check("made no CUDA call" not in p.stderr + p.stdout, f"run said: {p.stderr[-300:]}")


LIVE_OUT = "batch 1 done 0\nbatch 2 done 0\n"


def live(tmp, change, linger_ms=0, env=None):
    """tests/hostile/prog_live.c with its trace changed by change(path,
    pid) between its two batches of calls; (exit status, stdout, stderr)."""
    e = preload_env(tmp, GPUSPY_QUIET="1", GPUSPY_NVML_MS="10", FAKENVML="util=50", TMPDIR=tmp)
    e.update(LD_LIBRARY_PATH=os.path.join(BIN, "nvml") + ":" + BIN, **(env or {}))
    p = subprocess.Popen([os.path.join(BIN, "prog_live"), str(linger_ms)], env=e, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    t = traces(tmp)
    if first == "batch 1 done 0\n" and len(t) == 1:
        change(os.path.join(tmp, t[0]), p.pid)
    try:
        out, err = p.communicate("go\n", timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise Fail(f"hung: {first + out!r} {err[-300:]!r}")
    return p.returncode, first + out, err


def overwrite(path, field, value):
    off, size = HEADER_FIELDS[field]
    with open(path, "r+b") as f:
        f.seek(off)
        f.write((value % (1 << (8 * size))).to_bytes(size, "little"))


@test
@slow
def header_fields_overwritten_while_it_runs(tmp):
    """The trace's owner overwrites a field of its header while the program
    runs (between two batches of calls; the second claims more chunks
    than the 1 MiB buffer has, on two threads, and adds call stacks to the
    string table; GPUSPY_DEBUG makes a note at exit): the library
    takes no address, size or identity back from the file, so the program
    exits 0 with its output, a note claims no room past notes_used's
    area, and a changed pid starts no second file (the
    fork check unmapped the file under the control thread, which read it
    a second later: SIGSEGV)."""
    values = {"pid": lambda pid: pid + 1, "chunk_count": lambda pid: -16, "strtab_offset": lambda pid: 1 << 40,
              "chunk_offset": lambda pid: 1 << 40, "chunk_size": lambda pid: -256, "strtab_size": lambda pid: 1 << 40,
              "strtab_used": lambda pid: -16, "chunks_claimed": lambda pid: 0, "notes_used": lambda pid: -16}
    bad = []
    for field, value in values.items():
        d = os.path.join(tmp, field)
        os.mkdir(d)
        rc, out, err = live(d, lambda path, pid: overwrite(path, field, value(pid)),
                            linger_ms=1200 if field == "pid" else 0, env={"GPUSPY_BUFFER_MB": "1", "GPUSPY_DEBUG": "1"})
        if (rc, out) != (0, LIVE_OUT) or len(traces(d)) != 1:
            bad.append(f"{field}: exit {rc}, output {out!r}, traces {traces(d)}, stderr {err[-200:]!r}")
        elif field == "notes_used":  # GPUSPY_DEBUG's note at exit found no room, and said so
            proc, _ = dump(os.path.join(d, traces(d)[0]))
            if "notes" in proc or proc.get("notes_lost") != 1:
                bad.append(f"notes_used: notes {proc.get('notes')!r}, lost {proc.get('notes_lost')}")
    check(not bad, "\n".join(bad))


@test
def trace_emptied_while_it_runs(tmp):
    """`: > trace.gspy` (logrotate's copytruncate) between two batches of
    calls, whose stores into the mapped file then lie past its end
    (SIGBUS), and gpuspy's own threads still read its header: the program
    exits 0 with its output, gpuspy says once (from its signal handler) on
    stderr with GPUSPY_LOG=stderr, or as one line naming the pid in a
    GPUSPY_LOG file and nothing on stderr, that recording stopped, and
    leaves the file empty. The reader refuses the empty file with one line
    (no signal)."""
    d = os.path.join(tmp, "t")
    os.mkdir(d)
    emptied = []

    def empty(path, pid):
        open(path, "r+b").truncate(0)
        emptied.append(path)
    rc, out, err = live(d, empty, linger_ms=1200, env={"GPUSPY_QUIET": "0", "GPUSPY_LOG": "stderr"})
    check((rc, out) == (0, LIVE_OUT), f"exit {rc}, output {out!r}, stderr {err[-300:]!r}")
    check(emptied and err == f"gpuspy: the trace file {emptied[0]} was cut while the program ran "
          "(emptied or truncated by another process); recording stopped\n", f"stderr: {err!r}")
    check(os.path.getsize(emptied[0]) == 0 and traces(d) == [os.path.basename(emptied[0])],
          f"files: {traces(d)}, size {os.path.getsize(emptied[0])}")
    p = subprocess.run([GPUSPY, "dump", emptied[0]], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 1 and p.stderr.count("\n") == 1 and p.stderr.startswith("gpuspy: error:"),
          f"dump of the empty file: exit {p.returncode}, {p.stderr!r}")
    d = os.path.join(tmp, "logged")
    os.mkdir(d)
    log = os.path.join(tmp, "gpuspy.log")
    pids = []
    rc, out, err = live(d, lambda path, pid: (pids.append(pid), empty(path, pid)), linger_ms=1200,
                        env={"GPUSPY_QUIET": "0", "GPUSPY_LOG": log})
    check((rc, out, err) == (0, LIVE_OUT, "") and open(log).read() ==
          f"gpuspy[{pids[0]}]: the trace file {emptied[1]} was cut while the program ran (emptied or truncated by "
          "another process); recording stopped\n", f"GPUSPY_LOG=file: exit {rc}, {err!r}, log {open(log).read()!r}")


@test
def log_file_is_made_only_by_a_process_with_something_to_say(tmp):
    """GPUSPY_LOG=gpuspy.log (relative: each process's own start directory)
    and a preloaded program that makes no CUDA call and has nothing to say
    (ls, as a shell or make runs them): every such process made an empty
    gpuspy.log where it started, and ls listed it ("gpuspy.log\n", not
    ""). The file is now made by the first message: ls lists what it
    lists untraced and leaves nothing; a process with a message (an
    option it cannot read) still appends it to gpuspy.log in the
    directory it started in."""
    ls = shutil.which("ls")
    if not ls:
        raise Skip("no ls")
    d = os.path.join(tmp, "empty")
    os.mkdir(d)
    env = preload_env(tmp, GPUSPY_LOG="gpuspy.log", GPUSPY_QUIET="0")
    a = subprocess.run([ls], cwd=d, env=dict(env, LD_PRELOAD=PRELOAD_PREFIX), capture_output=True, text=True,
                       timeout=TIMEOUT)
    b = subprocess.run([ls], cwd=d, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    check((b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr) == (0, "", ""),
          f"ls: {b.returncode} {b.stdout!r} {b.stderr!r}")
    check(os.listdir(d) == [], f"left in the directory: {os.listdir(d)}")
    p = subprocess.run([ls], cwd=d, env=dict(env, GPUSPY_CUPTI_FLUSH="abc"), capture_output=True, text=True,
                       timeout=TIMEOUT)
    check((p.returncode, p.stderr) == (0, ""), f"ls with a message: {p.returncode} {p.stderr!r}")
    log = open(os.path.join(d, "gpuspy.log")).read()
    check(re.fullmatch(r"gpuspy\[\d+\]: GPUSPY_CUPTI_FLUSH=abc is not a number of seconds \(1\.\.3600\); using 5\n",
                       log) and p.stdout == "gpuspy.log\n", f"log: {log!r}, ls: {p.stdout!r}")


def log_refused(tmp, name, where):
    """prog_files with GPUSPY_LOG=where and a bad option in its own folder
    name: no log line on stderr, the warning a note in the trace."""
    d = os.path.join(tmp, name)
    os.mkdir(d)
    e = preload_env(d, GPUSPY_LOG=where, GPUSPY_QUIET="0", GPUSPY_CUPTI_FLUSH="abc")
    p = subprocess.run([os.path.join(BIN, "prog_files")], env=e, capture_output=True, text=True, timeout=TIMEOUT)
    check((p.returncode, p.stdout, p.stderr) == (0, "alloc 0\n", ""), f"{name}: {p.returncode} {p.stderr!r}")
    check(notes(d) == ["GPUSPY_CUPTI_FLUSH=abc is not a number of seconds (1..3600); using 5"],
          f"{name}: notes {notes(d)!r}")


@test
def log_file_appends_whole_lines_and_refuses_a_link(tmp):
    """GPUSPY_LOG=FILE: four processes (tests/hostile/prog_notes: the traced
    one and three forked) each say 300 messages of 200 bytes at once. The
    file is made with mode 0600 and holds each as one whole line,
    "gpuspy[PID]: ...", in its process's order; a second run appends after
    them. The programs' output is as untraced. A name that is a symbolic
    link is refused (its target keeps every byte) and so is a path that
    cannot be opened: no log, nothing on stderr either, the note still in
    the trace."""
    log = os.path.join(tmp, "gpuspy.log")
    d = os.path.join(tmp, "t")
    os.mkdir(d)
    env = preload_env(d, GPUSPY_LOG=log, GPUSPY_QUIET="0")
    a = subprocess.run([os.path.join(BIN, "prog_notes"), "300", "200", "4"], env=dict(env, LD_PRELOAD=PRELOAD_PREFIX),
                       capture_output=True, text=True, timeout=TIMEOUT)
    b = subprocess.run([os.path.join(BIN, "prog_notes"), "300", "200", "4"], env=env, capture_output=True,
                       text=True, timeout=TIMEOUT)
    check((b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr) == (0, "notes done\n", ""),
          f"output: {b.returncode} {b.stdout!r} {b.stderr!r}")
    check(os.stat(log).st_mode & 0o777 == 0o600, f"log mode {oct(os.stat(log).st_mode)}")
    lines = open(log, "rb").read().split(b"\n")
    check(lines[-1] == b"" and len(lines) == 1201, f"{len(lines) - 1} lines")
    seen = {}
    for line in lines[:-1]:
        m = re.fullmatch(rb"gpuspy\[(\d+)\]: p([0-3]) m(\d{4}) (x+)", line)
        check(m and len(m.group(4)) == 191, f"not a whole line: {line[:80]!r}... ({len(line)} bytes)")
        seen.setdefault(int(m.group(2)), []).append((int(m.group(1)), int(m.group(3))))
    pid = dump(os.path.join(d, traces(d)[0]))[0]["pid"]
    check(sorted(seen) == [0, 1, 2, 3] and len({v[0][0] for v in seen.values()}) == 4 and seen[0][0][0] == pid and
          all(v == [(v[0][0], i) for i in range(300)] for v in seen.values()), "a process's lines missing or out of order")
    subprocess.run([os.path.join(BIN, "prog_notes"), "2", "20"], env=env, check=True, capture_output=True,
                   timeout=TIMEOUT)
    more = open(log, "rb").read().split(b"\n")
    check(more[:1200] == lines[:1200] and len(more) == 1203 and
          [re.sub(rb"^gpuspy\[\d+\]: ", b"", l) for l in more[1200:1202]] == [b"p0 m0000 " + b"x" * 11,
                                                                         b"p0 m0001 " + b"x" * 11],
          f"appended: {more[1200:]!r}")
    target = os.path.join(tmp, "target")
    with open(target, "wb") as f:
        f.write(b"precious\n")
    link = os.path.join(tmp, "link.log")
    os.symlink(target, link)
    for name, where in (("link", link), ("nowhere", os.path.join(tmp, "none", "x.log"))):
        log_refused(tmp, name, where)
    check(open(target, "rb").read() == b"precious\n" and os.path.islink(link), "the link's target was written")
    check(not os.path.exists(os.path.join(tmp, "none")), "a directory was made for the log")


@test
def log_file_of_another_user_or_a_fifo_is_refused(tmp):
    """GPUSPY_LOG naming a file another user made there (its bytes kept),
    or a FIFO (no reader: the open must not block, and no line goes into
    it): no log, nothing on stderr, the note still in the trace."""
    theirs = os.path.join(tmp, "theirs.log")
    with open(theirs, "wb") as f:
        f.write(b"theirs\n")
    fifo = os.path.join(tmp, "fifo.log")
    os.mkfifo(fifo)
    uid = 65534 if os.geteuid() != 65534 else 65533
    try:
        os.chown(theirs, uid, uid)
    except PermissionError:
        raise Skip("cannot give a file to another user here (not root)")
    os.chmod(theirs, 0o666)
    for name, where in (("theirs", theirs), ("fifo", fifo)):
        log_refused(tmp, name, where)
    check(open(theirs, "rb").read() == b"theirs\n", "another user's file was written")


@test
def control_thread_that_cannot_start_is_a_note(tmp):
    """No thread can start (pthread_create fails: how gpuspy's control
    thread failed on the H200 in programs linked with cuBLAS, cuSPARSE or
    cuSOLVER, which then printed gpuspy's line): the program's output and
    stderr are what they are untraced with the same pthread_create; the
    trace keeps it as its one note, which the report shows."""
    if SANITIZED:
        raise Skip("the sanitizer's own pthread_create comes first and reaches libc's, not the failing one")
    nothreads = os.path.join(BIN, "libhostile_nothreads.so")
    e = preload_env(tmp, GPUSPY_QUIET="0", GPUSPY_CUPTI="off")
    a = subprocess.run([os.path.join(BIN, "prog_files")], env=dict(e, LD_PRELOAD=PRELOAD_PREFIX + nothreads),
                       capture_output=True, text=True, timeout=TIMEOUT)
    b = subprocess.run([os.path.join(BIN, "prog_files")], env=dict(e, LD_PRELOAD=PRELOAD_PREFIX + nothreads + ":" + LIB),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check((b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr) == (0, "alloc 0\n", ""),
          f"traced: {b.returncode} {b.stdout!r} {b.stderr!r}")
    want = "cannot start the control thread: `gpuspy start`/`stop` will not reach this process"
    check(notes(tmp) == [want], f"notes {notes(tmp)!r}")
    check(f"   gpuspy's notes:\n     {want}\n" in report_text(tmp), "the report does not show the note")


# A note of someone else's making: escape sequences (the title, a clear
# screen, C1 CSI as UTF-8 and as a byte), DEL, CR, NUL, a byte that is not
# UTF-8 and the end of a <script>.
EVIL_NOTE = b"n\x1b]0;pwned\x07 \x1b[2J\xc2\x9b6n\x9b\x7f\r\x00</script><b>x\xff"


def put_notes(path, used, lost, area):
    with open(path, "r+b") as f:
        for field, value in (("notes_used", used), ("notes_lost", lost)):
            f.seek(HEADER_FIELDS[field][0])
            f.write(value.to_bytes(4, "little"))
        f.seek(HEADER_FIELDS["notes"][0])
        f.write(area.ljust(1024, b"\0"))


@test
def hostile_notes_are_bounded_and_escaped(tmp):
    """A trace whose notes someone else wrote: notes_used past the area
    (0xffffffff), 4294967295 lost, the area full of EVIL_NOTE lines, the
    last cut without its newline; and one whose notes_used (7) ends inside an escape
    sequence. The report reads no byte past the area or notes_used, closes
    the cut last line, shows each line with every control byte as text
    (--color never and always), --json and the dump are valid JSON with
    the same lines (invalid bytes as U+FFFD), and the page (--html) holds
    no raw </script><b> of the notes."""
    run_env = preload_env(tmp, GPUSPY_QUIET="1")
    subprocess.run([os.path.join(BIN, "prog_files")], env=run_env, check=True, capture_output=True, timeout=TIMEOUT)
    path = os.path.join(tmp, traces(tmp)[0])
    area = ((EVIL_NOTE + b"\n") * 40)[:1024]
    put_notes(path, 0xffffffff, 0xffffffff, area)
    pieces = [p for p in area.replace(b"\0", b"").split(b"\n") if p]
    check(len(pieces) == 27 and pieces[26] == b"n\x1b]0;pwned", f"{len(pieces)} lines")  # 26 whole, 1 cut
    shown = b"n\\x1b]0;pwned\\x07 \\x1b[2J\\u009b6n\\x9b\\x7f\\x0d</script><b>x\\xff"
    ours = (b"\x1b[1m", b"\x1b[33m", b"\x1b[0m")
    for color in ("never", "always"):
        p = subprocess.run([GPUSPY, "report", "--color", color, path], capture_output=True, timeout=TIMEOUT)
        check(p.returncode == 0, f"--color {color}: exit {p.returncode} {p.stderr[-300:]!r}")
        check(not control_bytes(p.stdout, ours if color == "always" else ()),
              f"--color {color}: control bytes {control_bytes(p.stdout)[:8]}")
        section = p.stdout.split(b"   gpuspy's notes:\n")[1].split(b"   gpuspy's own time")[0].splitlines()
        check(len(section) == 28 and section[:26] == [b"     " + shown] * 26 and
              section[26] == b"     n\\x1b]0;pwned" and
              section[27] == b"     4294967295 more notes were lost: the trace keeps 1024 bytes of notes",
              f"--color {color}: notes section {section[:2]} ... {section[-2:]}")
    want = [x.decode("utf-8", errors="replace") for x in pieces]
    j = report_json(path)["processes"][0]
    check(j["notes"] == want and len(want) == 27 and j["notes_lost"] == 0xffffffff,
          f"--json: {j['notes'][:1]!r} {len(j['notes'])}")
    proc, _ = dump(path)
    check(proc["notes"] == j["notes"] and proc["notes_lost"] == 0xffffffff, f"dump: {proc['notes'][:1]!r}")
    page = os.path.join(tmp, "page.html")
    subprocess.run([GPUSPY, "report", "--html", page, path], check=True, capture_output=True, timeout=TIMEOUT)
    html = open(page, "rb").read()
    check(b"<b>x" not in html and html.count(b"</script>") == html.count(b"<script"), "the page holds the note raw")
    put_notes(path, 7, 0, area)
    check(notes(tmp) == ["n\x1b]0;pw"], f"notes_used 7: {notes(tmp)!r}")
    text = report_text(path)
    check("   gpuspy's notes:\n     n\\x1b]0;pw\n   gpuspy's own time" in text, f"notes_used 7: {text[:600]}")


@test
def misplaced_string_table_is_refused(tmp):
    """A format-3 trace whose header puts its string table over the chunks
    (inside the last one, or at the first), past the end of the file the
    header itself gives, or that says it is format 2 (the table first) over
    format 3's bytes: dump, report and export refuse it with one line
    saying the header is corrupt; top skips it. One whose table lies past
    the end of the file as it is (a copy cut short, the header whole)
    reads as cut: every event, the kernels "(unknown)" (host functions
    and graphs are named without it), one warning."""
    run("prog_drv", tmp=tmp)
    good = os.path.join(tmp, traces(tmp)[0])
    h = header(good)
    check(h["version"] == 3 and h["chunk_count"] == 1 and h["strtab_offset"] == 4096 + CHUNK, f"layout {h}")
    _, whole = dump(good)
    data = open(good, "rb").read()
    os.unlink(good)

    def patched(**fields):
        b = bytearray(data)
        for k, v in fields.items():
            off, n = HEADER_FIELDS[k]
            b[off:off + n] = v.to_bytes(n, "little")
        return bytes(b)
    end = lambda off: off + h["strtab_size"]  # noqa: E731: a file_size that agrees with the offset
    bad = {"overlap": patched(strtab_offset=4096 + CHUNK - 64, file_size=end(4096 + CHUNK - 64)),
           "first": patched(strtab_offset=4096, file_size=end(4096)),
           "past": patched(strtab_size=h["strtab_size"] + 4096),
           "v2": patched(version=2)}
    for name, b in bad.items():
        path = os.path.join(tmp, f"{name}.gspy")
        with open(path, "wb") as f:
            f.write(b)
        for args in (["dump", path], ["report", path],
                     ["export", "--format", "chrome", "-o", os.path.join(tmp, "o.json"), path]):
            p = subprocess.run([GPUSPY, *args], capture_output=True, text=True, timeout=TIMEOUT)
            check(p.returncode == 1 and p.stderr == f"gpuspy: error: {path}: corrupt header (inconsistent sizes)\n",
                  f"{name} {args[0]}: exit {p.returncode}, {p.stderr!r}")
        p = subprocess.run([GPUSPY, "top", "--once", "--json", tmp], capture_output=True, text=True, timeout=TIMEOUT)
        check((p.returncode, p.stdout, p.stderr) == (0, "[]\n", ""), f"{name} top: {p.returncode} {p.stderr!r}")
        os.unlink(path)
    far = os.path.join(tmp, "far.gspy")
    with open(far, "wb") as f:
        f.write(patched(strtab_offset=1 << 40, file_size=end(1 << 40)))
    p = subprocess.run([GPUSPY, "dump", far], capture_output=True, text=True, timeout=TIMEOUT)
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    got = [x for x in lines if x["type"] == "event"]
    check(p.returncode == 0 and p.stderr.count("\n") == 1 and "truncated" in p.stderr and len(got) == len(whole) and
          {e["name"] for e in got if e["kind"] == "launch"} == {"(unknown)", "(graph)", "(host function)"} and
          lines[0]["truncated"] and {e["name"] for e in whole if e["kind"] == "launch"} > {"(graph)", "(host function)"},
          f"table past the file: exit {p.returncode}, {p.stderr!r}, {len(got)} of {len(whole)} events")


@test
def output_that_is_an_input_is_refused(tmp):
    """dump -o, report --html and export -o naming a trace they read, by any
    name: itself, ./NAME, a hard link to it, the real file when the input
    was named through a symbolic link, a link at the output to the input,
    and a trace of a DIR given. Each is one line, "is a trace this CMD
    reads", status 1, and the trace keeps every byte (dump -o used to
    leave 0 bytes, report --html a page in its place)."""
    d = os.path.join(tmp, "d")
    os.mkdir(d)
    t = os.path.join(d, "t.gspy")
    subprocess.run([os.path.join(BIN, "mktrace"), t, "100", "1"], check=True, timeout=TIMEOUT)
    data = open(t, "rb").read()
    hard, link, out_link = os.path.join(tmp, "hard.gspy"), os.path.join(tmp, "link.gspy"), os.path.join(tmp, "o")
    os.link(t, hard)
    os.symlink(t, link)
    os.symlink(t, out_link)
    dot = os.path.join(d, ".", "t.gspy")
    cases = [(["dump", t, "-o"], t), (["dump", t, "-o"], dot), (["dump", t, "-o"], hard), (["dump", link, "-o"], t),
             (["report", t, "--html"], t), (["report", t, "--html"], hard), (["report", link, "--html"], t),
             (["report", t, "--html"], out_link), (["report", d, "--html"], t), (["report", d, "--html"], hard),
             (["export", "--format", "chrome", d, "-o"], hard), (["export", "--format", "chrome", link, "-o"], t)]
    for args, out in cases:
        p = subprocess.run([GPUSPY, *args, out], capture_output=True, text=True, timeout=TIMEOUT)
        check((p.returncode, p.stdout, p.stderr) ==
              (1, "", f"gpuspy: error: {out}: is a trace this {args[0]} reads; give the output another name\n"),
              f"{args} {out}: {p.returncode} {p.stderr!r}")
        check(open(t, "rb").read() == data and os.path.islink(out_link), f"{args} {out}: the trace was changed")
    check(sorted(os.listdir(d)) == ["t.gspy"], f"left beside it: {os.listdir(d)}")
    page = os.path.join(d, "r.html")  # a new name in the DIR read: written
    p = subprocess.run([GPUSPY, "report", d, "--html", page], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and open(page).read().startswith("<!DOCTYPE html>"), f"new name: {p.stderr!r}")


@test
def directory_listing_never_follows_a_planted_link(tmp):
    """A directory given to report, export and diff holds one trace, a
    symbolic link named like a trace to another user's trace elsewhere and
    a FIFO named like one: only the trace is read, and each of the others
    is skipped with one note, never opened (the FIFO would not be, the
    link's target is not reported). A directory of only a link has no
    traces. The link named on the command line is followed, as asked."""
    d, secret = os.path.join(tmp, "d"), os.path.join(tmp, "secret_trace.bin")
    os.mkdir(d)
    mine = os.path.join(d, "mine.gspy")
    subprocess.run([os.path.join(BIN, "mktrace"), mine, "100", "1"], check=True, timeout=TIMEOUT)
    subprocess.run([os.path.join(BIN, "mktrace"), secret, "200", "1"], check=True, timeout=TIMEOUT)
    planted, fifo = os.path.join(d, "planted.gspy"), os.path.join(d, "pipe.gspy")
    os.symlink(secret, planted)
    os.mkfifo(fifo)
    link_note = (f"gpuspy: {planted}: a symbolic link in a directory is not followed; skipped (name the file "
                 "itself to read it)")
    notes = sorted([link_note, f"gpuspy: {fifo}: not a regular file; skipped"])  # in the directory's order
    p = subprocess.run([GPUSPY, "report", "--json", d], capture_output=True, text=True, timeout=TIMEOUT)
    procs = json.loads(p.stdout)["processes"] if p.returncode == 0 else []
    check(p.returncode == 0 and sorted(p.stderr.splitlines()) == notes and
          [x["command"] for x in procs] == ["mktrace 100"],
          f"report: {p.returncode} {p.stderr!r} {[x['command'] for x in procs]}")
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", d, "-o", "-"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    names = {e["args"]["name"] for e in json.loads(p.stdout)["traceEvents"] if e.get("name") == "process_name"}
    check(p.returncode == 0 and sorted(p.stderr.splitlines()) == notes and names == {"pid 4242: mktrace 100"},
          f"export: {p.returncode} {p.stderr!r} {names}")
    steps = lambda out: re.findall(r"\((\d+) steps\)", out.split("\n")[0])  # noqa: E731
    alone = subprocess.run([GPUSPY, "diff", mine, mine], capture_output=True, text=True, timeout=TIMEOUT)
    p = subprocess.run([GPUSPY, "diff", d, d], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and sorted(p.stderr.splitlines()) == sorted(notes * 2) and
          len(steps(p.stdout)) == 2 and steps(p.stdout) == steps(alone.stdout),
          f"diff: {p.returncode} {p.stderr!r} {p.stdout[:200]!r} vs {alone.stdout[:200]!r}")
    os.unlink(mine)
    os.unlink(fifo)
    p = subprocess.run([GPUSPY, "report", d], capture_output=True, text=True, timeout=TIMEOUT)
    check((p.returncode, p.stdout) == (1, "") and p.stderr == link_note + "\n" +
          f"gpuspy: error: {d}: no .gspy or .jsonl traces in this directory (nor in a gpuspy-YYYYMMDD-HHMMSS run "
          "directory of yours inside it)\n", f"only the link: {p.returncode} {p.stderr!r}")
    p = subprocess.run([GPUSPY, "report", "--json", planted], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and json.loads(p.stdout)["processes"][0]["command"] == "mktrace 200",
          f"named link: {p.returncode} {p.stderr!r}")


@test
def jsonl_line_without_end_is_refused_in_bounded_memory(tmp):
    """A JSON Lines file of one '{' and 2 GiB of zeros (no newline), read
    by report under a 512 MiB address-space limit: one line saying line 1
    is longer than 4 MiB, status 1 (it used to read the line whole, 2 GB,
    and under a limit call the file empty). After a good process line,
    such a second line is named as line 2. A stack line of 3 MiB, longer
    than any dump writes, is still read."""
    if SANITIZED:
        raise Skip("a sanitizer's shadow memory does not fit a memory limit")
    import resource

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
    s = os.path.join(tmp, "s.jsonl")
    with open(s, "wb") as f:
        f.write(b"{")
        f.truncate(2 << 30)
    p = subprocess.run([GPUSPY, "report", s], capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=limited)
    check((p.returncode, p.stdout, p.stderr) == (1, "", f"gpuspy: error: {s}: line 1 is longer than 4 MiB; not a "
                                                        "line of a gpuspy JSON Lines trace\n"),
          f"one line: {p.returncode} {p.stderr!r}")
    proc = {"type": "process", "format_version": 3, "pid": 7, "ppid": 1, "host": "h", "rank": -1, "local_rank": -1,
            "command": "t", "events": 1, "state": "exited", "start_ns": 1000}
    ev = {"type": "event", "kind": "launch", "api": "cuLaunchKernel", "tid": 7, "start_ns": 2000, "end_ns": 3000,
          "result": 0, "device": 0, "name": "k", "stack": 1}
    stack = {"type": "stack", "id": 1, "frames": [f"f{i} " + "x" * (24 << 10) for i in range(128)]}
    t = os.path.join(tmp, "t.jsonl")
    with open(t, "w") as f:
        f.write("\n".join(json.dumps(x) for x in (proc, stack, ev)) + "\n")
    p = subprocess.run([GPUSPY, "report", "--json", t], capture_output=True, text=True, timeout=TIMEOUT,
                       preexec_fn=limited)
    check(p.returncode == 0 and p.stderr == "" and json.loads(p.stdout)["processes"][0]["events"] == 1,
          f"a 3 MiB stack line: {p.returncode} {p.stderr!r}")
    with open(t, "w") as f:
        f.write(json.dumps(proc) + "\n" + json.dumps(ev) + "\n{")
        f.truncate(2 << 30)
    p = subprocess.run([GPUSPY, "report", "--json", t], capture_output=True, text=True, timeout=TIMEOUT,
                       preexec_fn=limited)
    check(p.returncode == 1 and p.stderr == f"gpuspy: error: {t}: line 3 is longer than 4 MiB; not a line of a "
          "gpuspy JSON Lines trace; reporting the events before it\n" and
          json.loads(p.stdout)["processes"][0]["events"] == 1, f"line 3: {p.returncode} {p.stderr!r}")


def cut_on_map_env():
    """gpuspy with tests/hostile/cut_on_map.c preloaded: each .gspy it maps
    whole is cut to its header right after (the race made certain)."""
    return dict(os.environ, LD_PRELOAD=os.path.join(BIN, "libhostile_cut_on_map.so"), CUT_ON_MAP="1")


@test
def cut_message_escapes_the_file_name(tmp):
    """A trace named with ESC ] 0;PWNED BEL (a terminal's title), ESC [2J
    (clear the screen) and a newline, cut to its header as `gpuspy
    report` maps it: the one line that says the file was cut, written
    from the SIGBUS handler, names it escaped (\\x1b, \\x07, \\x0a as
    text) with none of those bytes raw, and the status is 1 (the name
    went out raw: the terminal's title set, the screen cleared)."""
    if SANITIZED:
        raise Skip("the sanitizer runtime must come first; this preloads a shim into gpuspy alone")
    path = os.path.join(tmp, "evil\x1b]0;PWNED\x07\x1b[2J\n.gspy")
    p = subprocess.run([os.path.join(BIN, "mktrace"), path, "20", "1", "65536", "65536", "1234", "cmd", "k", "fwd",
                        "GPU-0"], capture_output=True, timeout=TIMEOUT)
    check(p.returncode == 0 and os.path.getsize(path) > 4096, f"mktrace {p.returncode}")
    p = subprocess.run([GPUSPY, "report", path], env=cut_on_map_env(), capture_output=True, timeout=TIMEOUT)
    shown = os.fsencode(tmp) + b"/evil\\x1b]0;PWNED\\x07\\x1b[2J\\x0a.gspy"
    check((p.returncode, p.stdout, p.stderr) ==
          (1, b"", b"gpuspy: error: %s: the file was cut while it was being read; read it again\n" % shown) and
          os.path.getsize(path) == 4096, f"report: {p.returncode} {p.stdout[-200:]!r} {p.stderr!r}")


# A command line that, were its newline passed, would print a row of its
# own in top and the report: pid 1 (sshd) at 100% GPU.
FORGED_CMD = b"python train.py\n      1      9.9     100%   /usr/sbin/sshd -D"


@test
def newlines_in_names_forge_no_rows(tmp):
    """A running process's trace whose command line holds a newline and a
    forged row after it, whose host, kernel, phase and device 0's UUID hold
    newlines, CR and tab: `top --once` and the text report write each on
    its own line, the newline as \\x0a text (CR \\x0d, tab \\x09), exactly
    where the name goes; no line of theirs begins with the forged row's
    text (the newline went out raw: a row for pid 1, a phase "FAKE")."""
    from harness import hostile_trace
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        path = hostile_trace(os.path.join(tmp, "x.gspy"), sleeper.pid, command=FORGED_CMD, kernel=b"kern\nFAKEK",
                             phase=b"fwd\r\nFAKE\tX", uuid=b"GPU-0\nFAKEU")
        with open(path, "r+b") as f:  # the host, mktrace's "synthetic"
            head = f.read(4096)
            f.seek(head.index(b"synthetic\0"))
            f.write(b"node\nFAKEH\0")
        cmd = "python train.py\\x0a      1      9.9     100%   /usr/sbin/sshd -D"
        p = subprocess.run([GPUSPY, "top", "--once", "--window", "60s", tmp], capture_output=True, text=True,
                           timeout=TIMEOUT)
        rows = p.stdout.splitlines()
        check(p.returncode == 0 and len(rows) >= 3 and
              re.fullmatch(rf" *{sleeper.pid} .*  {re.escape(cmd)}", rows[2]) and
              not [r for r in rows if r.startswith(("      1 ", "FAKE"))], f"top --once: {p.returncode}\n{p.stdout}")
        text = report_text(path)
        phase = "fwd\\x0d\\x0aFAKE\\x09X"
        for want in (f"== pid {sleeper.pid}: {cmd}\n", "\n   host node\\x0aFAKEH, ", f"\n  {phase}    19 ",
                     f"\n  {phase} h2d pageable ", "\n  kern\\x0aFAKEK  ", f"\n    CMD = {cmd}\n",
                     "\n  device 0 GPU-0\\x0aFAKEU: ", f"\n  the cycle of phases {phase}\n"):
            check(want in text, f"report lacks {want!r}:\n{text}")
        bad = [r for r in text.splitlines() if r.startswith(("      1 ", "FAKE"))]
        check(not bad, f"report: forged lines {bad}")
    finally:
        sleeper.kill()
        sleeper.wait()


@test
def run_refuses_a_library_path_the_loader_would_split(tmp):
    """gpuspy run with libgpuspy at a path holding a space or a colon
    (GPUSPY_LIB, or an install prefix): one line and status 1 before the
    command runs. The loader splits LD_PRELOAD there: it loaded nothing,
    the command ran untraced, and run said it made no CUDA call, exit 0."""
    for name in ("sp ace", "co:lon"):
        lib = os.path.join(tmp, name, "libgpuspy.so")
        os.makedirs(os.path.dirname(lib))
        shutil.copy(LIB, lib)
        e = dict(os.environ, LD_LIBRARY_PATH=BIN, GPUSPY_LIB=lib)
        e.pop("LD_PRELOAD", None)
        p = subprocess.run([GPUSPY, "run", "--dir", os.path.join(tmp, "out"), "--", os.path.join(BIN, "prog_drv")],
                           env=e, capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and p.stdout == "" and p.stderr == f"gpuspy: error: {lib}: LD_PRELOAD cannot name a "
              "path with a space, tab or colon; set GPUSPY_LIB to a copy of libgpuspy.so elsewhere\n",
              f"{name}: exit {p.returncode} {p.stdout[-200:]!r} {p.stderr!r}")


@test
def output_that_never_arrives_is_no_success(tmp):
    """Every command's stdout on a full device (/dev/full): one line,
    status 1 (top --once, env, help, --version and diff exited 0 with
    nothing written; report said so already)."""
    if not os.path.exists("/dev/full"):
        raise Skip("no /dev/full")
    golden = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "train.jsonl")
    for args in (["top", "--once", tmp], ["env"], ["help"], ["--version"], ["help", "report"],
                 ["diff", golden, golden], ["report", golden]):
        with open("/dev/full", "w") as full:
            p = subprocess.run([GPUSPY, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and p.stderr.count("\n") == 1 and p.stderr.startswith("gpuspy: error:") and
              "No space left on device" in p.stderr, f"{args}: exit {p.returncode} {p.stderr!r}")


@test
def a_record_forged_to_end_near_2_64_is_in_plain_sight(tmp):
    """One GPU record of a 60-step loop (test_replay's helper_loop) made to
    end 1000 ns short of 2^64: report, text and --json, and export end
    within the timeout, status 0, and say the run lasted about
    18,446,744,073 s (docs/security.md): a wrong figure in plain sight,
    not a hang or a crash."""
    from test_replay import helper_loop
    path = helper_loop(os.path.join(tmp, "t.jsonl"), 1, 60, 0, False)
    lines, forged = [], False
    for line in open(path).read().splitlines():
        e = json.loads(line)
        if not forged and e.get("kind") == "gpu_kernel" and e["start_ns"] > 30_000_000:
            e["end_ns"], forged = 2 ** 64 - 1000, True
        lines.append(json.dumps(e))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    o = report_json(path)
    check(forged and o["duration_ns"] > 1.8e19 and o["processes"][0]["step"]["step_ns"] > 1e17, f"{o['duration_ns']}")
    check(", 18446744073.71 s traced, 2160 events" in report_text(path), "the forged run's length not said")
    p = subprocess.run([GPUSPY, "export", "--format", "chrome", "-o", os.path.join(tmp, "t.json"), path],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0 and os.path.getsize(os.path.join(tmp, "t.json")) > 100_000, p.stderr)
