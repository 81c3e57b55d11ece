# SPDX-License-Identifier: MIT
"""What every test module shares: running a program under gpuspy on the
CUDA test doubles, reading its trace back with `gpuspy dump`, comparing
events, and the registry of tests that tests/run.py runs. A test is a
function of one argument (its own temporary directory) that raises Fail,
or Skip when what it needs is not on this machine."""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "tests", "bin")
LIB = os.path.join(ROOT, "lib", "libgpuspy.so")
HOST_LIB = os.path.join(ROOT, "lib", "libgpuspy-host.so")  # malloc & co., for GPUSPY_HOST_ALLOC_MIN
GPUSPY = os.path.join(ROOT, "tools", "gpuspy")
TIMEOUT = 60
STRTAB = 16 << 20  # string table bytes of a trace file with call stacks on (the default)
CHUNK = 64 << 10  # a chunk of the trace file
SLACK = 64 << 10  # what the trim at exit keeps past the string table's used bytes (lib/writer.c)
# make check-sanitize: the sanitizer runtime must come first in LD_PRELOAD.
PRELOAD_PREFIX = os.environ.get("GPUSPY_TEST_PRELOAD_PREFIX", "")
SANITIZED = bool(PRELOAD_PREFIX)
# A launch gets a stack once in GPUSPY_STACK_LAUNCH_PERIOD (10 ms) by
# default: exact counts of stacks would hang on how fast a run went (a
# sanitized one, a loaded machine). In the tests it is an hour: each
# thread's first launch gets one. test_stacks's launch_stacks_by_time runs
# the sampling itself.
os.environ.setdefault("GPUSPY_STACK_LAUNCH_PERIOD", "3600s")


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(prog, args=(), env=None, preload=True, tmp=None, expect_rc=0, host=None, wrap=(), timeout=TIMEOUT):
    """host: preload libgpuspy-host.so after libgpuspy (by default when
    env asks for host allocations, as `gpuspy run` does); wrap: a command
    that runs the program (unshare ...); timeout: seconds before it is
    taken for hung."""
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e["LD_LIBRARY_PATH"] = BIN
    e["GPUSPY_DIR"] = tmp
    e["GPUSPY_QUIET"] = "1"
    if host is None:
        host = "GPUSPY_HOST_ALLOC_MIN" in (env or {})
    if preload:
        e["LD_PRELOAD"] = PRELOAD_PREFIX + LIB + (":" + HOST_LIB if host else "")
    e.update(env or {})
    p = subprocess.run([*wrap, os.path.join(BIN, prog), *args], env=e, capture_output=True,
                       text=True, timeout=timeout)
    if expect_rc is not None:
        check(p.returncode == expect_rc,
              f"{prog} exited {p.returncode}, expected {expect_rc}: {p.stderr.strip()}")
    return p


# Offsets and sizes in struct gspy_header (include/gpuspy/format.h).
HEADER_FIELDS = {"version": (8, 4), "file_size": (24, 8), "strtab_offset": (32, 8), "strtab_size": (40, 8),
                 "chunk_offset": (48, 8), "chunk_size": (56, 4), "chunk_count": (60, 4), "pid": (64, 4),
                 "chunks_claimed": (136, 4), "state": (140, 4), "strtab_used": (152, 8),
                 "notes_used": (1508, 4), "notes_lost": (1512, 4), "notes": (1516, 1024)}


def header(path):
    """The layout fields of a trace's header, as its bytes have them."""
    with open(path, "rb") as f:
        data = f.read(4096)
    return {k: int.from_bytes(data[o:o + n], "little") for k, (o, n) in HEADER_FIELDS.items()}


def trimmed_size(h, slack=SLACK):
    """A format-3 trace cut at a clean exit: the header, the chunks claimed
    (chunk_count once trimmed), then the string table's used bytes and the
    slack, in pages."""
    return 4096 + h["chunk_count"] * CHUNK + ((h["strtab_used"] + slack + 4095) & ~4095)


def traces(tmp):
    return sorted(f for f in os.listdir(tmp) if f.endswith(".gspy"))


def dump(path):
    p = subprocess.run([GPUSPY, "dump", path], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"gpuspy dump {path} failed: {p.stderr.strip()}")
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    check(lines and lines[0]["type"] == "process", "first line is not the process line")
    return lines[0], [l for l in lines[1:] if l["type"] != "stack"]


def dump_stacks(path):
    """The dump's events and its stacks (id -> frames)."""
    p = subprocess.run([GPUSPY, "dump", path], capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"gpuspy dump {path} failed: {p.stderr.strip()}")
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    return ([l for l in lines[1:] if l["type"] == "event"],
            {l["id"]: l["frames"] for l in lines[1:] if l["type"] == "stack"})


def phases_of(ev):
    """A trace's phases and marks, in order: (kind, name)."""
    return [(e["kind"], e["name"]) for e in ev if e["kind"] in ("phase_begin", "phase_end", "mark")]


def only_trace(tmp):
    t = traces(tmp)
    check(len(t) == 1, f"expected one trace file, found {t}")
    return dump(os.path.join(tmp, t[0]))


# gpuspy's messages as it wrote them before GPUSPY_LOG: on the program's
# stderr, "gpuspy: ..." (by default they are only the trace's notes).
LOG_STDERR = {"GPUSPY_QUIET": "0", "GPUSPY_LOG": "stderr"}


def notes(tmp):
    """gpuspy's own messages about the process of the one trace in tmp: the
    notes its header keeps (the dump's "notes")."""
    return only_trace(tmp)[0].get("notes", [])


def gpuspy_lines(text):
    """The lines of a program's stderr that gpuspy wrote."""
    return [l for l in text.splitlines() if l.startswith("gpuspy")]


FIELDS = ("kind", "api", "bytes", "dir", "host_mem", "mem", "name", "grid", "block")


def shape(ev):
    return tuple(ev.get(f) for f in FIELDS)


def E(kind, api, bytes=None, dir=None, host_mem=None, mem=None, name=None, grid=None, block=None):
    return (kind, api, bytes, dir, host_mem, mem, name, grid, block)


def compare(events, expected):
    got = [shape(e) for e in events]
    for i, (g, x) in enumerate(zip(got, expected)):
        check(g == x, f"event {i}: got {dict(zip(FIELDS, g))}\n      expected {dict(zip(FIELDS, x))}")
    check(len(got) == len(expected), f"{len(got)} events, expected {len(expected)}")


class Skip(Exception):
    pass


TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def slow(fn):
    """A long scale test (over ~10 s on the 2-core machine): left out of
    `make test`, run by `make test-all` (and CI). Put under @test."""
    fn.slow = True
    return fn


def same_output(prog, tmp, env=None):
    """The traced program prints exactly what the untraced one prints."""
    a = run(prog, env=env, preload=False, tmp=tmp)
    b = run(prog, env=env, preload=True, tmp=tmp)
    check(a.stdout == b.stdout, f"{prog}: output differs with gpuspy:\n{a.stdout}\n---\n{b.stdout}")
    check(a.returncode == b.returncode, f"{prog}: exit code differs with gpuspy")
    return b



def write(path, data):
    with open(path, "wb") as f:
        f.write(data)



def report_json(*paths, expect_rc=0):
    p = subprocess.run([GPUSPY, "report", "--json", *paths], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=ROOT)
    check(p.returncode == expect_rc, f"report exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)



def report_text(*paths):
    p = subprocess.run([GPUSPY, "report", "--color", "never", *paths], capture_output=True, text=True,
                       timeout=TIMEOUT, cwd=ROOT)
    check(p.returncode == 0, f"report exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout



SYS_PY = "/usr/bin/python3"



def have_torch():
    return subprocess.run([SYS_PY, "-c", "import torch"], capture_output=True).returncode == 0



def run_py(args, tmp, env=None, preload=True):
    e = dict(os.environ, GPUSPY_DIR=tmp)
    e.pop("LD_PRELOAD", None)
    if preload:
        e["LD_PRELOAD"] = LIB
    e.update(env or {})
    return subprocess.run([SYS_PY, *args], env=e, capture_output=True, text=True, timeout=300)



def hostile_trace(path, pid, command=b"cmd", kernel=b"k", phase=b"fwd", uuid=b"GPU-0", events=200):
    """A .gspy (tests/mktrace) of process pid, running, whose command line,
    first kernel, phase and device 0's UUID are these bytes (any)."""
    p = subprocess.run([os.path.join(BIN, "mktrace"), path, str(events), "1", "65536", "65536", str(pid),
                        command, kernel, phase, uuid], capture_output=True, timeout=TIMEOUT)
    check(p.returncode == 0, f"mktrace failed: {p.stderr!r}")
    return path
