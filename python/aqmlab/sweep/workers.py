"""How the local pool starts its worker processes: "spawn" (a fresh interpreter, on every
platform), except that a worker never runs the parent's ``__main__``.

A spawned child normally imports the parent's main script (as ``__mp_main__``) before it runs
anything. A script that calls :func:`aqmlab.sweep` at its top level without an ``if __name__ ==
"__main__":`` guard would then start the sweep again in every worker — which Python refuses ("An
attempt has been made to start a new process before the current process has finished its
bootstrapping phase"), so every worker died and the sweep ended in ``RunFailed`` — and would run
whatever else the script does once per worker. The workers only run
:func:`aqmlab.sweep.executors.run_batch`, which needs nothing of the script, so they are started
without it: a sweep works from a plain script, a notebook or the REPL alike.

The standard library has no option for this: :func:`worker_context` wraps
``multiprocessing.spawn.get_preparation_data`` (what a spawned child is told to set up) once, so
that it leaves the main module out while, in the same thread, one of these workers is being
started, and only then. Every other process the program starts is prepared as before.
"""

from __future__ import annotations

import functools
import multiprocessing.context as _mpc
import threading
from multiprocessing import spawn as _spawn

#: set in the thread that is starting a worker, while it does
_starting = threading.local()


def _preparation_data(name, _original):
    data = _original(name)
    if getattr(_starting, "worker", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


class WorkerProcess(_mpc.SpawnProcess):
    """A spawned process that does not import the parent's ``__main__``."""

    @staticmethod
    def _Popen(process_obj):
        _starting.worker = True
        try:
            return _mpc.SpawnProcess._Popen(process_obj)
        finally:
            _starting.worker = False


class WorkerContext(_mpc.SpawnContext):
    Process = WorkerProcess


def worker_context() -> WorkerContext:
    """The multiprocessing context of the local pool's workers (see the module notes)."""
    if not getattr(_spawn.get_preparation_data, "aqmlab_workers", False):
        wrapped = functools.partial(_preparation_data, _original=_spawn.get_preparation_data)
        wrapped.aqmlab_workers = True
        _spawn.get_preparation_data = wrapped
    return WorkerContext()
