"""``aqmlab crosscheck ns2 SCENARIO [--set ...] [--seed S] [--seeds K] [--out DIR]``: a scenario in
aqmlab and in ns-2.35, side by side with ratios (docs/crosscheck.md); ``aqmlab crosscheck ns2
--suite [--quick] [--jobs N] [--out DIR]`` runs the agreement suite (docs/validation.md)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from ..base.errors import Ns2Error, Ns2Missing, ScenarioError, UserError
from ..base.units import fmt_rate, fmt_seconds
from .common import EXIT_FAILED, err, out_dir, source


def add_parser(sub) -> None:
    c = sub.add_parser("crosscheck", help="run a scenario in aqmlab and in ns-2.35 and compare them",
                       description="Run SCENARIO in aqmlab and in ns-2.35 (the papers' simulator; "
                                   "`apt-get install ns2`) and print the two side by side with their ratio. "
                                   "Keys ns-2.35 cannot express are refused in one line (docs/crosscheck.md).")
    c.add_argument("engine", choices=["ns2"], help="the engine to compare with: ns2 (ns-2.35)")
    c.add_argument("scenario", nargs="?", help="scenario file (TOML)")
    c.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override a scenario value (repeatable)")
    c.add_argument("--seed", type=int, help="first seed (default: the scenario's)")
    c.add_argument("--seeds", type=int, default=1, help="seeds S, S+1, ... per engine (default 1); the table "
                                                        "gives means with their spread")
    c.add_argument("--out", help="write each run's folder (aqmlab-seed<N>/, ns2-seed<N>/ with the Tcl script) "
                                 "and crosscheck.csv into DIR")
    c.add_argument("--suite", action="store_true", help="run the agreement suite (docs/validation.md) instead "
                                                         "of one scenario")
    c.add_argument("--quick", action="store_true", help="with --suite: the bounded slice CI runs")
    c.add_argument("--jobs", type=int, default=None, help="with --suite: parallel runs (default: every core)")
    c.add_argument("-q", "--quiet", action="store_true", help="print nothing but the table and errors")
    c.set_defaults(fn=cmd_crosscheck)


def cmd_crosscheck(a) -> int:
    try:
        if a.suite:
            if a.scenario:
                raise UserError("--suite runs the suite's own scenarios: give no SCENARIO")
            from ..ns2.agreement import main as suite

            return suite(out=a.out, quick=a.quick, jobs=a.jobs, quiet=a.quiet)
        if a.quick or a.jobs is not None:
            raise UserError(f"{'--quick' if a.quick else '--jobs'}: only with --suite")
        if not a.scenario:
            raise UserError("crosscheck ns2: give a SCENARIO file (or --suite)")
        return _one(a)
    except Ns2Missing as e:
        return err(str(e))
    except Ns2Error as e:
        return err(f"{a.scenario or 'suite'}: {e}", EXIT_FAILED)


def _one(a) -> int:
    from ..ns2.crosscheck import crosscheck

    if a.seeds < 1:
        raise UserError(f"--seeds: must be at least 1, got {a.seeds}")
    src = source(a.scenario)
    out = out_dir(Path(a.out)) if a.out else None
    from .. import _core
    from ..base.compat import tomllib

    try:
        sim = tomllib.loads(_core.resolve(src.text, src.name, a.set or [], None))["simulation"]
    except ScenarioError as e:
        raise UserError(f"{a.scenario}: {e}")
    first = a.seed if a.seed is not None else int(sim["seed"])
    seeds = [first + i for i in range(a.seeds)]
    total = 2 * len(seeds) * _core.parse_duration(sim["duration"])
    bar = None if a.quiet else _Bar(total)
    try:
        r = crosscheck(src, seeds, a.set or [], progress=bar, out=out)
    except ScenarioError as e:
        raise UserError(f"{a.scenario}: {e}")
    finally:
        if bar is not None:
            bar.close()
    text, rows = table(r)
    for n in r["notes"]:
        print(f"note: {n}", file=sys.stderr)
    print(text)
    if out is not None:
        from ..base.io import atomic_write_bytes

        head = "metric,key,aqmlab_mean,aqmlab_sd,ns2_mean,ns2_sd,ratio_ns2_over_aqmlab,seeds\n"
        body = "".join(",".join(_csv(v) for v in row) + "\n" for row in rows)
        atomic_write_bytes(out / "crosscheck.csv", (head + body).encode())
        print(f"\nresults: {out}/ (crosscheck.csv, aqmlab-seed<N>/, ns2-seed<N>/)")
    return 0


def _csv(v) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    s = str(v)
    return f'"{s}"' if "," in s or '"' in s else s


def _stats(vals: list) -> tuple[float, float]:
    x = [float(v) for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not x:
        return math.nan, math.nan
    m = math.fsum(x) / len(x)
    sd = math.sqrt(math.fsum((v - m) ** 2 for v in x) / (len(x) - 1)) if len(x) > 1 else math.nan
    return m, sd


def _fmt(key: str, v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if key.endswith("_bps"):
        return fmt_rate(v)
    if key.endswith("_s"):
        return fmt_seconds(key, v)
    if key.endswith(("utilisation", "share")):
        return f"{v * 100:.1f}%"
    if key.endswith(("drops_total", "timeouts", "fast_retransmits", "drops.early", "drops.overflow")):
        return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"
    if key.endswith("drop_pct"):
        return f"{v:.1f}%"
    return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"


def table(r: dict) -> tuple[str, list]:
    """The printed table and its rows (label, key, aqmlab mean, sd, ns-2 mean, sd, ratio, seeds)."""
    k = len(r["seeds"])
    rows, lines = [], []
    sa = r["summaries"]["aqmlab"]["scenario"]
    lines.append(f"{sa['name']}: aqmlab and ns-2.35, seed{'s' if k > 1 else ''} "
                 f"{', '.join(map(str, r['seeds']))}  window {sa['warmup_s']:g}-{sa['duration_s']:g} s"
                 + ("  (mean ± sd over seeds)" if k > 1 else ""))
    if r["overrides"]:
        lines.append("overrides: " + "; ".join(r["overrides"]))
    head = f"{'metric':<46} {'aqmlab':>20} {'ns-2.35':>20} {'ns-2/aqmlab':>11}"
    lines += ["", head, "-" * len(head)]
    for key, label in r["metrics"]:
        a = [row.get(key, math.nan) for row in r["aqmlab"]]
        b = [row.get(key, math.nan) for row in r["ns2"]]
        (ma, sa_), (mb, sb) = _stats(a), _stats(b)
        if math.isnan(ma) and math.isnan(mb):
            continue
        ratio = mb / ma if ma and not math.isnan(ma) and not math.isnan(mb) else math.nan
        cell = lambda m, s: _fmt(key, m) + (f" ± {_fmt(key, s)}" if k > 1 and not math.isnan(s) else "")
        lines.append(f"{label[:46]:<46} {cell(ma, sa_):>20} {cell(mb, sb):>20} "
                     f"{(f'{ratio:.3f}' if not math.isnan(ratio) else '-'):>11}")
        rows.append((label, key, ma, sa_, mb, sb, ratio, k))
    return "\n".join(lines), rows


class _Bar:
    """A progress bar over both engines' simulated seconds, shown on a terminal after 2 s."""

    def __init__(self, total: float, delay: float = 2.0):
        import time

        self.total, self.t0, self.delay, self.bar = total, time.monotonic(), delay, None

    def __call__(self, t: float) -> None:
        if self.bar is None:
            import time

            if time.monotonic() - self.t0 < self.delay or not sys.stderr.isatty():
                return
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, unit="sim s", file=sys.stderr, leave=False, desc="aqmlab + ns-2.35",
                            bar_format="{desc}: {l_bar}{bar}| {n:.0f}/{total:.0f} sim s [{elapsed}<{remaining}]")
        self.bar.update(t - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
