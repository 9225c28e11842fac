"""Benchmark: what one crossing into the submission's process costs (``grader.remote``).

Starts a zygote and an executor as a grading child does, loads a small module there and times
a few kinds of crossing, each repeated: a call on a small tensor; the same call beside models
the executor built, or beside a model of the test's sent once (each call checks every module and
tensor the two sides share); the call whose result is differentiated (the call and its
vector-Jacobian product); a forward and backward through a model the executor built (a mirror
whose forward runs there); a training step the submission takes on such a model with the test's
optimizer (the optimizer kept in step both ways), with Adam, and on the test's own model with a
forward hook and its optimizer with a step hook (each hook a callback). Each kind is also timed
in one process (the module imported here) for the baseline. Reports per
crossing the wall time and the CPU time of both processes (the executor's from ``/proc``), medians
over ``--rounds`` rounds.

    .venv/bin/python bench/bench_crossing.py [--calls 300] [--rounds 5] [--json FILE]

CPU time is less disturbed than wall time by other work on the machine, but not immune to it: on
the development machine (a VM) it moved by a third between identical runs. Instructions do not:
with ``--callgrind DIR`` the script, run under valgrind's callgrind, counts the instructions of
both processes per crossing, apart only (only the measured calls are counted; a run takes about
a minute per kind; run nothing else under valgrind meanwhile, since it switches counting on in
every callgrind process):

    valgrind --tool=callgrind --instr-atstart=no --trace-children=yes \
        --trace-children-skip='*callgrind_control*,*perl*' --callgrind-out-file=DIR/cg.%p \
        .venv/bin/python bench/bench_crossing.py --callgrind DIR --calls 20 [--kind KIND ...]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import torch

from grader.remote import Executor, Zygote

EXERCISE = "pytorch.losses.cross_entropy"  # any id: the module below stands in for its solution
MODULE = textwrap.dedent('''
    import torch

    def square(x):
        return x * x

    def keep(model):
        return None

    class Net(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                            torch.nn.Linear(width, width), torch.nn.ReLU())
            self.head = torch.nn.Linear(width, 1)

        def forward(self, x):
            return self.head(self.body(x))

    def step(model, optimizer, x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()
''')


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kinds(module) -> dict:
    """Each kind of crossing: a function that makes what it needs and returns the crossing."""
    def call():
        x = torch.randn(16)
        return lambda: module.square(x)

    def call_beside_models():
        x, models = torch.randn(16), [module.Net(64), module.Net(64)]
        return lambda: (models, module.square(x))

    def call_beside_tests_model():
        x = torch.randn(16)
        model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Conv2d(4, 4, 3), torch.nn.BatchNorm2d(4),
                                                          torch.nn.ReLU()) for _ in range(8)])
        module.keep(model)  # sent once: the test's model is mirrored from then on
        return lambda: (model, module.square(x))

    def differentiated():
        x = torch.randn(16)

        def run():
            leaf = x.clone().requires_grad_(True)
            module.square(leaf).sum().backward()
        return run

    def forward_backward():
        net, xs = module.Net(64), torch.randn(32, 64)

        def run():
            net.zero_grad()
            net(xs).sum().backward()
        return run

    def training_step():
        net, xs, ys = module.Net(64), torch.randn(32, 64), torch.randn(32, 1)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        return lambda: module.step(net, optimizer, xs, ys)

    def adam_step():
        net, xs, ys = module.Net(64), torch.randn(32, 64), torch.randn(32, 1)
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
        return lambda: module.step(net, optimizer, xs, ys)

    def spied_step():
        """The test's own model, hooked, and its optimizer with step hooks (a spy's)."""
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
        xs, ys, seen = torch.randn(32, 64), torch.randn(32, 1), []
        net.register_forward_hook(lambda m, i, o: seen.append(o.shape))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        optimizer.register_step_post_hook(lambda o, a, k: seen.append(len(seen)))
        return lambda: module.step(net, optimizer, xs, ys)

    return {"call": call, "call, two models alive (12 tensors)": call_beside_models,
            "call, the test's model sent before (25 modules, 56 tensors)": call_beside_tests_model,
            "call + backward": differentiated, "model forward + backward": forward_backward,
            "training step (optimizer kept)": training_step, "Adam step": adam_step,
            "a hooked model and a spied optimizer of the test": spied_step}


def _time(kinds: dict, calls: int, pid: int | None) -> dict:
    out = {}
    for name, make in kinds.items():
        run = make()
        run()  # warm
        cpu_there = _cpu_of(pid) if pid else 0.0
        cpu_here, wall = time.process_time(), time.perf_counter()
        for _ in range(calls):
            run()
        wall = time.perf_counter() - wall
        cpu_here = time.process_time() - cpu_here
        cpu_there = (_cpu_of(pid) - cpu_there) if pid else 0.0
        del run
        gc.collect()
        out[name] = {"wall_ms": 1e3 * wall / calls, "cpu_here_ms": 1e3 * cpu_here / calls,
                     "cpu_there_ms": 1e3 * cpu_there / calls}
    return out


def _count(kinds: dict, calls: int, pids: tuple[int, int], out: Path) -> dict:
    """Instructions per crossing of each kind, here and there, counted by callgrind (this process
    and the executor run under it, dumping into ``out``)."""
    counts = {}
    for dump, (name, make) in enumerate(kinds.items(), start=1):
        run = make()
        run()  # warm
        subprocess.run(["callgrind_control", "-i", "on"], check=True, capture_output=True)
        for _ in range(calls):
            run()
        subprocess.run(["callgrind_control", "-i", "off"], check=True, capture_output=True)
        subprocess.run(["callgrind_control", "-d"], check=True, capture_output=True)
        subprocess.run(["callgrind_control", "-z"], check=True, capture_output=True)
        del run
        gc.collect()
        here, there = (int(re.search(r"^totals: (\d+)", (out / f"cg.{pid}.{dump}").read_text(), re.M)[1])
                       for pid in pids)
        counts[name] = {"instructions_here": here // calls, "instructions_there": there // calls}
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--callgrind", type=Path, default=None, metavar="DIR",
                        help="count instructions instead of time (run under callgrind, see above)")
    parser.add_argument("--kind", action="append", default=None, help="only this kind (repeatable)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="drills-bench-") as tmp:
        path = Path(tmp, *EXERCISE.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True)
        path.write_text(MODULE)
        spec = importlib.util.spec_from_file_location("crossing_module", path)
        local = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(local)
        if unknown := set(args.kind or ()) - set(_kinds(local)):
            parser.error(f"no kind of crossing {sorted(unknown)}; the kinds: {'; '.join(_kinds(local))}")
        gc.collect()
        gc.freeze()  # as the fork server does before it forks a grading child
        zygote = Zygote.start(close=[], threads=1)
        executor = Executor(zygote)
        def chosen(module) -> dict:
            kinds = _kinds(module)
            return {k: v for k, v in kinds.items() if args.kind is None or k in args.kind}

        try:
            remote = executor.load(EXERCISE, Path(tmp))
            if args.callgrind:
                counts = _count(chosen(remote), args.calls, (os.getpid(), executor.pid), args.callgrind)
            else:
                rounds = []
                for _ in range(args.rounds):  # alternated, so a change in the machine's speed hits both
                    rounds.append({"one process": _time(chosen(local), args.calls, None),
                                   "apart": _time(chosen(remote), args.calls, executor.pid)})
        finally:
            executor.close()
            zygote.close()
    if args.callgrind:
        print(f"{'kind':48} {'here':>12} {'there':>12}  (instructions per crossing)")
        for kind, c in counts.items():
            print(f"{kind:48} {c['instructions_here']:12,} {c['instructions_there']:12,}")
        if args.json:
            args.json.write_text(json.dumps({"calls": args.calls, "instructions": counts,
                                             "python": sys.version.split()[0], "torch": torch.__version__},
                                            indent=2) + "\n")
        return
    table = {mode: {kind: {key: statistics.median(r[mode][kind][key] for r in rounds)
                           for key in rounds[0][mode][kind]}
                    for kind in rounds[0][mode]}
             for mode in rounds[0]}
    print(f"{'kind':40} {'one process':>12} {'apart: wall':>12} {'cpu here':>9} {'cpu there':>9}  (ms per crossing)")
    for kind in table["apart"]:
        one, apart = table["one process"][kind], table["apart"][kind]
        print(f"{kind:40} {one['wall_ms']:12.3f} {apart['wall_ms']:12.3f} {apart['cpu_here_ms']:9.3f} "
              f"{apart['cpu_there_ms']:9.3f}")
    if args.json:
        args.json.write_text(json.dumps({"calls": args.calls, "rounds": args.rounds, "medians": table,
                                         "python": sys.version.split()[0], "torch": torch.__version__},
                                        indent=2) + "\n")


if __name__ == "__main__":
    main()
