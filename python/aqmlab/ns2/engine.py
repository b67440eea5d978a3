"""ns-2.35 as a second engine: a scenario translated, run by ``ns`` and read back as a Result.

:func:`run` is :func:`aqmlab.run` with ns-2.35 underneath: it takes the same scenario (a path, TOML
text or a dict), seed and overrides, writes the Tcl script (:mod:`aqmlab.ns2.script`), runs
``ns`` on it in a temporary folder, reads the trace and returns a
:class:`~aqmlab.run.result.Result` whose summary, flows table and time series have aqmlab's keys
and columns (:mod:`aqmlab.ns2.results`). :func:`row` returns the run's flat metrics row
(:func:`aqmlab.run.metrics.run_row`), the row a sweep table or a report column takes.

``ns`` is found on the ``PATH`` (or at ``$AQMLAB_NS``); Debian and Ubuntu's ``ns2`` package is
ns-2.35 (``apt-get install ns2``). Without it :class:`~aqmlab.base.errors.Ns2Missing` says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Callable, Sequence

from .. import _core
from ..base.errors import Ns2Error, Ns2Missing, one_line
from ..run.result import Result
from .plan import make_plan
from .results import assemble, read_events
from .script import write_script
from .trace import read_trace

INSTALL = "apt-get install ns2"


def find_ns() -> str:
    """The ``ns`` program: ``$AQMLAB_NS`` if set, else ``ns`` on the PATH; Ns2Missing without one."""
    given = os.environ.get("AQMLAB_NS")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise Ns2Missing(f"AQMLAB_NS={given}: not an executable file (it should name ns-2.35's `ns`)")
        return given
    found = shutil.which("ns")
    if not found:
        raise Ns2Missing(f"ns-2.35 is not installed (no `ns` program on the PATH); install it with `{INSTALL}` "
                         "(Debian and Ubuntu's ns2 package), or set AQMLAB_NS to its path")
    return found


_BUILD_IDS: dict = {}
#: the translator's modules a run goes through (crosscheck and agreement only compare runs)
RUN_MODULES = ("engine.py", "plan.py", "script.py", "trace.py", "results.py")


def build_id() -> str:
    """A fingerprint of what makes an ns-2.35 run: the ``ns`` program, this translator's sources
    (:data:`RUN_MODULES`) and aqmlab's engine build (which resolves the scenario and draws the start
    times). A cached ns-2.35 run is reused only while all three are the same."""
    import hashlib

    ns = find_ns()
    if ns not in _BUILD_IDS:
        from ..base.version import engine_build_id

        h = hashlib.sha256()
        with open(ns, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        for name in RUN_MODULES:
            h.update(name.encode() + b"\0" + (Path(__file__).parent / name).read_bytes())
        h.update(engine_build_id().encode())
        _BUILD_IDS[ns] = h.hexdigest()[:16]
    return _BUILD_IDS[ns]


def available() -> bool:
    """Whether ns-2.35 can be run here."""
    try:
        find_ns()
        return True
    except Ns2Missing:
        return False


def run(
    scenario,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    progress: Callable[[float], None] | None = None,
    keep: str | os.PathLike | None = None,
) -> Result:
    """Run ``scenario`` in ns-2.35 and return its results in aqmlab's format.

    Bad input or a key ns-2.35 cannot express raises :class:`aqmlab.ScenarioError`
    (``'<key path>: ns-2.35 cannot express ...'``); a missing ``ns`` :class:`Ns2Missing`; a
    failed ``ns`` :class:`Ns2Error`. ``progress(sim_seconds)`` is called as the run advances.
    ``keep``: a folder that receives the Tcl script (``ns2.tcl``) and the event lines; the trace
    itself is removed with the temporary folder."""
    from ..run.source import check_overrides, check_seed, read_source

    ns = find_ns()
    src = read_source(scenario)
    ov = check_overrides(overrides)
    seed = check_seed(seed)
    plan = make_plan(src, seed, ov)
    resolved = _core.resolve(src.text, src.name, ov, seed, ["The scenario of this run, resolved by aqmlab and "
                                                             "run in ns-2.35 (aqmlab crosscheck)."])
    with tempfile.TemporaryDirectory(prefix="aqmlab-ns2-") as tmp:
        d = Path(tmp)
        script = write_script(plan, "trace.tr", "events.txt")
        (d / "ns2.tcl").write_text(script, encoding="utf-8")
        t0 = time.perf_counter()
        _run_ns(ns, d, progress)
        wall = time.perf_counter() - t0
        ev = read_events(str(d / "events.txt"))
        if ev["end"] is None:
            raise Ns2Error("ns-2.35 stopped before the end of the run (no end line in its events)")
        last_seq = {f.fid: -(-f.size // f.packet_size) - 1 for f in plan.flows if f.size is not None}
        stops = {f.fid: f.stop_ns for f in plan.flows if f.stop_ns is not None and f.transport == "tcp"
                 and f.size is None}
        counts = read_trace(plan, str(d / "trace.tr"), last_seq, stops)
        if keep is not None:
            k = Path(keep)
            k.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(d / "ns2.tcl", k / "ns2.tcl")
    return assemble(plan, counts, ev, ns, resolved, ov, wall)


def _run_ns(ns: str, d: Path, progress) -> None:
    """Run ``ns ns2.tcl`` in ``d``, passing its progress lines on; one-line errors."""
    err_tail: deque = deque(maxlen=5)
    try:
        proc = subprocess.Popen([ns, "ns2.tcl"], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace")
    except OSError as e:
        raise Ns2Missing(f"cannot start {ns}: {e.strerror or e}; install ns-2.35 with `{INSTALL}`") from None
    try:
        import threading

        def drain():
            for line in proc.stderr:
                if line.strip():
                    err_tail.append(line.strip())

        th = threading.Thread(target=drain, daemon=True)
        th.start()
        for line in proc.stdout:
            if line.startswith("P ") and progress is not None:
                try:
                    progress(float(line.split()[1]))
                except ValueError:
                    pass
        rc = proc.wait()
        th.join(timeout=5)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if rc != 0:
        why = " | ".join(err_tail) or f"exit status {rc}"
        raise Ns2Error(one_line(f"ns-2.35 failed (exit status {rc}): {why}"))


def row(scenario, seed: int | None = None, overrides: Sequence[str] = ()) -> dict:
    """The flat metrics row (:func:`aqmlab.run.metrics.run_row`) of ``scenario`` run in ns-2.35: the
    same keys as an aqmlab run's row, for a sweep table or a report's ns-2.35 column."""
    from ..run.metrics import run_row

    return run_row(run(scenario, seed, overrides))


__all__ = ["run", "row", "find_ns", "available", "build_id", "INSTALL"]
