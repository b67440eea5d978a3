"""The exceptions of the Python API (all exported by ``aqmlab``).

=======================  ===========================================================================
``ScenarioError``        a mistake in a scenario or in the arguments of :func:`aqmlab.run` /
                         :func:`aqmlab.validate` (a bad key or value, a missing file, a bad seed);
                         ``str(e)`` is ``'<file>: <key path>: <what is wrong>'``. A ``ValueError``.
``SweepError``           a mistake in a sweep (``--vary``, templates, seeds, ``jobs``, the cache
                         directory, the executor); one line. A ``ValueError``.
``SimulationError``      a run failed in the engine (never a user's mistake: please report it).
``RunFailed``            a ``SimulationError`` raised by a sweep after its other runs are stored:
                         a run failed, or its worker process died again and again.
=======================  ===========================================================================
"""

from __future__ import annotations

from ._core import ScenarioError, SimulationError


def one_line(msg: str) -> str:
    """``msg`` with control characters (newlines, tabs, ...) escaped as ``\\n`` etc.: an error is one line."""
    if msg.isprintable():
        return msg
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in msg)


class SweepError(ValueError):
    """A mistake in a sweep's definition or set-up (bad --vary, bad template, a scenario that does not
    validate, a cache that cannot be written, an executor that cannot be reached); one line."""

    def __init__(self, message="", *args):
        super().__init__(one_line(str(message)), *args)


class CacheError(SweepError):
    """The result cache cannot be used (read-only, full, not a directory)."""


class RunFailed(SimulationError):
    """Runs of a sweep failed (in the engine, or their worker died repeatedly); the message names the
    first and counts the others. Every other run is stored."""

    def __init__(self, message: str, failures=()):
        super().__init__(message)
        self.failures = list(failures)


__all__ = ["ScenarioError", "SimulationError", "SweepError", "CacheError", "RunFailed", "one_line"]
