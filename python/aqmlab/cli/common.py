"""What every ``aqmlab`` command shares: exit codes, one-line errors and warnings, the argument
parser class, and the options and checks several commands take (``--out``, ``--jobs``,
``--cache``, ``--executor``/``--scheduler``, ``--max-memory``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.errors import ScenarioError, UserError, one_line
from ..base.units import parse_size
from ..run.source import read_source

EXIT_USAGE = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


def err(msg: str, code: int = EXIT_USAGE) -> int:
    """Print ``error: <msg>`` (one line; an unknown name gets a "did you mean") on stderr; returns
    ``code`` (the exit status)."""
    from ..base.errors import with_suggestion

    print(f"error: {one_line(with_suggestion(msg))}", file=sys.stderr)
    return code


def warn(msg: str) -> None:
    """Print ``warning: <msg>`` (one line) on stderr."""
    print(f"warning: {one_line(msg)}", file=sys.stderr)


def print_notes(scenario, info: dict) -> None:
    """Print ``note: <file>: <key path>: <why>`` on stderr for each part of a queue discipline the
    scenario's links never use though it acts (``notes`` of ``_core.validate``: RED's ``max_th``
    beyond the buffer, ...)."""
    for n in info.get("notes", []):
        print(f"note: {scenario}: {one_line(n)}", file=sys.stderr)


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line and exit status 2."""

    def error(self, message):  # argparse's usage errors: one line, exit 2
        self.print_usage(sys.stderr)
        print(f"error: {one_line(message)}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def add_scenario(p, what: str = "scenario file (TOML)") -> None:
    """The SCENARIO argument, or ``--example NAME``: an example installed with aqmlab (`aqmlab list
    examples`), runnable from any folder."""
    p.add_argument("scenario", nargs="?", help=f"{what}; or --example NAME")
    p.add_argument("--example", metavar="NAME",
                   help="an example scenario installed with aqmlab, e.g. voip-latency (`aqmlab list examples`)")


def resolve_scenario(a) -> None:
    """``a.scenario`` from ``--example NAME`` (its installed path), or a usage error when neither or
    both are given."""
    if not hasattr(a, "example"):
        return
    if a.example is not None and a.scenario is not None:
        raise UserError(f"--example {a.example}: give a scenario file or --example, not both")
    if a.example is not None:
        from ..run.source import example

        try:
            a.scenario = str(example(a.example))
        except ScenarioError as e:
            raise UserError(str(e))
    elif a.scenario is None:
        raise UserError("give a scenario file, or --example NAME for one installed with aqmlab "
                        "(`aqmlab list examples` lists them)")


def source(path: str):
    """The scenario file ``path`` (a :class:`~aqmlab.run.source.Source`), or a UserError."""
    try:
        return read_source(Path(path))
    except ScenarioError as e:  # missing, a directory, not text, too large, unreadable
        raise UserError(str(e))


def scenario_error(where: str, e: Exception, overrides=(), origins=None) -> UserError:
    """A scenario error as the command prints it: ``<file>: <key path>: <why>``, or, when an override
    caused it, ``--set <override>: <why>`` (:func:`~aqmlab.run.source.attribute`): the file is not
    blamed for what the command line changed."""
    from ..run.source import attribute

    msg, theirs = attribute(str(e), overrides or [], origins)
    return UserError(msg if theirs else f"{where}: {msg}")


def out_dir(out: Path) -> Path:
    """``--out``: a directory we can write into, checked before any run."""
    from ..base.io import probe_writable

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")
    try:
        probe_writable(out, f"--out {out}")
    except OSError as e:
        raise UserError(str(e.strerror or e))
    return out


# ----------------------------------------------------------------------------- sweeps' and reproductions' options


def cache_arg(a):
    """``--cache DIR`` / ``--no-cache`` as the ``cache`` argument of a sweep."""
    if a.no_cache:
        return False
    return a.cache if a.cache else True


def jobs_arg(a):
    """``--jobs``: None (every core) or a positive integer (up to executors.MAX_JOBS)."""
    from ..base.errors import SweepError
    from ..sweep.executors import check_jobs

    try:
        return check_jobs(a.jobs)
    except SweepError as e:
        raise UserError(str(e))


def executor_args(a) -> dict:
    """--executor/--scheduler as keyword arguments of execute(); a Dask scheduler is reached here,
    before any run."""
    from ..base.errors import SweepError
    from ..sweep.executors import make_pool

    executor = a.executor or ("dask" if a.scheduler is not None else "local")
    if executor == "local":
        if a.scheduler is not None:
            raise UserError("--scheduler: only with --executor dask")
        return {}
    try:
        return {"executor": make_pool("dask", scheduler=a.scheduler)}
    except SweepError as e:
        raise UserError(str(e))


def add_executor_args(p) -> None:
    p.add_argument("--executor", choices=["local", "dask"],
                   help="where runs are made: local processes (default) or a Dask cluster (needs --scheduler)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="the Dask scheduler's address (implies --executor dask; see docs/reproduce.md)")


def memory_arg(s: str) -> str:
    """``--max-memory``: a size such as ``8GB`` (checked here, passed on as text)."""
    try:
        parse_size(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    return s


def add_max_memory(*parsers) -> None:
    for sp in parsers:
        sp.add_argument("--max-memory", type=memory_arg, metavar="SIZE",
                        help="refuse a run whose memory estimate exceeds SIZE, e.g. 8GB "
                             "(default: $AQMLAB_MAX_MEMORY, else half the physical memory)")


__all__ = ["EXIT_USAGE", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "UserError", "err", "warn", "Parser",
           "source", "add_scenario", "resolve_scenario", "scenario_error", "out_dir", "cache_arg", "jobs_arg", "executor_args", "add_executor_args", "memory_arg",
           "add_max_memory"]
