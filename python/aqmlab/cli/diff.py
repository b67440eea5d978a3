"""``aqmlab diff RUN_A RUN_B [--all] [--engine]``: two run folders side by side — the scenario keys
that differ, then the numbers of their summaries with the difference (:mod:`aqmlab.run.diff`)."""

from __future__ import annotations

import math

from ..base.errors import ScenarioError, UserError


def add_parser(sub) -> None:
    d = sub.add_parser("diff", help="compare two runs: scenario keys that differ, summaries side by side",
                       description="Compare two run folders (written by aqmlab run): the scenario keys whose values "
                                   "differ, then every number of the two summaries (summary.json) with B - A and "
                                   "the relative change. By default only the numbers that differ are listed.")
    d.add_argument("run_a", metavar="RUN_A", help="a run folder")
    d.add_argument("run_b", metavar="RUN_B", help="another run folder")
    d.add_argument("--all", action="store_true", help="list every number, equal ones too")
    d.add_argument("--engine", action="store_true", help="include the engine's counters (events, packets)")
    d.set_defaults(fn=cmd_diff)


def fmt_value(key: str, v) -> str:
    """A summary number as the run table prints it: rates in b/s units, delays in ms, other times in
    s/ms/us, fractions in %."""
    from ..base.units import fmt_pct, fmt_rate, fmt_seconds

    if v is None:
        return "(none)"
    if isinstance(v, float) and math.isnan(v):
        return "-"
    leaf = key.rsplit(".", 1)[-1]
    if leaf.endswith("_bps"):
        return fmt_rate(v)
    if leaf.endswith("_s") and v >= 0:
        return fmt_seconds(leaf, v)
    if leaf.endswith("_s"):
        return "-" + fmt_seconds(leaf, -v)
    if leaf in ("share", "utilisation", "drop_ratio", "loss"):
        return fmt_pct(v)
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15 and not
                              leaf.endswith(("share", "utilisation", "ratio")) and "jain" not in leaf):
        return f"{int(v)}"
    return f"{v:.4g}"


def _change(x, y) -> str:
    if x is None or y is None or any(isinstance(v, float) and math.isnan(v) for v in (x, y)):
        return ""
    if x == 0:
        return "" if y == 0 else "new"
    return f"{100 * (y - x) / abs(x):+.1f}%"


def cmd_diff(a) -> int:
    from ..run.diff import diff

    try:
        d = diff(a.run_a, a.run_b, engine=a.engine)
    except ScenarioError as e:
        raise UserError(str(e))
    print(f"A: {d.a}")
    print(f"B: {d.b}")
    print()
    if d.scenario:
        print("scenario keys that differ:")
        w = max(len(k) for k, _, _ in d.scenario)
        for k, x, y in d.scenario:
            print(f"  {k:<{w}}  {_toml(x)} -> {_toml(y)}")
    elif all(_has_scenario(p) for p in (d.a, d.b)):
        print("scenario: the same (name and description aside)")
    else:
        print("scenario: not compared (a folder has no scenario.toml)")
    print()
    rows = d.summary if a.all else d.changed()
    if not rows:
        print(f"summaries: all {len(d.summary)} numbers are equal")
        return 0
    cells = [(k, fmt_value(k, x), fmt_value(k, y),
              fmt_value(k, y - x) if x is not None and y is not None else "", _change(x, y)) for k, x, y in rows]
    heads = ("summary", "A", "B", "B - A", "change")
    width = [max(len(h), *(len(c[j]) for c in cells)) for j, h in enumerate(heads)]
    line = lambda c: "  ".join(v.ljust(width[j]) if j == 0 else v.rjust(width[j]) for j, v in enumerate(c))
    print(line(heads))
    print("-" * (sum(width) + 2 * (len(width) - 1)))
    for c in cells:
        print(line(c))
    equal = len(d.summary) - len(d.changed())
    if not a.all and equal:
        print(f"\n({equal} other numbers are equal; --all lists them)")
    return 0


def _has_scenario(folder: str) -> bool:
    from pathlib import Path

    return (Path(folder) / "scenario.toml").is_file()


def _toml(v) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)
