"""`aqmlab emulate SCENARIO [--seed N] [--out DIR] [--set ...] [--cc ...] [-- CMD ...]`: the scenario
with real Linux TCP and UDP through aqmlab's queues (:mod:`aqmlab.emulate`; root)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import _core
from ..base.errors import EmulationError, PlanError, ScenarioError, Terminated, UserError
from ..base.units import fmt_delay
from .common import EXIT_TERMINATED, EXIT_USAGE, Parser, scenario_error, source
from .output import summary_table


def _options(e) -> None:
    e.add_argument("--seed", type=int, help="random seed (replaces simulation.seed): start times, ON/OFF periods, AQM draws")
    e.add_argument("--out", help="output directory (default: results/<scenario file stem>-emulated)")
    e.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override a scenario value (repeatable)")
    e.add_argument("--cc", action="append", metavar="[GROUP=]NAME",
                   help="Linux congestion control for every TCP group, or one (e.g. bbr, cubic, reno; repeatable)")
    e.add_argument("--cmd-group", metavar="GROUP", help="the flow group whose namespace runs CMD (default: the first)")
    e.add_argument("--server", metavar="CMD", help="a command run in the receivers' namespace before time 0 "
                                                    "(e.g. 'iperf3 -s'), stopped at the end")
    e.add_argument("--cleanup", action="store_true",
                   help="only remove what interrupted runs left behind (namespaces, processes), then exit")
    e.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def add_parser(sub) -> None:
    e = sub.add_parser(
        "emulate",
        usage="aqmlab emulate [options] SCENARIO [options] [-- CMD ...]",
        help="run a scenario with real Linux TCP/UDP through aqmlab's queues (root)",
        description="Emulate a dumbbell scenario on this host: network namespaces joined by TUN devices to a "
                    "forwarder that applies the bottleneck with aqmlab's queue discipline; real Linux TCP and "
                    "UDP senders. Real time: the run takes simulation.duration of wall time. Needs root. "
                    "CMD, after --, runs at time 0 in a sender namespace as host pair 0 of --cmd-group; its "
                    "receiver's address is in $AQMLAB_RECEIVER (a discard sink listens on TCP and UDP port 9).",
    )
    _options(e)
    e.add_argument("scenario", nargs="?", help="scenario file (TOML)")
    # options after the scenario, and `-- CMD ...`: parsed in cmd_emulate (argparse cannot mix them)
    e.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    e.set_defaults(fn=cmd_emulate)


def split_rest(a) -> list[str]:
    """Parse the options given after the scenario into `a`; return the command after `--`."""
    rest = list(a.rest or [])
    cmd: list[str] = []
    if getattr(a, "command", None) is not None:  # split off by cli.main at the first `--`
        cmd = list(a.command)
    elif "--" in rest:
        i = rest.index("--")
        rest, cmd = rest[:i], rest[i + 1:]
    elif rest and not rest[0].startswith("-"):
        rest, cmd = [], rest  # argparse consumed the `--` right after the scenario
    if rest:
        late = Parser(prog="aqmlab emulate", usage="aqmlab emulate [options] SCENARIO [options] [-- CMD ...]",
                       add_help=False)
        _options(late)
        late.parse_args(rest, namespace=a)
    return cmd


def _emulation_lines(res) -> list[str]:
    em = res.summary["emulation"]
    fwd = em["forwarder"]
    ccs = "; ".join(f"{g['name']}: {g['linux_cc']} (SACK {'on' if g['sack'] else 'off'})"
                    for g in em["groups"] if g["transport"] == "tcp")
    lines = [f"emulated on Linux {em['kernel']}" + (f"; TCP {ccs}" if ccs else "")]
    lines.append(
        f"forwarder: {res.summary['engine']['packets_created']} packets, departures late by p50 "
        f"{fmt_delay(fwd['late_p50_s'])}, p99 {fmt_delay(fwd['late_p99_s'])} (max {fmt_delay(fwd['late_max_s'])}); "
        f"CPU {fwd['cpu_s']:.2f} s; sender TUN queue drops {em['tun_queue_drops']}")
    wait = fwd.get("runqueue_wait_s", 0) / max(fwd["wall_s"], 1e-9)
    if wait > 0.05:
        lines.append(f"warning: the forwarder waited for a CPU {wait * 100:.0f}% of the time (the machine is busy): "
                     f"packets left late; see docs/emulation.md, limits")
    if em["tun_queue_drops"]:
        lines.append(f"warning: the senders' TUN queues dropped {em['tun_queue_drops']} packets the forwarder did "
                     f"not read in time (they never reached the emulated network)")
    for e in em["agent_errors"]:
        lines.append(f"warning: a sender reported: {e}")
    cmd = em.get("cmd")
    if cmd:
        status = (f"exited with status {cmd['exit_status']}" if cmd.get("finished")
                  else "was still running at the end and was stopped")
        import shlex

        shown = shlex.join(cmd["argv"]).replace("\n", " ")
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        lines.append(f"command `{shown}` ({cmd['sender']} -> {cmd['receiver']}) {status}")
    return lines


def _for_display(res):
    """The result with counts the kernel does not report (None) shown as '-' by the run table."""
    import copy

    shown = copy.copy(res)
    shown.summary = copy.deepcopy(res.summary)
    for g in shown.summary["groups"]:
        if g.get("timeouts") is None:
            g["timeouts"] = "-"
    return shown


def cmd_emulate(a) -> int:
    """The subcommand; a user's mistake prints one line and exits with 2."""
    try:
        return _emulate(a)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE


def _emulate(a) -> int:
    from ..emulate import netns
    from ..emulate.run import emulate

    cmd = split_rest(a)
    if a.cleanup:
        problem = netns.privilege_problem()
        if problem:
            raise UserError(problem)
        gone = netns.sweep()
        if not a.quiet:
            print(f"removed {len(gone)} namespace(s) left by interrupted runs" + (f": {', '.join(gone)}" if gone else ""))
        return 0
    if not a.scenario:
        raise UserError("emulate: give a scenario file (or --cleanup)")
    if a.seed is not None and a.seed < 0:
        raise UserError("--seed: must be a non-negative integer")
    src = source(a.scenario)
    out = Path(a.out) if a.out else Path("results") / f"{src.name}-emulated"
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")
    server = None
    if a.server:
        import shlex

        server = shlex.split(a.server)
    log = (lambda s: None) if a.quiet else (lambda s: print(s, file=sys.stderr))
    try:
        import json

        info = json.loads(_core.emulation_plan(src.text, src.name, a.set or [], a.seed))
    except ScenarioError as e:
        raise scenario_error(a.scenario, e, a.set)
    bar = None
    progress = None
    if not a.quiet:
        try:
            from ..base.io import progress_bar

            bar = progress_bar(total=info["duration_ns"] / 1e9, unit="s", leave=False,
                       bar_format="{l_bar}{bar}| {n:.1f}/{total:.0f} s [{elapsed}<{remaining}]")

            def progress(t, bar=bar):
                bar.update(t - bar.n)
        except ImportError:  # pragma: no cover
            bar = None
    try:
        res = emulate(Path(a.scenario), seed=a.seed, overrides=a.set or [], cc=a.cc or [], cmd=cmd or None,
                      cmd_group=a.cmd_group, server=server, progress=progress, log=log)
    except ScenarioError as e:
        raise scenario_error(a.scenario, e, a.set)
    except PlanError as e:
        raise UserError(f"{a.scenario}: {e}" if not str(e).startswith("--") else str(e))
    except Terminated:
        if bar is not None:
            bar.close()
        print("terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except EmulationError as e:
        if bar is not None:
            bar.close()
        if str(e).startswith("aqmlab emulate needs"):
            raise UserError(str(e))
        print(f"error: {a.scenario}: emulation failed: {e}", file=sys.stderr)
        return 1
    finally:
        if bar is not None:
            bar.close()
    try:
        files = res.save(out)
    except OSError as e:
        raise UserError(f"--out {out}: cannot write results: {e.strerror or e}")
    if not a.quiet:
        print(summary_table(_for_display(res)))
        print()
        print("\n".join(_emulation_lines(res)))
        print(f"\nresults: {out}/ ({', '.join(p.name for p in files)})")
    return 0
