"""Every exception class of aqmlab, in one place.

The engine defines two and raises them (``aqmlab._core``); they are re-exported here. Everything
else derives from them or from a built-in class, as listed (the classes marked "public" are also
exported by the ``aqmlab`` package itself):

============================  ========================================  ============================================
class                         base classes                              raised when
============================  ========================================  ============================================
``ScenarioError`` (public)    ``ValueError`` (the engine's)             a mistake in a scenario or in the arguments
                                                                        of :func:`aqmlab.run` /
                                                                        :func:`aqmlab.validate` (a bad key or value,
                                                                        a bad seed); ``str(e)`` is
                                                                        ``'<file>: <key path>: <what is wrong>'``
``ScenarioFileError``         ``ScenarioError``, ``FileNotFoundError``  a scenario file that does not exist
``SimulationError`` (public)  ``RuntimeError`` (the engine's)           a run failed in the engine (never a user's
                                                                        mistake: please report it)
``RunFailed`` (public)        ``SimulationError``                       a sweep's runs failed (in the engine, or
                                                                        their worker died again and again), raised
                                                                        after its other runs are stored
``SweepError`` (public)       ``ValueError``                            a mistake in a sweep (``--vary``, templates,
                                                                        seeds, ``jobs``, the executor); one line
``CacheError``                ``SweepError``                            the result cache cannot be used (read-only,
                                                                        full, not a directory)
``CorruptEntry``              ``Exception``                             a cache entry whose files do not match its
                                                                        meta.json (found, removed and made again)
``CacheWarning``              ``UserWarning``                           the warning given for a corrupt cache entry
``EngineMismatch``            ``RuntimeError``                          a Dask worker's engine build is not the
                                                                        client's
``OutDirError``               ``Exception``                             a run's output folder holds something a run
                                                                        must not replace
``SpecError``                 ``ValueError``                            a bad figure or table specification (a
                                                                        metric, a ``where``)
``PlotError``                 ``ValueError``                            a mistake in what ``aqmlab plot`` was asked
``ExperimentError``           ``ValueError``                            a mistake in an experiment definition
``ModelError``                ``Exception``                             the base of the analytical models' errors
``ParameterError``            ``ModelError``, ``ValueError``            a model parameter outside what it accepts
``NotConvergedError``         ``ModelError``                            a model's solver found no solution
``RunDataError``              ``ModelError``                            a run folder that is missing, incomplete or
                                                                        does not fit a model
``EmulationError``            ``Exception``                             ``aqmlab emulate`` cannot set up or run
``PlanError``                 ``EmulationError``                        a scenario value emulation cannot honour
``Terminated``                ``KeyboardInterrupt``                     SIGTERM during an emulation run
``Ns2Error``                  ``Exception``                             ns-2.35 failed to run a translated scenario
``Ns2Missing``                ``Ns2Error``                              the ``ns`` program (ns-2.35) is not installed
``Ns3Error``                  ``Exception``                             the ns-3 program does not build or a run of
                                                                        it failed
``Ns3Missing``                ``Ns3Error``                              the ``ns3`` wheel (ns-3.44) or a C++
                                                                        compiler is not installed
``UserError``                 ``Exception``                             a command-line mistake: one ``error:`` line,
                                                                        exit status 2
============================  ========================================  ============================================

:func:`one_line` is the one-line form every error message takes.
"""

from __future__ import annotations

import re

from .._core import ScenarioError, SimulationError

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
        msg = re.sub(r"\S{%d,}" % (_LONG_WORD + 1), _elide, msg)
    return msg


def did_you_mean(name: str, known) -> str:
    """``; did you mean "fq_codel"?`` when ``name`` is close to one of ``known`` (case, ``-`` for
    ``_`` and small typos forgiven: ``CHOKe``, ``fq-codel``, ``chokee``; for short names such as
    nodes, one letter too many or too few: ``bb`` for ``b``, ``r12`` for ``r1``), else ``""``."""
    import difflib

    known = [str(k) for k in known]
    norm = name.strip().lower().replace("-", "_").replace(" ", "_")
    same = [k for k in known if k.lower() == norm or k.lower().replace("_", "") == norm.replace("_", "")]
    near = same[:1] or difflib.get_close_matches(norm, known, n=1, cutoff=0.7)
    if not near and len(norm) <= 4:  # a short name: one letter added or dropped, if only one name fits
        fits = [k for k in known if abs(len(k) - len(norm)) == 1
                and (k.lower() in norm or norm in k.lower())]
        near = fits if len(fits) == 1 else []
    near = [n for n in near if n != name]
    return "; did you mean " + " or ".join(f'"{n}"' for n in near) + "?" if near else ""


_UNKNOWN_LISTED = re.compile(r'unknown [\w ]+? "([^"]*)"; (?:available|nodes are|links are): ([\w, -]+)')
_UNKNOWN_SERDE = re.compile(r"unknown (?:field|variant) `([^`]*)`, expected (?:one of )?(`[^\n]*`)")


def with_suggestion(msg: str) -> str:
    """An engine error about an unknown name (``unknown AQM "chokee"; available: ...``, serde's
    ``unknown field `min_thresh`, expected one of ...``) with a "did you mean" for the closest
    known name; other messages as they are."""
    if "did you mean" in msg:
        return msg
    m = _UNKNOWN_LISTED.search(msg)
    if m:
        hint = did_you_mean(m.group(1), [k.strip() for k in m.group(2).split(",") if k.strip()])
        return msg[: m.end()] + hint + msg[m.end():] if hint else msg
    m = _UNKNOWN_SERDE.search(msg)
    if m:
        hint = did_you_mean(m.group(1), re.findall(r"`([^`]*)`", m.group(2)))
        return msg + hint if hint else msg
    return msg


# ----------------------------------------------------------------------------- running a scenario


class ScenarioFileError(ScenarioError, FileNotFoundError):
    """A scenario file that does not exist; both an :class:`aqmlab.ScenarioError` and a
    ``FileNotFoundError``."""


class OutDirError(Exception):
    """The output folder holds something a run must not replace (the message says what)."""


# ----------------------------------------------------------------------------- sweeps and the cache


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


class CorruptEntry(Exception):
    """A cache entry whose files do not match its meta.json."""


class CacheWarning(UserWarning):
    """A corrupt cache entry was found; it is made again."""


class EngineMismatch(RuntimeError):
    """A worker's engine build differs from the client's (its results would not match the keys)."""


# ----------------------------------------------------------------------------- figures, tables, experiments


class SpecError(ValueError):
    """A bad metric, ``where`` or other part of a figure or table specification."""


class PlotError(ValueError):
    """A mistake in what was asked (the message names the option or source and what is allowed)."""


class ExperimentError(ValueError):
    """A mistake in an experiment definition; the text starts with the file and the key."""


# ----------------------------------------------------------------------------- analytical models


class ModelError(Exception):
    """Base class of every error the models raise on purpose."""


class ParameterError(ModelError, ValueError):
    """A parameter value outside what the model accepts (the message says what is allowed)."""


class NotConvergedError(ModelError):
    """A solver did not find a solution; raised by ``require()`` on a non-converged result."""


class RunDataError(ModelError):
    """A simulation run directory is missing, incomplete or does not fit the model."""


# ----------------------------------------------------------------------------- emulation


class EmulationError(Exception):
    """A run could not be set up or failed; the message is one line a user can act on."""


class PlanError(EmulationError):
    """A scenario value emulation cannot honour: ``<key path>: <why>``."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: the run is stopped and cleaned up like after Ctrl-C."""


# ----------------------------------------------------------------------------- ns-2.35


class Ns2Error(Exception):
    """ns-2.35 cannot run a translated scenario: the ``ns`` program is missing, or it failed (the
    message is one line a user can act on)."""


class Ns2Missing(Ns2Error):
    """The ``ns`` program (Debian's ``ns2`` package, ns-2.35) is not installed."""


# ----------------------------------------------------------------------------- ns-3


class Ns3Error(Exception):
    """The ns-3 program (docs/validation-ns3.md) does not build against the ``ns3`` wheel, or a run
    of it failed (one line a user can act on)."""


class Ns3Missing(Ns3Error):
    """The ``ns3`` wheel (ns-3.44's C++ libraries and headers) or a C++ compiler is not installed."""


# ----------------------------------------------------------------------------- the command line


class UserError(Exception):
    """An error the user can act on: printed as one line, exit code 2."""


__all__ = ["ScenarioError", "ScenarioFileError", "SimulationError", "RunFailed", "SweepError", "CacheError",
           "CorruptEntry", "CacheWarning", "EngineMismatch", "OutDirError", "SpecError", "PlotError",
           "ExperimentError", "ModelError", "ParameterError", "NotConvergedError", "RunDataError", "EmulationError",
           "PlanError", "Terminated", "Ns2Error", "Ns2Missing", "Ns3Error", "Ns3Missing", "UserError", "one_line"]
