# SPDX-License-Identifier: MIT
"""The PyTorch helper: its automatic phases, steps and DataLoader marks,
its builtins, and a program that runs as it would untraced (hooks,
torch.compile, TorchScript, saved models)."""
import collections
import os
import subprocess
import sys  # noqa: F401

from harness import *  # noqa: F401,F403 (run, dump, check, test, ...)


def need_torch():
    """Skips the test where Debian's PyTorch cannot run it."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    if not have_torch():
        raise Skip("python3-torch is not installed for /usr/bin/python3 (make deps installs it)")


def both_modes(tmp, code, **env):
    """python3 -c code, traced with libgpuspy's builtins, then with the
    helper's Python version (bench/helper_probe, GPUSPY_PROBE=python):
    yields (mode, its trace directory, the process)."""
    probe = dict(env, PYTHONPATH=os.path.join(ROOT, "bench", "helper_probe"))
    for mode in ("builtins", "python"):
        d = os.path.join(tmp, mode)
        os.makedirs(d)
        yield mode, d, run_py(["-c", code], d, env=dict(probe, GPUSPY_PROBE="python") if mode == "python" else probe)


def run_script(tmp, name, script):
    """python3 -c script traced into tmp/name: (that directory, the process)."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    return d, run_py(["-c", script], d)


SYS_PY = "/usr/bin/python3"
TORCH_LOOP = os.path.join(ROOT, "tests", "progs", "torch_loop.py")


def torch_sequence(steps):
    B, N = "phase_begin", "phase_end"
    seq = []
    for s in range(steps):
        for name in ("data", "optimizer", "forward", "backward", "optimizer"):
            seq += [(B, name, s), (N, name, s)]
    return seq + [(B, "data", steps), (N, "data", steps)]


@test
def torch_phases_without_code_changes(tmp):
    need_torch()
    p = run_py([TORCH_LOOP, "3"], tmp)
    check(p.returncode == 0 and p.stdout == "done 3 steps\n", f"{p.returncode} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    check(got == torch_sequence(3), f"torch phases {got}")
    check(all(e["api"].startswith("torch_phase") for e in ev if e["kind"] != "mark"), "phases not from the torch hooks")
    # One pass over one DataLoader: its mark, with where it was made.
    marks = [e["name"] for e in ev if e["kind"] == "mark"]
    check(marks == [f"DataLoader num_workers=0 made at <module> ({TORCH_LOOP}:15)"], f"marks {marks}")
    # The same through gpuspy run, with its report.
    d = os.path.join(tmp, "run")
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    p = subprocess.run([GPUSPY, "run", "--dir", d, "--", SYS_PY, TORCH_LOOP, "2"], env=e,
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and "done 2 steps" in p.stdout, p.stderr[-500:])
    for name in ("data", "forward", "backward", "optimizer"):
        check(f"\n  {name} " in p.stdout, f"report lacks the {name} phase")
    _, ev = only_trace(d)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    check(got == torch_sequence(2), f"torch phases via gpuspy run {got}")


@test
def torch_forward_hooks_learned(tmp):
    """The global module hook is on for the first GPUSPY_TORCH_LEARN_STEPS
    steps only; then the model it saw begin forward carries the hook, and
    the phases stay the same."""
    need_torch()
    for learn, hooks in (("", "global 0 model 1"), ("2", "global 0 model 1"), ("9", "global 1 model 0"),
                         ("0", "global 1 model 0"), ("x", "global 0 model 1"), ("-1", "global 0 model 1")):
        d = os.path.join(tmp, "learn" + learn)
        os.makedirs(d)
        p = run_py([TORCH_LOOP, "5", "-1", "hooks"], d, env={"GPUSPY_TORCH_LEARN_STEPS": learn} if learn else {})
        check(p.returncode == 0 and p.stdout == f"done 5 steps\nhooks {hooks}\n", f"learn {learn!r}: {p.stdout!r}")
        want = [f"GPUSPY_TORCH_LEARN_STEPS={learn} is not a number (0 or more); using 3"] if learn in ("x", "-1") else []
        check(notes(d) == want and gpuspy_lines(p.stderr) == [], f"learn {learn!r}: {notes(d)!r} {p.stderr!r}")
        _, ev = only_trace(d)
        got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
        check(got == torch_sequence(5), f"learn {learn!r}: torch phases {got}")


@test
def torch_forward_hooks_relearn_each_pass(tmp):
    """Each new pass over a DataLoader watches every module call again until
    GPUSPY_TORCH_LEARN_STEPS steps later: a second model first used in a
    validation pass after learning still begins forward, and both models
    carry the hook afterwards."""
    need_torch()
    p = run_py([os.path.join(ROOT, "tests", "progs", "torch_two_models.py")], tmp,
               env={"GPUSPY_TORCH_LEARN_STEPS": "2"})
    check(p.returncode == 0 and p.stdout == "hooks global 0 a 1 b 1\ndone\n", f"{p.stdout!r} {p.stderr[-300:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    B, N = "phase_begin", "phase_end"

    def train(s):
        return [(B, "data", s), (N, "data", s), (B, "optimizer", s), (N, "optimizer", s),
                (B, "forward", s), (N, "forward", s), (B, "backward", s), (N, "backward", s),
                (B, "optimizer", s), (N, "optimizer", s)]

    def val(s):  # B's forward a batch; each pass's last next() (StopIteration)
        # a data phase of its own, ended there, before and after B's pass
        end = [(B, "data", s), (N, "data", s)]
        return end + [(B, "data", s), (N, "data", s), (B, "forward", s), (N, "forward", s)] * 3 + end
    want = train(0) + train(1) + train(2) + val(3) + train(3) + train(4) + train(5) + val(6)
    check(got == want, f"phases {got}")


@test
def torch_pause_resume(tmp):
    """gpuspy_torch.pause()/resume() around step 1's body: its phases are not
    recorded, the open data phase is closed first, the module hook is off
    while paused (module calls take PyTorch's fast path) and back after."""
    need_torch()
    p = run_py([TORCH_LOOP, "3", "1"], tmp)
    check(p.returncode == 0 and p.stdout == "paused hooks 0\nresumed hooks 1\ndone 3 steps\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev if e["kind"].startswith(("phase", "mark"))]
    full = torch_sequence(3)
    want = [("mark", f"DataLoader num_workers=0 made at <module> ({TORCH_LOOP}:15)", None)] + full[:10] + \
        [full[10], ("phase_end", "data", 1), ("mark", "(paused)", None), ("mark", "(resumed)", None)] + full[20:]
    check(got == want, f"phases around a pause {got}")


@test
def torch_helper_phase_call_is_a_builtin(tmp):
    """The helper calls libgpuspy through a METH_FASTCALL builtin
    (gpuspy_torch_fast), not ctypes: a good call records its phase and step;
    calls it cannot read (wrong types, counts, a negative step) return None,
    raise nothing and record nothing."""
    if SANITIZED:
        raise Skip("PyTorch under a sanitized preload is not run")
    script = ("import gpuspy_torch as g\n"
              "f = g._lib.gpuspy_torch_phase\n"
              "print(type(g._lib).__name__, type(f).__name__)\n"
              "print([f(*a) for a in ((b'x', 7, 1), ('x', 1, 1), (b'x', 'a', 1), (b'x',), (), "
              "(b'x', -1, 1), (b'x', 1, None), (b'x', 2**64, 1), (b'x', 7, 0))])\n")
    p = run_py(["-c", script], tmp)
    check(p.returncode == 0 and p.stdout == "_Fast builtin_function_or_method\n" + repr([None] * 9) + "\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev]
    check(got == [("phase_begin", "x", 7), ("phase_end", "x", 7)], f"recorded {got}")


@test
def torch_helper_builtins_and_python_version_agree(tmp):
    """The helper's per-call work (wrappers, the models' hook, the phase
    state) runs in libgpuspy's builtins when the process has the Python C
    API: after learning, the model's hook is the builtin (with no
    torch.compiler, as in Debian's PyTorch 1.13: else a Python function
    that asks is_compiling() first, then calls it); the phases, steps
    and order are those of the helper's Python version (forced by
    bench/helper_probe, GPUSPY_PROBE=python), over 5 steps and a pause. The
    call builtin refuses a bad call with TypeError, passes the wrapped
    function's exception and result through, still counts a step that
    raised, records one phase for nested calls of one thread, and ends a
    lazy phase whose call raised (StopIteration: "stopped 0")."""
    need_torch()
    seqs = {}
    for mode, d, p in both_modes(tmp, "import sys, gpuspy_torch as g; sys.argv = ['x', '5', '2', 'hooks']; "
                                 f"exec(open({TORCH_LOOP!r}).read()); "
                                 "print(type(model._forward_pre_hooks[next(iter(model._forward_pre_hooks))]).__name__, "
                                 "g._C is None)"):
        want_hook = "builtin_function_or_method False" if mode == "builtins" else "function True"
        check(p.returncode == 0 and p.stdout.splitlines() == [
            "paused hooks 0", "resumed hooks 0", "done 5 steps", "hooks global 0 model 1", want_hook],
            f"{mode}: {p.returncode} {p.stdout!r} {p.stderr[-500:]}")
        _, ev = only_trace(d)
        seqs[mode] = [(e["kind"], e["name"], e.get("step")) for e in ev
                      if e["kind"].startswith(("phase", "mark"))]
    check(seqs["builtins"] == seqs["python"] and len(seqs["python"]) == 47,
          f"builtins {seqs['builtins']} vs python {seqs['python']}")
    script = ("import gpuspy_torch as g\n"
              "c = g._C\n"
              "for a in ((), (print,), (print, 9, (), {}), (print, 'x', (), {}), (print, 0, (), {}, 1, 2)):\n"
              "    try:\n"
              "        c.call(*a); print('no error', a)\n"
              "    except TypeError as e:\n"
              "        print('TypeError')\n"
              "def bad(): raise ValueError('boom')\n"
              "try:\n"
              "    c.call(bad, 3 | 0x20, (), {})\n"
              "except ValueError as e:\n"
              "    print('raised', e, c.ctl(0, 0))\n"
              "inner = lambda x, y=0: x + y\n"
              "outer = lambda x: c.call(inner, 2, (x,), {'y': 1})\n"
              "print(c.call(outer, 2, (41,), {}), c.ctl(0, 0), c.ctl(4, 0))\n"
              "c.ctl(3, 0); print(c.ctl(4, 0)); c.ctl(2, 0); print(c.ctl(4, 0))\n"
              "def out(): raise StopIteration\n"
              "try:\n"
              "    c.call(out, 0 | 0x10, (), {})\n"
              "except StopIteration:\n"
              "    print('stopped', c.ctl(4, 0))\n")
    d, p = run_script(tmp, "calls", script)
    check(p.returncode == 0 and p.stdout.splitlines() == ["TypeError"] * 5 + ["raised boom 1", "42 1 0", "1", "0",
                                                                          "stopped 0"],
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    _, ev = only_trace(d)
    got = [(e["kind"], e["name"], e.get("step")) for e in ev]
    check(got == [("phase_begin", "optimizer", 0), ("phase_end", "optimizer", 0),
                  ("phase_begin", "backward", 1), ("phase_end", "backward", 1),
                  ("phase_begin", "data", 1), ("phase_end", "data", 1),
                  ("phase_begin", "data", 1), ("phase_end", "data", 1)], f"recorded {got}")


@test
def torch_data_phase_ends_when_the_loader_runs_out(tmp):
    """A pass's last next() raises StopIteration: its data phase ends there,
    not at the process's exit (a torch.compile loop's held the 7.1 s of its
    exit: "data takes 60% of the loop"). After torch_loop.py's 3 steps the
    program reads the clock (GPUSPY_CLOCK=mono, the trace's): the 4th data
    phase ended before, in the builtins and the helper's Python version."""
    need_torch()
    for mode, d, p in both_modes(tmp, "import sys, time, gpuspy_torch as g; sys.argv = ['x', '3']; "
                                 f"exec(open({TORCH_LOOP!r}).read()); "
                                 "print('after', time.monotonic_ns(), g._C is None); time.sleep(0.05)",
                                 GPUSPY_CLOCK="mono"):
        lines = p.stdout.splitlines()
        check(p.returncode == 0 and len(lines) == 2 and lines[0] == "done 3 steps" and
              lines[1].endswith(str(mode == "python")), f"{mode}: {p.returncode} {p.stdout!r} {p.stderr[-500:]}")
        after = int(lines[1].split()[1])
        _, ev = only_trace(d)
        got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
        check(got == torch_sequence(3), f"{mode}: phases {got}")
        last = [e for e in ev if e["kind"] == "phase_end" and e["name"] == "data"][-1]
        check(last["step"] == 3 and last["start_ns"] < after,
              f"{mode}: the last data phase ended at {last['start_ns']}, the loop at {after}")


@test
def torch_hooks_opt_out_and_chain(tmp):
    need_torch()
    for off in ("0", "off"):
        p = run_py([TORCH_LOOP, "2"], tmp, env={"GPUSPY_TORCH": off})
        check(p.returncode == 0 and traces(tmp) == [], f"GPUSPY_TORCH={off} still recorded phases")
    user = os.path.join(tmp, "user")
    os.makedirs(user)
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import sys\nsys.stderr.write('user sitecustomize ran\\n')\n")
    code = ("import os, sys, torch; print(os.environ.get('PYTHONPATH')); "
            f"print(any(os.path.abspath(p) == {os.path.join(ROOT, 'python')!r} for p in sys.path)); "
            "torch.nn.Linear(2, 2)(torch.zeros(1, 2))")
    p = run_py(["-c", code], tmp, env={"PYTHONPATH": user})
    check(p.returncode == 0 and "user sitecustomize ran" in p.stderr, f"user sitecustomize: {p.stderr}")
    check(p.stdout.splitlines() == [user, "False"], f"PYTHONPATH/sys.path not restored: {p.stdout}")
    _, ev = only_trace(tmp)
    check(phases_of(ev) == [("phase_begin", "forward"), ("phase_end", "forward")],
          f"forward phase missing with a user sitecustomize: {phases_of(ev)}")
    # Not Python: nothing changes.
    e = dict(os.environ, LD_PRELOAD=LIB, PYTHONPATH="/x", GPUSPY_DIR=tmp)
    p = subprocess.run(["/bin/sh", "-c", "echo $PYTHONPATH"], env=e, capture_output=True, text=True)
    check(p.stdout == "/x\n", "PYTHONPATH changed in a process that is not Python")


@test
def torch_hooks_do_nothing_while_dynamo_traces(tmp):
    """torch.compile: while torch.compiler.is_compiling() says True (Dynamo
    tracing the hooks a compiled function runs), the helper's hooks and
    wrappers call nothing in libgpuspy, which would break the compiled
    graph. On the PyTorch stand-in (tests/progs/faketorch), the model calls
    of steps 2 (the global hook, learning the models) and 4 (the model's
    own hook, learned) are made so: those steps have no forward phase, the
    others keep theirs; the output is the untraced one."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    prog = os.path.join(ROOT, "tests", "progs", "torch_compiling.py")
    env = {"PYTHONPATH": os.path.join(ROOT, "tests", "progs", "faketorch")}
    untraced = run_py([prog], tmp, env=env, preload=False)
    p = run_py([prog], tmp, env=env)
    check(p.returncode == 0 and p.stdout == untraced.stdout == "done True\n" and p.stderr == untraced.stderr,
          f"{p.returncode} {p.stdout!r} {p.stderr[-300:]!r}")
    _, ev = only_trace(tmp)
    got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
    B, N = "phase_begin", "phase_end"
    want = []
    for s in range(5):
        names = ("data", "optimizer", "backward", "optimizer") if s in (2, 4) else \
            ("data", "optimizer", "forward", "backward", "optimizer")
        for name in names:
            want += [(B, name, s), (N, name, s)]
    want += [(B, "data", 5), (N, "data", 5)]
    check(got == want, f"phases {got}")


@test
def torch_compile_sees_no_helper(tmp):
    """torch.compile on the PyTorch stand-in, which compiles a graph again
    when the global module hooks change (Dynamo's guard) and warns when a
    torch.compile(module) is called while one is on, as PyTorch 2.x does:
    a compiled model trained for 2 passes of 4 batches (more than
    GPUSPY_TORCH_LEARN_STEPS) compiles 1 graph traced as untraced, with
    nothing more on stderr (the helper's global hook used to make it 2,
    and warn), through torch.compile(model), model.compile() and a
    compiled model.forward, with libgpuspy's builtins and with the
    helper's Python version; forward still begins at the compiled model's
    call (model.compile()'s used to have none), each step's phases in
    order. A function compiled before the loop (as a library may as it is
    imported) and called after it leaves the helper as it is until that
    call: the eager model's forward is learned as ever (it had none: the
    compile alone stopped the learning)."""
    if SANITIZED:
        raise Skip("Python under a sanitized preload is not run")
    prog = os.path.join(ROOT, "tests", "progs", "torch_compiled.py")
    path = os.path.join(ROOT, "tests", "progs", "faketorch") + os.pathsep + os.path.join(ROOT, "bench", "helper_probe")
    B, N = "phase_begin", "phase_end"
    want = []
    for s in range(8):
        if s == 4:  # the first pass's last next() (StopIteration): its own data phase
            want += [(B, "data", s), (N, "data", s)]
        for name in ("data", "forward", "optimizer", "backward", "optimizer"):
            want += [(B, name, s), (N, name, s)]
    want += [(B, "data", 8), (N, "data", 8)]
    for how in ("compile", "method", "forward", "function"):
        untraced = run_py([prog, how], tmp, env={"PYTHONPATH": path}, preload=False)
        check(untraced.returncode == 0 and untraced.stdout == "steps 8 graphs 1 breaks 0\n" and untraced.stderr == "",
              f"{how} untraced: {untraced.returncode} {untraced.stdout!r} {untraced.stderr[-300:]!r}")
        for mode in ("builtins", "python"):
            d = os.path.join(tmp, how + "-" + mode)
            os.makedirs(d)
            p = run_py([prog, how], d, env={"PYTHONPATH": path, "GPUSPY_PROBE": "" if mode == "builtins" else mode})
            check(p.returncode == 0 and p.stdout == untraced.stdout and p.stderr == "",
                  f"{how} {mode}: {p.returncode} {p.stdout!r} {p.stderr[-400:]!r}")
            _, ev = only_trace(d)
            got = [(e["kind"], e["name"], e["step"]) for e in ev if e["kind"].startswith("phase")]
            counts = collections.Counter(n for k, n, _ in got if k == B)
            check(counts == {"data": 10, "forward": 8, "backward": 8, "optimizer": 16} and got == want,
                  f"{how} {mode}: phases {dict(counts)} {got}")


# What a training script does with its model besides training it, after the
# helper has put its forward hook on the model: each as untraced.
TORCH_EXPORT = os.path.join(ROOT, "tests", "progs", "torch_export.py")


def torch_same_run(tmp, what, *args):
    """torch_export.py WHAT run untraced and traced: the same stdout, stderr
    and exit; the traced run's result."""
    need_torch()
    u = run_py([TORCH_EXPORT, what, *[a.format(run="untraced") for a in args]], tmp, preload=False)
    p = run_py([TORCH_EXPORT, what, *[a.format(run="traced") for a in args]], tmp)
    check((p.returncode, p.stdout, p.stderr) == (u.returncode, u.stdout, u.stderr),
          f"{what}: traced exit {p.returncode} {p.stdout!r}\n{p.stderr[-1500:]}\n---- untraced exit "
          f"{u.returncode} {u.stdout!r}\n{u.stderr[-1500:]}")
    return p


@test
def torch_script_module_trains_as_untraced(tmp):
    """A torch.jit.script'ed Linear trained for 4 steps over a DataLoader:
    stdout, stderr and exit 0 as untraced (when learning ended, the helper's
    hook on the model, which a ScriptModule refuses, raised RuntimeError
    out of the third opt.step()); the global hook stays on for it, so
    forward begins at every step; one note says why. The call builtin
    drops an error of the helper's `after` (learning's end): the step's
    result, or the step's own exception, comes out (it raised the helper's)."""
    p = torch_same_run(tmp, "scripted")
    check(p.returncode == 0 and p.stdout.startswith("steps 4 "), f"{p.returncode} {p.stdout!r}")
    _, ev = only_trace(tmp)
    fwd = [e["step"] for e in ev if e["kind"] == "phase_begin" and e["name"] == "forward"]
    check(fwd == [0, 1, 2, 3, 4], f"forward phases at steps {fwd}")
    want = ["PyTorch phases: a RecursiveScriptModule takes no forward hook "
            "(register_forward_pre_hook is not supported on ScriptModules)"]
    check(notes(tmp) == want, f"notes {notes(tmp)!r}")
    script = ("import gpuspy_torch as g\n"
              "c = g._C\n"
              "c.ctl(1, 1)\n"
              "def bad(): raise KeyError('gpuspy')\n"
              "def boom(): raise ValueError('boom')\n"
              "print(c.call(lambda: 7, 3 | 0x20, (), {}, bad), c.ctl(0, 0))\n"
              "try:\n"
              "    c.call(boom, 3 | 0x20, (), {}, bad)\n"
              "except ValueError as e:\n"
              "    print('raised', repr(e), e.__context__, c.ctl(0, 0))\n")
    d, p = run_script(tmp, "after", script)
    check(p.returncode == 0 and p.stdout == "7 1\nraised ValueError('boom') None 2\n",
          f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")


LOAD = ("import sys, torch\n"
        "from typing import Tuple\n"
        "def keep(module, inputs: Tuple[torch.Tensor]) -> None:\n"
        "    return None\n"
        "for path in sys.argv[1:]:\n"
        "    m = torch.load(path)\n"
        "    print([h.__name__ for h in m._forward_pre_hooks.values()], m(torch.ones(1, 4)).tolist())\n")


@test
def torch_saved_model_loads_without_gpuspy(tmp):
    """torch.save(model) after training (the helper's hook on the model):
    the file loads in a process without gpuspy, with the program's own
    pre-hook only, as the untraced run's file does (gpuspy's builtin
    pickled as getattr(None, 'gpuspy_torch_hook'): an AttributeError at
    every load); pickle.dumps and copy.deepcopy of the model give a module
    with the program's hook only, a shallow copy.copy shares the model's
    hooks, all as untraced. The model keeps its hook's handle: a deep
    copy's handle removes the copy's hook (it removed from a dict of its
    own, the copy keeping its hook), and the file, which holds the handle,
    loads. The same for a module the helper adopted (as it does a
    torch.compile'd one)."""
    p = torch_same_run(tmp, "save", os.path.join(tmp, "{run}.pt"))
    check(p.returncode == 0 and p.stdout.count("\n1 [[") == 2 and
          p.stdout.endswith("model keeps 0\ncopy after remove 0\n"), f"{p.stdout!r}")
    files = [os.path.join(tmp, f) for f in ("untraced.pt", "traced.pt")]
    load = run_py(["-c", LOAD, *files], tmp, preload=False)
    lines = load.stdout.splitlines()
    check(load.returncode == 0 and len(lines) == 2 and lines[0] == lines[1] and lines[0].startswith("['keep'] [["),
          f"{load.returncode} {load.stdout!r} {load.stderr[-500:]}")
    adopted = os.path.join(tmp, "adopted.pt")
    script = ("import copy, sys, torch, gpuspy_torch as g\n"
              "m = torch.nn.Linear(4, 2)\n"
              "g._adopt(m)\n"
              "torch.save(m, sys.argv[1])\n"
              "print(len(m._forward_pre_hooks), len(copy.deepcopy(m)._forward_pre_hooks))\n")
    p = run_py(["-c", script, adopted], tmp)
    check(p.returncode == 0 and p.stdout == "1 0\n", f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
    load = run_py(["-c", LOAD, adopted], tmp, preload=False)
    check(load.returncode == 0 and load.stdout.startswith("[] [["), f"{load.stdout!r} {load.stderr[-500:]}")


@test
def torch_jit_script_and_trace_after_training(tmp):
    """torch.jit.script and torch.jit.trace of a model after training (the
    helper's hook on it, beside the program's own TorchScript pre-hook):
    both run and give the untraced output, nothing more on stderr
    (TorchScript compiled the helper's builtin hook: AttributeError, no
    __globals__). The model keeps its hooks in their order."""
    p = torch_same_run(tmp, "jit")
    check(p.returncode == 0 and p.stdout.splitlines()[1].startswith("script [[") and p.stdout.endswith(" True\n"),
          f"{p.stdout!r}")
    script = ("import torch, gpuspy_torch as g\n"
              "from typing import Tuple\n"
              "def keep(module, inputs: Tuple[torch.Tensor]) -> None:\n"
              "    return None\n"
              "m = torch.nn.Sequential(torch.nn.Linear(4, 2))\n"
              "m.register_forward_pre_hook(keep)\n"
              "g._adopt(m)\n"
              "g._adopt(m[0])\n"
              "m.register_forward_pre_hook(keep)\n"
              "before = [list(x._forward_pre_hooks.items()) for x in m.modules()]\n"
              "s = torch.jit.script(m)\n"
              "print(len(s._forward_pre_hooks), before == [list(x._forward_pre_hooks.items()) for x in m.modules()],"
              " [len(b) for b in before])\n")
    prog = os.path.join(tmp, "hooks_kept.py")  # TorchScript reads the hook's source
    with open(prog, "w") as f:
        f.write(script)
    p = run_py([prog], tmp)
    check(p.returncode == 0 and p.stdout == "2 True [3, 1]\n", f"{p.returncode} {p.stdout!r} {p.stderr[-500:]}")
