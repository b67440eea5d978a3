"""The ``aqmlab`` command: its parser, one subcommand per module of this package, and :func:`main`."""

from __future__ import annotations

import argparse
import os
import sys

from ..base.errors import ScenarioError, SimulationError, UserError
from ..base.version import __version__
from . import bench, crosscheck, diff, emulate, model, plot, reproduce, run, sweep, validate
from . import list as list_
from .common import EXIT_FAILED, EXIT_INTERRUPTED, Parser, err, resolve_scenario

#: the subcommands' modules, in the order ``aqmlab --help`` lists them
COMMANDS = (run, validate, diff, list_, bench, sweep, reproduce, plot, model, emulate, crosscheck)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="aqmlab", description="Packet-level simulation of active queue management.")
    p.add_argument("--version", action="version", version=f"aqmlab {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def split_emulate_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """``aqmlab emulate ... -- CMD ...``: the arguments before the first ``--``, and CMD (None without
    one). CMD is the user's, whatever it looks like (``-x``, ``--help``): argparse would read a CMD
    that starts with ``-`` as options of ours."""
    if "emulate" in argv and "--" in argv and argv.index("emulate") < argv.index("--"):
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def main(argv=None) -> int:
    entry = argv is None  # the process's own command line (the `aqmlab` script, python -m aqmlab.cli)
    argv, after = split_emulate_command(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    if after is not None:
        args.command = after
    if getattr(args, "max_memory", None):
        # read by the engine in this process and in every worker it starts (sent with each batch to a cluster)
        os.environ["AQMLAB_MAX_MEMORY"] = args.max_memory
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed <= (1 << 64) - 1:
        return err(f"--seed: must be an integer from 0 to 2^64-1 (18446744073709551615), got {seed}")
    try:
        resolve_scenario(args)
        return args.fn(args)
    except UserError as e:
        return err(str(e))
    except ScenarioError as e:  # from the API layer, already '<file>: <key path>: <why>'
        return err(str(e))
    except SimulationError as e:
        return err(f"{getattr(args, 'scenario', '')}: simulation failed: {e}", EXIT_FAILED)
    except MemoryError:  # past the estimate (docs/scenarios.md, "Resources"): reported below, once the
        pass  # exception and the frames that held the memory are gone
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        if entry:
            exit_now(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `aqmlab list aqm | head -1`
        return 0
    where = getattr(args, "scenario", None)
    return err(f"{where + ': ' if isinstance(where, str) else ''}out of memory: the process could not get more "
               "memory than its limits allow (ulimit -v, its cgroup, the machine); give the run less to hold "
               "(fewer flows, longer sample intervals) or more memory; see docs/scenarios.md, \"Resources\"")


def exit_now(code: int) -> None:
    """End the process at once with ``code``, after the ``atexit`` handlers (temporary folders,
    worker processes) but without freeing what the interrupted command built: after Ctrl-C a run
    may hold tens of millions of Python objects, and freeing them one by one takes seconds."""
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
