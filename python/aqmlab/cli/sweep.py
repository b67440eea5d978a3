"""``aqmlab sweep SCENARIO --vary key.path=v1,v2,... [--seeds K] [--jobs N] [--out DIR]
[--executor local|dask --scheduler tcp://HOST:PORT]``: a grid of runs, parallel and cached
(:mod:`aqmlab.sweep`)."""

from __future__ import annotations

from pathlib import Path

from ..base.errors import RunFailed, SweepError, UserError
from .common import (EXIT_FAILED, add_executor_args, add_max_memory, add_scenario, cache_arg, err, executor_args,
                     jobs_arg, out_dir, source, warn)
from .output import SweepTable, check_show


def add_parser(sub) -> None:
    sw = sub.add_parser("sweep", help="run a scenario over varied values and seeds (parallel, cached)")
    add_scenario(sw)
    sw.add_argument("--vary", action="append", metavar="KEY.PATH=V1,V2,...",
                    help="values of one key (repeatable; several give their cartesian product)")
    sw.add_argument("--seeds", type=int, default=1, help="runs per point, seeds S, S+1, ... (default 1)")
    sw.add_argument("--seed", type=int, help="first seed S (default: the scenario's simulation.seed)")
    sw.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override for every run (repeatable)")
    sw.add_argument("--jobs", "-j", type=int, help="parallel processes (default: all cores)")
    sw.add_argument("--cache", metavar="DIR", help="result cache (default: $AQMLAB_CACHE or ~/.cache/aqmlab)")
    sw.add_argument("--no-cache", action="store_true", help="neither reuse nor keep results between sweeps")
    add_executor_args(sw)
    sw.add_argument("--out", help="output directory (default: results/<scenario file stem>-sweep)")
    sw.add_argument("--tables", default="flows", metavar="T1,T2",
                    help="result tables to gather besides runs: flows, timeseries, queue_snapshots, flow_series, latency "
                         "(default flows; '' for none)")
    sw.add_argument("--show", metavar="COL,...",
                    help="the runs-table columns to print (default: chosen by the groups: utilisation, delay, the TCP "
                         "groups' goodput or shares, the UDP share, a probe's delay percentiles and loss, Jain's "
                         "index); a pattern such as 'group.*.share'; +COL adds to the defaults; `aqmlab list metrics` "
                         "lists every column")
    sw.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    add_max_memory(sw)
    sw.set_defaults(fn=cmd_sweep)


def cmd_sweep(a) -> int:
    from ..sweep import TABLES, Sweep

    src = source(a.scenario)
    out = Path(a.out) if a.out else Path("results") / f"{src.name}-sweep"
    tables = [t.strip() for t in a.tables.split(",") if t.strip()] if a.tables else []
    names = {v: k for k, v in TABLES.items()} | {k: k for k in TABLES}
    for t in tables:
        if t not in names:
            raise UserError(f"--tables {t}: unknown table; one of: {', '.join(TABLES.values())}")
    jobs = jobs_arg(a)
    try:
        sw = Sweep(src, a.vary or [], a.seeds, seed=a.seed, overrides=a.set or [])
        tasks = sw.tasks()
    except SweepError as e:
        msg = str(e)
        raise UserError(msg if msg.startswith((src.label, "--")) else f"{a.scenario}: {msg}")
    check_show(a.show, sw.coord_names)
    from ..sweep import SweepResult, execute, open_cache

    out_dir(out)
    cache, tmp = open_cache(cache_arg(a))
    ex = executor_args(a)
    rows: dict = {}
    try:
        stats = execute(tasks, cache, jobs=jobs, progress=False if a.quiet else "tty", rows=rows, warn=warn, **ex)
    except RunFailed as e:
        return err(str(e), EXIT_FAILED)
    except SweepError as e:
        raise UserError(str(e))
    res = SweepResult(sw, tasks, cache, stats, tmp, rows=rows)
    try:
        files = res.save(out, tables=[names[t] for t in tables])
    except OSError as e:
        from ..base.io import os_reason

        raise UserError(f"--out {out}: cannot write results: {os_reason(e)}")
    table = SweepTable(res.runs, res.coords, a.show, _first_summary(res))
    try:
        files += table.save(out, caption=f"{src.name}: mean over {a.seeds} seed{'s' if a.seeds != 1 else ''} per point.")
    except OSError as e:
        from ..base.io import os_reason

        raise UserError(f"--out {out}: cannot write the table: {os_reason(e)}")
    if not a.quiet:
        print(table.text())
        print(f"\n{stats['total']} runs ({stats['cached']} from the cache, {stats['computed']} run now)")
        print(f"results: {out}/ ({', '.join(p.name for p in files)})")
    return 0


def _first_summary(res) -> dict | None:
    """The first run's summary (its groups choose the default columns); None if it cannot be read."""
    from ..base.errors import CorruptEntry

    try:
        return res.summary(0) if res.tasks else None
    except (CorruptEntry, OSError, KeyError, ValueError):
        return None
