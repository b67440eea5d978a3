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


_LONG_WORD = 200  # longest word (run of non-space characters) an error quotes whole; a file path fits
_KEEP = 60


def _elide(m) -> str:
    word = m.group(0)
    tail = word[-3:]
    tail = tail[len(tail.rstrip("\"'`,;:.)]}")):] if tail else ""
    return f"{word[:_KEEP]}\u2026{tail} ({len(word)} characters)"


def one_line(msg: str) -> str:
    """``msg`` as one line of reasonable length: control characters (newlines, tabs, ...) escaped as
    ``\\n`` etc., and a word longer than 200 characters (a value of 100,000) cut to its first 60, an
    ellipsis, its closing quote and its length -- as the engine's errors do."""
    if not msg.isprintable():
        msg = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in msg)
    if len(msg) > _LONG_WORD:
        import re

        msg = re.sub(r"\S{%d,}" % (_LONG_WORD + 1), _elide, msg)
    return msg


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
