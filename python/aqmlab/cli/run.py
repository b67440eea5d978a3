"""``aqmlab run SCENARIO [--seed N] [--out DIR] [--set key.path=value ...]``: run a scenario, write its
results into its own folder and print a table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import _core
from ..base.errors import OutDirError, ScenarioError, UserError
from .common import add_max_memory, add_scenario, out_dir, print_notes, scenario_error, source
from .output import summary_table


def add_parser(sub) -> None:
    r = sub.add_parser("run", help="run a scenario and write its results")
    add_scenario(r)
    r.add_argument("--seed", type=int, help="random seed, 0 to 2^64-1 (replaces simulation.seed)")
    r.add_argument("--out", help="output directory (default: results/<scenario name>, with -seed<N> and "
                                 "-set-<digest> for another seed and overrides)")
    r.add_argument("--force", action="store_true",
                   help="write into --out even if it holds another run's results (they are replaced)")
    r.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override a scenario value (repeatable)")
    r.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    add_max_memory(r)
    r.set_defaults(fn=cmd_run)


def cmd_run(a) -> int:
    from ..run.rundir import check_out, default_out, free_out, remove_stale, resolved_text

    src = source(a.scenario)
    # validate first so a mistake is reported before any work
    try:
        info = json.loads(_core.validate(src.text, src.name, a.set or []))
        resolved = resolved_text(src.text, src.name, a.scenario, a.set or [], a.seed)
    except ScenarioError as e:
        raise scenario_error(a.scenario, e, a.set)
    if not a.quiet:
        print_notes(a.scenario, info)
    # never replace another run's results (docs/scenarios.md, "Where results go")
    try:
        out = Path(a.out) if a.out else default_out(info.get("name") or src.name, a.set or [], a.seed,
                                                      info.get("seed"))
    except OutDirError as e:
        raise UserError(f"{a.scenario}: {e}")
    moved = None
    try:
        if a.out or a.force:
            check_out(out, resolved, a.force)
        else:  # the default folder: beside an earlier run of an edited file, never over it
            out, moved = free_out(out, resolved)
    except OutDirError as e:
        raise UserError(f"--out {e}" if a.out else str(e))
    if moved and not a.quiet:
        print(f"note: {moved.split('; give')[0]}; this run's results go to {out}/", file=sys.stderr)
    out_dir(out)
    progress = None if a.quiet else _LazyBar(info["duration_s"])
    try:
        from ..run.api import run

        if info.get("captures"):  # traces are written straight into the run's folder
            out.mkdir(parents=True, exist_ok=True)
        res = run(src, seed=a.seed, overrides=a.set or [], progress=progress,
                  pcap_dir=out if info.get("captures") else False)
    except ScenarioError as e:
        raise scenario_error(a.scenario, e, a.set)
    finally:
        if progress is not None:
            progress.close()
    res._scenario = resolved
    try:
        files = res.save(out)
        remove_stale(out, files)
    except OSError as e:
        from ..base.io import os_reason

        raise UserError(f"--out {out}: cannot write results: {os_reason(e)}")
    if not a.quiet:
        print(summary_table(res))
        print(f"\nresults: {out}/ ({', '.join(p.name for p in files)})")
    return 0


class _LazyBar:
    """A progress bar (in simulated seconds) that appears only once a run has lasted 2 s of wall time,
    so a short run never imports tqdm."""

    def __init__(self, total: float, delay: float = 2.0):
        import time

        self.total, self.t0, self.delay, self.bar = total, time.monotonic(), delay, None

    def __call__(self, t: float) -> None:
        if self.bar is None:
            import time

            if time.monotonic() - self.t0 < self.delay:
                return
            from ..base.io import progress_bar

            self.bar = progress_bar(total=self.total, unit="sim s", leave=False,
                            bar_format="{l_bar}{bar}| {n:.1f}/{total:.0f} sim s [{elapsed}<{remaining}]")
        self.bar.update(t - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
