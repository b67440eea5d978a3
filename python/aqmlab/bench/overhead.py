"""`aqmlab bench`'s overhead figures: what a user waits for besides the simulation itself.

* ``startup``: ``import aqmlab`` in a fresh interpreter, and the whole ``aqmlab run`` process on the
  ``paper`` point (start, load, simulate 100 s, write CSV, Parquet and JSON, exit);
* ``sweep``: the whole ``aqmlab sweep`` process over 1000 runs of the ``tiny`` point (1 s of a
  1 Mb/s dumbbell; the engine takes well under a millisecond per run, so runs/s measures the
  sweep machinery: task building, local pool, cache entries, the results table and flows table).

Each figure is a fresh process, the best of ``repeat`` by wall time, with its CPU time (user +
system, the process and its children): on a shared machine the CPU time varies less than the wall
time. ``BEFORE`` holds the same figures measured on this project's 2-core build machine for the
code before issue 12 (commit 52cc9f2), with this module's method.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: before issue 12 (commit 52cc9f2, same machine and method, best of the runs made while other work
#: kept the machine's load average at 4-5; byte-compiled modules, as a pip install leaves them)
BEFORE = {
    "import_s": 0.57,
    "run_paper_s": 0.62,
    "run_paper_cpu_s": 0.69,
    "sweep_runs_per_s": 14.9,
}


def _timed(args, cwd=None) -> tuple[float, float]:
    """Wall and CPU seconds of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, cwd=cwd, check=False,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} failed:\n{proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _best(args, repeat: int, cwd=None) -> tuple[float, float]:
    return min((_timed(args, cwd) for _ in range(max(1, repeat))), key=lambda x: x[0])


def measure_startup(repeat: int = 5) -> dict:
    with tempfile.TemporaryDirectory(prefix="aqmlab-bench-") as tmp:
        imp, imp_cpu = _best([sys.executable, "-c", "import aqmlab"], repeat, cwd=tmp)
        run, run_cpu = _best([sys.executable, "-m", "aqmlab.cli", "run", str(HERE / "paper.toml"), "--out",
                              str(Path(tmp) / "out"), "-q"], repeat, cwd=tmp)
    return {"figure": "startup", "import_s": imp, "import_cpu_s": imp_cpu, "run_paper_s": run,
            "run_paper_cpu_s": run_cpu}


def measure_sweep(runs: int = 1000, repeat: int = 1) -> dict:
    with tempfile.TemporaryDirectory(prefix="aqmlab-bench-") as tmp:
        wall, cpu = _best([sys.executable, "-m", "aqmlab.cli", "sweep", str(HERE / "tiny.toml"), "--seeds",
                           str(runs), "--no-cache", "--out", str(Path(tmp) / "out"), "-q"], repeat, cwd=tmp)
    return {"figure": "sweep", "runs": runs, "sweep_s": wall, "sweep_cpu_s": cpu, "sweep_runs_per_s": runs / wall,
            "jobs": os.cpu_count()}


def format_rows(rows: list[dict]) -> str:
    head = f"{'overhead':<44} {'now':>10} {'CPU':>8} {'before':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        if r["figure"] == "startup":
            lines.append(f"{'import aqmlab (s)':<44} {r['import_s']:>10.3f} {r['import_cpu_s']:>8.3f} "
                         f"{BEFORE['import_s']:>10.2f}")
            lines.append(f"{'aqmlab run, paper point, whole process (s)':<44} {r['run_paper_s']:>10.3f} "
                         f"{r['run_paper_cpu_s']:>8.3f} {BEFORE['run_paper_s']:>10.2f}")
        else:
            label = f"aqmlab sweep, {r['runs']} tiny runs (runs/s)"
            lines.append(f"{label:<44} {r['sweep_runs_per_s']:>10.1f} {r['sweep_cpu_s']:>7.1f}s "
                         f"{BEFORE['sweep_runs_per_s']:>10.1f}")
    return "\n".join(lines)
