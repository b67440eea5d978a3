"""``aqmlab reproduce ID ... | --all [--quick] [--ns2] [--jobs N] [--out DIR] [--scheduler tcp://HOST:PORT]``:
the papers' experiments, their figures and tables, and a report (:mod:`aqmlab.reproduce`)."""

from __future__ import annotations

import sys
from pathlib import Path

from ..base.errors import ExperimentError, Ns2Missing, RunFailed, SweepError, UserError
from .common import (EXIT_FAILED, add_executor_args, add_max_memory, cache_arg, err, executor_args, jobs_arg,
                     out_dir, warn)


def add_parser(sub) -> None:
    rp = sub.add_parser("reproduce", help="run the papers' experiments; figures, tables and a report")
    rp.add_argument("ids", nargs="*", metavar="ID", help="experiment ids (see `aqmlab list experiments`)")
    rp.add_argument("--all", action="store_true", help="every experiment")
    rp.add_argument("--quick", action="store_true", help="each experiment's quick settings (fewer seeds, shorter runs)")
    rp.add_argument("--out", default="reproduction", help="output directory (default: reproduction)")
    rp.add_argument("--jobs", "-j", type=int, help="parallel processes (default: all cores)")
    rp.add_argument("--cache", metavar="DIR", help="result cache (default: $AQMLAB_CACHE or ~/.cache/aqmlab)")
    rp.add_argument("--no-cache", action="store_true", help="neither reuse nor keep results")
    add_executor_args(rp)
    rp.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override for every run (repeatable)")
    rp.add_argument("--experiments", metavar="DIR", help="experiment definitions (default: ./experiments)")
    rp.add_argument("--keep-going", action="store_true",
                    help="skip experiments whose scenarios do not validate (listed in the report) instead of stopping")
    rp.add_argument("--ns2", action="store_true",
                    help="also run every run point ns-2.35 can express in ns-2.35 (its `ns` program; "
                         "docs/crosscheck.md) and show paper / ns-2.35 / aqmlab in the report")
    rp.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    add_max_memory(rp)
    rp.set_defaults(fn=cmd_reproduce)


def cmd_reproduce(a) -> int:
    from ..reproduce import reproduce, select

    out = Path(a.out)
    if a.all and a.ids:
        raise UserError("give experiment ids or --all, not both")
    jobs = jobs_arg(a)
    try:
        exps = select(a.ids, a.all, a.experiments)
    except ExperimentError as e:
        raise UserError(str(e))
    out_dir(out)
    ex = executor_args(a)
    log = (lambda s: None) if a.quiet else (lambda s: print(s, file=sys.stderr))
    try:
        done = reproduce(exps, out, quick=a.quick, jobs=jobs, cache=cache_arg(a), extra_set=a.set or [],
                         keep_going=a.keep_going, progress=False if a.quiet else "tty", log=log, warn=warn,
                         ns2=a.ns2, **ex)
    except (ExperimentError, SweepError, Ns2Missing) as e:
        raise UserError(str(e))
    except RunFailed as e:
        return err(str(e), EXIT_FAILED)
    bad = [d for d in done if d.errors or d.skipped]
    if not a.quiet:
        print(f"report: {out / 'report.md'} and {out / 'report.html'}")
    for d in bad:
        for msg in ([d.skipped] if d.skipped else d.errors):
            err(f"{d.exp.id}: {msg}", EXIT_FAILED)
    return EXIT_FAILED if bad else 0
