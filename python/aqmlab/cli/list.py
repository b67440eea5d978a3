"""``aqmlab list aqm|tcp|traffic|experiments [--describe]``: what is available."""

from __future__ import annotations

from .. import _core
from ..base.errors import ExperimentError, UserError


def add_parser(sub) -> None:
    ls = sub.add_parser("list", help="list available AQMs, TCP variants or traffic models")
    ls.add_argument("kind", choices=["aqm", "tcp", "traffic", "experiments"])
    ls.add_argument("-d", "--describe", action="store_true", help="add a one-line description")
    ls.add_argument("--experiments", metavar="DIR", help="experiment definitions (default: ./experiments)")
    ls.set_defaults(fn=cmd_list)


def cmd_list(a) -> int:
    if a.kind == "experiments":
        from ..reproduce import list_experiments

        try:
            exps = list_experiments(a.experiments)
        except ExperimentError as e:
            raise UserError(str(e))
        if not exps:
            from ..reproduce import experiments_dir

            raise UserError(f"{experiments_dir(a.experiments)}: no experiments found (give --experiments DIR)")
        w = max(len(e.id) for e in exps)
        for e in exps:
            print(f"{e.id:<{w}}  {e.description}" + (f"  [{e.paper}: {e.source}]" if a.describe else ""))
        return 0
    for name, desc in _core.names(a.kind):
        print(f"{name:<12} {desc}" if a.describe else name)
    if a.kind == "tcp":  # then the presets (`tcp.preset`): with -d their values and sources
        for name, desc in _core.tcp_presets(a.describe):
            print(f"{name:<12} {desc}" if a.describe else name)
    return 0
