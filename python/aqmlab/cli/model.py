"""``aqmlab model choke|chokew|raqm|ward``: the analytical models on the command line.

Only argparse is imported at module level (the main parser imports this module); the models, scipy
and matplotlib load when a model command runs. Option values are read as text and converted here, so
that a bad value gives one ``error:`` line (a :class:`ModelError`, turned into a UserError by
:func:`cmd_model`) rather than argparse's usage dump.

Common options: ``--json`` (machine-readable output on stdout), ``--plot FILE`` (.png, .svg or
.pdf), ``--run DIR ...`` (simulation results written by ``aqmlab run`` to overlay).
Lists are comma-separated (``0.1,1,10``) or a geometric grid ``LO:HI:COUNT``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys

from ..base.errors import ModelError, NotConvergedError, ParameterError, UserError
from ..base.units import parse_duration, parse_rate

DEFAULT_X0_REL = (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10)  # experiments.md, choke-model-udp-sweep


# ----------------------------------------------------------------------------- parsing values


def _num(opt: str, text) -> float:
    try:
        v = float(str(text).strip())
    except ValueError:
        raise ParameterError(f"{opt}: '{text}' is not a number")
    if not math.isfinite(v):
        raise ParameterError(f"{opt}: must be finite, got '{text}'")
    return v


def _int(opt: str, text) -> int:
    v = _num(opt, text)
    if not v.is_integer():
        raise ParameterError(f"{opt}: '{text}' is not an integer")
    return int(v)


def _list(opt: str, text) -> list[float]:
    """``a,b,c`` or ``LO:HI:COUNT`` (COUNT values spaced geometrically from LO to HI)."""
    t = str(text).strip()
    if ":" in t:
        parts = t.split(":")
        if len(parts) != 3:
            raise ParameterError(f"{opt}: '{text}': a grid is LO:HI:COUNT, e.g. 0.1:10:25")
        lo, hi, n = _num(opt, parts[0]), _num(opt, parts[1]), _int(opt, parts[2])
        if lo <= 0 or hi <= 0 or n < 1:
            raise ParameterError(f"{opt}: '{text}': a geometric grid needs LO > 0, HI > 0 and COUNT >= 1")
        if n == 1:
            return [lo]
        r = (hi / lo) ** (1.0 / (n - 1))
        return [lo * r ** i for i in range(n)]
    vals = [v for v in t.split(",") if v.strip()]
    if not vals:
        raise ParameterError(f"{opt}: give at least one value")
    return [_num(opt, v) for v in vals]


_PKT_RATE = re.compile(r"^\s*([0-9.eE+-]+)\s*(?:pkt/s|pps)?\s*$")


def _rate(opt: str, text, packet_size: float) -> float:
    """A rate in packets/s: a plain number or ``N pkt/s``, or a bit rate (``1Mb/s``, ``600kb/s``)
    read by the scenario files' parser (:func:`aqmlab.base.units.parse_rate`) and converted with the
    packet size (bytes)."""
    t = str(text)
    m = _PKT_RATE.match(t)
    if m:
        return _num(opt, m.group(1))
    try:
        return parse_rate(t) / (8.0 * packet_size)
    except ValueError as e:
        raise ParameterError(f"{opt}: '{t}' is not a rate in packets/s (125, 125pkt/s) nor a bit rate: {e}")


def _time(opt: str, text) -> float:
    """A duration in seconds (``0.1``, ``100ms``), read by the scenario files' parser."""
    try:
        return parse_duration(str(text))
    except ValueError as e:
        raise ParameterError(f"{opt}: {e}")


def _jsonable(x):
    """NaN/inf -> null, numpy scalars -> Python, recursively."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_jsonable(v) for v in x.tolist()]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _records(df) -> list[dict]:
    return [_jsonable(r) for r in df.to_dict(orient="records")]


def _emit_json(obj) -> None:
    print(json.dumps(_jsonable(obj), indent=2, allow_nan=False))


def _fmt(v, digits=4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, (bool,)):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
        return f"{v:.{digits - 1}e}"
    return f"{v:.{digits}g}"


def _table(df, cols, headers=None) -> str:
    headers = headers or cols
    cells = [[_fmt(v) if not isinstance(v, str) else v for v in row] for row in df[cols].itertuples(index=False)]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- parser


def add_subcommands(parser: argparse.ArgumentParser) -> None:
    """Build ``choke``, ``chokew``, ``raqm`` and ``ward`` under the ``model`` parser."""
    sp = parser.add_subparsers(dest="model", required=True, metavar="{choke,chokew,raqm,ward}",
                               parser_class=type(parser))

    def common(p, runs="+"):
        p.add_argument("--json", action="store_true", help="print JSON instead of tables")
        p.add_argument("--plot", metavar="FILE", help="write a figure (.png, .svg or .pdf)")
        if runs:
            p.add_argument("--run", metavar="DIR", nargs=runs, action="extend" if runs == "+" else "store",
                           help="simulation result directory (from `aqmlab run`) to compare with")

    c = sp.add_parser("choke", help="CHOKe fluid model of Tang, Wang & Low (shares, backlog, rho0(y), v(y))",
                      description="Solve the CHOKe fluid model (docs/models/choke.md) for one or more UDP "
                                  "rates. Defaults: the paper's N = 32, c = 125 pkt/s, d = 0.1 s, RED "
                                  "20/520/0.5. With --run, N, c, d and the RED thresholds are the runs' own (the "
                                  "runs' scenario.toml); an option that disagrees with them is refused.")
    c.add_argument("--N", metavar="FLOWS", help="number of TCP flows (default 32)")
    c.add_argument("--c", metavar="RATE", help="capacity: packets/s or a bit rate such as 1Mb/s (default 125)")
    c.add_argument("--d", metavar="TIME", help="round-trip propagation delay: seconds or 100ms (default 0.1)")
    c.add_argument("--min-th", metavar="PKTS", help="RED lower threshold (default 20)")
    c.add_argument("--max-th", metavar="PKTS", help="RED upper threshold (default 520)")
    c.add_argument("--max-p", metavar="P", help="RED drop probability at max-th (default 0.5)")
    c.add_argument("--beta-mode", metavar="MODE", help="exact (default) or first_order")
    c.add_argument("--packet-size", metavar="BYTES", help="packet size for bit-rate conversions (default 1000)")
    g = c.add_mutually_exclusive_group()
    g.add_argument("--x0", metavar="LIST", help="UDP rates in packets/s (list or LO:HI:COUNT)")
    g.add_argument("--x0-rel", metavar="LIST", help="UDP rates as multiples of c (default 0.1 ... 10)")
    c.add_argument("--perfect", action="store_true", help="add the Perfect-CHOKe oracle ([TWL] §IV)")
    c.add_argument("--profile", action="store_true", help="include rho0(y) and v(y) profiles in the output")
    c.add_argument("--points", metavar="K", help="profile points per UDP rate (default 11)")
    c.add_argument("--plot-kind", metavar="KIND",
                   help="sweep (b, shares vs x0) or profile (rho0(y), v(y)); default: profile for one rate")
    c.add_argument("--allow-partial", action="store_true",
                   help="report rates without a solution as empty rows instead of failing")
    common(c)

    w = sp.add_parser("chokew", help="CHOKeW steady state (per-class shares, drop probabilities, starvation)",
                      description="Solve the CHOKeW steady-state model (docs/models/chokew.md). Classes: "
                                  "--tcp [NAME=]N:WEIGHT:RTT and --udp [NAME=]N:WEIGHT:RATE (repeatable); "
                                  "without --tcp two TCP classes w1=100:1:6ms and w2=100:2:6ms (the UDP "
                                  "classes are added to them). With --run the classes "
                                  "come from the run's flows (grouped by transport and priority), the weights and "
                                  "capacity from its scenario.toml.")
    w.add_argument("--tcp", action="append", metavar="SPEC", help="TCP class [NAME=]N:WEIGHT:RTT, e.g. 100:2:6ms")
    w.add_argument("--udp", action="append", metavar="SPEC", help="unresponsive class [NAME=]N:WEIGHT:RATE, e.g. 1:2:10Mb/s")
    w.add_argument("--capacity", metavar="RATE", help="packets/s or a bit rate (default 125 = 1Mb/s)")
    w.add_argument("--packet-size", metavar="BYTES", help="packet size for bit-rate conversions (default 1000)")
    w.add_argument("--queue", metavar="PKTS", help="mean queue for the waiting time D = queue/capacity (default 150; "
                                                   "with --run, the run's mean queue)")
    w.add_argument("--eta", metavar="MODE", help="maclaurin (default, the paper's (1-r)^p) or exact")
    w.add_argument("--p0", metavar="LIST", help="basic drawing factor(s); several values give a sweep "
                                                "(default: the p0 that saturates the link)")
    w.add_argument("--weights", metavar="MAP", help="with --run: priority=weight pairs, e.g. 1=1,2=2 (default: the "
                                                    "run's CHOKeW weights, from its scenario.toml)")
    common(w, runs="?")

    r = sp.add_parser("raqm", help="RAQM stability bound and the iterated rate loop",
                      description="RAQM stability (docs/models/raqm.md): c(x) and alpha_hat, and the loop "
                                  "iterated from --x-start for static gains (--m, alpha = m/r0) or adaptive "
                                  "gains (--epsilon, alpha = eps * alpha_hat). Default: --m 1,3,4.5.")
    gg = r.add_mutually_exclusive_group()
    gg.add_argument("--m", metavar="LIST", help="static gains alpha = m/r0 (stable iff m < 4)")
    gg.add_argument("--alpha", metavar="LIST", help="static gains alpha in 1/(rate unit of r0)")
    gg.add_argument("--epsilon", metavar="LIST", help="adaptive gains alpha = eps * alpha_hat(r_k)")
    r.add_argument("--r0", metavar="RATE", help="target rate (default 1; only ratios matter)")
    r.add_argument("--x-start", metavar="X", help="first rate r_1 / r0 (default 1.5)")
    r.add_argument("--steps", metavar="K", help="periods to iterate (default 100)")
    r.add_argument("--f-prime", metavar="F", help="measurement filter weight f' in [0, 1) (default 0)")
    r.add_argument("--tol", metavar="TOL", help="convergence tolerance on |x - 1| (default 1e-6)")
    r.add_argument("--x", metavar="LIST", help="rates r_k / r0 in (0, 2) at which to tabulate c(x) and alpha_hat")
    r.add_argument("--require-convergence", action="store_true",
                   help="fail (exit 2) if an iteration does not converge")
    common(r, runs=None)

    a = sp.add_parser("ward", help="WARD UDP share against UDP rate (stated peak 1/(2e), limit 0)",
                      description="The WARD statement (docs/models/ward.md): the stated peak 1/(2e), a "
                                  "reference curve s*exp(-2s) (a reconstruction, not the WARD paper's model) "
                                  "and the large-N CHOKe curve; --run adds simulated UDP shares.")
    a.add_argument("--s", metavar="LIST", help="UDP rates x0/c (default 0.01:100:41)")
    a.add_argument("--c", metavar="RATE", help="capacity for the x0 column: packets/s or bit rate (default 125)")
    a.add_argument("--packet-size", metavar="BYTES", help="packet size for bit-rate conversions (default 1000)")
    common(a)


def run(args) -> int:
    return {"choke": _choke, "chokew": _chokew, "raqm": _raqm, "ward": _ward}[args.model](args)


def add_parser(sub) -> None:
    m = sub.add_parser("model", help="analytical models (CHOKe, CHOKeW, RAQM, WARD), optionally beside runs")
    add_subcommands(m)
    m.set_defaults(fn=cmd_model)


def cmd_model(a) -> int:
    """`aqmlab model ...`: model errors become one-line UserErrors."""
    try:
        return run(a)
    except ModelError as e:
        raise UserError(str(e))


def _as_option(e: ParameterError, rename: dict | None = None) -> ParameterError:
    """Turn a model's ``name: problem`` message into ``--name: problem`` (the option the user typed)."""
    name, sep, rest = str(e).partition(":")
    if not sep or " " in name.strip():
        return e
    name = (rename or {}).get(name.strip(), name.strip())
    return ParameterError(f"--{name.replace('_', '-')}:{rest}")


def _packet_size(args) -> float:
    if args.packet_size is None:
        return 1000.0
    v = _num("--packet-size", args.packet_size)
    if v <= 0:
        raise ParameterError(f"--packet-size: must be > 0 bytes, got {v:g}")
    return v


def _save_plot(fig, path) -> None:
    from ..models.plots import save_figure

    p = save_figure(fig, path)
    print(f"plot: {p}", file=sys.stderr)


# ----------------------------------------------------------------------------- choke


def _agree(opt: str, values, rel: float):
    vals = [v for v in values if v == v]
    if not vals:
        return None
    if max(vals) - min(vals) > rel * max(abs(max(vals)), 1e-12):
        shown = ", ".join(f"{v:g}" for v in sorted(set(vals)))
        raise ParameterError(f"--run: the runs differ in {opt.lstrip('-')} ({shown}); the model takes one value: "
                             f"compare runs of one setting")
    return vals[0]


def _close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def _setting(opt: str, given, runs_values, what: str, rel: float = 1e-9):
    """A model parameter that the runs fix: ``given`` (the option's value, or None) must agree with
    every run's value (``(run path, value)`` pairs; ``what`` shows the run's value ``{v}``),
    else a ParameterError says which; without ``given``, the runs' common value."""
    vals = [(p, v) for p, v in runs_values if v is not None and v == v]
    if given is not None:
        for p, v in vals:
            if not _close(given, v, rel):
                raise ParameterError(f"{opt} {given:g} disagrees with the run {p} ({what.format(v=v)}); omit {opt} to "
                                     f"take the run's value, or compare with a run made at {given:g}")
        return given
    return _agree(opt, [v for _, v in vals], rel)


def _choke_scheme(runs, a) -> dict:
    """RED+CHOKe's thresholds of the runs (from each run's scenario.toml), checked against
    --min-th/--max-th/--max-p. A run of another discipline, or of a CHOKe the model does not
    describe (several candidates, the rear region, byte mode), is refused."""
    opts = {"min_th": "--min-th", "max_th": "--max-th", "max_p": "--max-p"}
    given = {k: (_num(o, getattr(a, k)) if getattr(a, k) is not None else None) for k, o in opts.items()}
    from ..models.runs import bottleneck_setup

    values = {k: [] for k in opts}
    for r in runs:
        bn = bottleneck_setup(r)
        if bn is None:
            missing = [o for k, o in opts.items() if given[k] is None]
            if missing:
                raise ParameterError(f"--run {r.path}: no scenario.toml beside the results, so the run's CHOKe "
                                     f"parameters are unknown; run the scenario again with `aqmlab run`, or give "
                                     f"{', '.join(missing)}")
            continue
        if bn["aqm"] != "choke":
            raise ParameterError(f"--run {r.path}: the run's bottleneck is {bn['aqm']}; the CHOKe fluid model "
                                 f"([TWL] §III) describes RED+CHOKe (aqm type \"choke\")")
        p = bn["params"]
        unlike = []
        if bn["queue_unit"] != "packets" or p.get("mode", "packet") != "packet":
            unlike.append("counts bytes (the model counts packets)")
        if int(p.get("n_cand", 1)) != 1:
            unlike.append(f"draws {p['n_cand']} candidates (the model draws one)")
        if p.get("region", "whole") != "whole":
            unlike.append(f"draws from the {p['region']} region (the model draws from the whole queue)")
        if unlike:
            raise ParameterError(f"--run {r.path}: the run's CHOKe {' and '.join(unlike)}")
        for k in opts:
            values[k].append((r.path, float(p[k])))
    return {k: _setting(o, given[k], values[k], f"its scenario.toml has bottleneck.aqm.{k} = {{v:g}}") for k, o in opts.items()}


def _buffer_note(compare, runs) -> list[str]:
    """Where the model's backlog b exceeds a run's buffer: the fluid model has no buffer limit, so the
    run dropped what the model queues, and the comparison at that rate is not like for like."""
    from ..models.runs import bottleneck_setup

    notes = []
    for (_, row), r in zip(compare.iterrows(), runs):
        bn = bottleneck_setup(r)
        limit = bn["limit"] if bn else r.summary["bottleneck"].get("limit")
        if limit and row["model_b"] == row["model_b"] and row["model_b"] > limit:
            notes.append(f"note: at x0/c = {row['s']:.3g} the model's backlog b = {row['model_b']:.1f} packets exceeds "
                         f"the run's buffer of {limit} packets ({r.path}); the fluid model has no buffer limit, "
                         f"so this point is not comparable")
    return notes


def _same_rates(xs, runs, points, c: float, opt: str) -> None:
    """Each UDP rate of a profile must be a rate the runs were made at (their UDP flows' sending
    rates): else a ParameterError naming the run's rate."""
    have = list(points["x0_pps"])
    for x in xs:
        if not any(_close(x, v, 0.01) for v in have):  # (measured over the window: within 1 %)
            r, v = runs[0].path, have[0]
            given = f"{x / c:g}" if opt == "--x0-rel" else f"{x:g}"
            raise ParameterError(f"{opt} {given} disagrees with the run {r} (its UDP flow sends {v:.4g} pkt/s = "
                                 f"{v / c:.3g} c); omit {opt} to take the run's rate, or compare with a run made at "
                                 f"{x:g} pkt/s")


def _choke(a) -> int:
    import numpy as np
    import pandas as pd

    from ..models.choke import ChokeParams, choke_sweep, solve_choke
    from ..models.runs import read_run, run_point, spatial_distribution

    pkt = _packet_size(a)
    runs, points = [], None
    if a.run:
        runs = [read_run(p) for p in a.run]
        runs.sort(key=lambda r: run_point(r)["x0_pps"])
        points = pd.DataFrame([run_point(r) for r in runs])
        nudp = points["udp_flows"] == 0
        if nudp.any():
            raise ParameterError(f"--run {points.loc[nudp, 'run'].iloc[0]}: no UDP flow in flows.csv to compare with")
    # with runs, N, c, d and the RED thresholds are the runs' own: an option may only confirm them
    N = _int("--N", a.N) if a.N is not None else None
    c = _rate("--c", a.c, pkt) if a.c is not None else None
    d = _time("--d", a.d) if a.d is not None else None
    red = {k: (_num(o, getattr(a, k)) if getattr(a, k) is not None else None)
           for k, o in (("min_th", "--min-th"), ("max_th", "--max-th"), ("max_p", "--max-p"))}
    if runs:
        paths = [r.path for r in runs]
        N = _setting("--N", N, list(zip(paths, points["N"])), "N = {v:g} TCP flows", 0)
        c = _setting("--c", c, list(zip(paths, points["c_pps"])), "c = {v:g} pkt/s", 1e-6)
        d = _setting("--d", d, list(zip(paths, points["d"])), "round-trip propagation delay {v:g} s", 1e-6)
        red = _choke_scheme(runs, a)
    kw = {k: v for k, v in {"N": N, "c": c, "d": d, **red, "beta_mode": a.beta_mode}.items() if v is not None}
    try:
        P = ChokeParams(**kw)
    except ParameterError as e:
        raise _as_option(e)
    if a.x0 is not None:
        xs = _list("--x0", a.x0)
    elif a.x0_rel is not None:
        xs = [v * P.c for v in _list("--x0-rel", a.x0_rel)]
    elif runs:
        xs = list(points["x0_pps"])
    else:
        xs = [v * P.c for v in DEFAULT_X0_REL]
    for x in xs:
        if not x > 0:
            raise ParameterError(f"--x0: UDP rates must be > 0 packets/s, got {x:g}")
    npts = _int("--points", a.points) if a.points is not None else 11
    if npts < 2:
        raise ParameterError("--points: must be >= 2")
    kind = a.plot_kind or ("profile" if len(xs) == 1 else "sweep")
    if kind not in ("sweep", "profile"):
        raise ParameterError(f"--plot-kind: '{kind}' is not one of sweep, profile")
    if runs and kind == "profile" and (a.x0 is not None or a.x0_rel is not None):
        # a profile is compared with the runs' own: a UDP rate no run was made at contradicts them,
        # as an N or a threshold would
        _same_rates(xs, runs, points, P.c, "--x0" if a.x0 is not None else "--x0-rel")

    df = choke_sweep(xs, P, perfect=a.perfect)
    bad = df[~df["converged"]]
    if len(bad) and not a.allow_partial:
        row = bad.iloc[0]
        raise NotConvergedError(f"CHOKe model has no solution at x0 = {row['x0']:.6g} pkt/s "
                                f"({row['x0_over_c']:.3g} c): {row['message']}"
                                + ("" if len(bad) == 1 else f" ({len(bad)} of {len(df)} rates failed; "
                                                           f"--allow-partial reports the others)"))
    sols = {}
    if a.profile or (a.plot and kind == "profile"):
        for _, row in df[df["converged"]].iterrows():
            sols[row["x0"]] = solve_choke(row["x0"], P, guess=(row["b"], row["b0"], row["x1"], row["tau"]))

    compare = None
    if runs:
        m_at = choke_sweep(list(points["x0_pps"]), P)
        compare = points[["run", "x0_pps", "s", "queue_mean", "udp_share", "tcp_share", "delay_mean_s"]].copy()
        compare["model_b"] = m_at["b"].to_numpy()
        compare["model_mu0"] = m_at["mu0"].to_numpy()
        compare["model_tcp_share"] = m_at["tcp_share"].to_numpy()
        compare["model_tau"] = m_at["tau"].to_numpy()
        for note in _buffer_note(compare, runs):
            print(note, file=sys.stderr)

    params = {"N": P.N, "c": P.c, "d": P.d, "min_th": P.min_th, "max_th": P.max_th, "max_p": P.max_p,
              "beta_mode": P.beta_mode}
    if a.json:
        out = {"model": "choke", "params": params, "points": _records(df)}
        if sols:
            for pt in out["points"]:
                s = sols.get(pt["x0"])
                if s is not None:
                    pr = s.profile(npts)
                    pt["profile"] = {k: pr[k].tolist() for k in ("y", "rho0", "v", "t_s")}
        if compare is not None:
            out["simulation"] = _records(compare)
        _emit_json(out)
    else:
        print(f"CHOKe fluid model [TWL]: N = {P.N}, c = {P.c:g} pkt/s, d = {P.d:g} s, RED {P.min_th:g}/"
              f"{P.max_th:g}/{P.max_p:g}, beta {P.beta_mode}")
        cols = ["x0_over_c", "x0", "b", "b0", "x1", "tau", "r", "mu0", "tcp_share"]
        heads = ["x0/c", "x0 pkt/s", "b pkts", "b0 pkts", "x1 pkt/s", "tau s", "RED r", "UDP share", "TCP share"]
        if a.perfect:
            cols.append("mu0_perfect")
            heads.append("UDP perfect")
        print(_table(df.assign(converged=df["converged"]), cols, heads))
        for _, row in bad.iterrows():
            print(f"no solution at x0 = {row['x0']:.6g} pkt/s: {row['message']}")
        for x0, s in sols.items():
            pr = s.profile(npts)
            print(f"\nprofile at x0 = {x0:.6g} pkt/s (y = 0 tail, y = b head)")
            print(_table(pr, ["y", "rho0", "v", "t_s"], ["y pkts", "rho0", "v pkt/s", "t s"]))
        if compare is not None:
            print("\nsimulation vs model (at each run's UDP rate)")
            print(_table(compare.assign(run=compare["run"].map(lambda p: p.rstrip('/').split('/')[-1])),
                         ["run", "s", "queue_mean", "model_b", "udp_share", "model_mu0", "tcp_share", "model_tcp_share"],
                         ["run", "x0/c", "sim b", "model b", "sim UDP", "model UDP", "sim TCP", "model TCP"]))
    if a.plot:
        from ..models.plots import plot_choke_profile, plot_choke_sweep

        if kind == "sweep":
            lo = min(xs + (list(points["x0_pps"]) if runs else []))
            hi = max(xs + (list(points["x0_pps"]) if runs else []))
            if hi / lo < 1.5:
                lo, hi = lo / 2, hi * 2
            dense = choke_sweep(np.geomspace(lo, hi, 60), P, perfect=True)
            sim = compare if compare is not None else None
            fig = plot_choke_sweep(dense, sim, marks=[x / P.c for x in xs] if len(xs) <= 8 else None)
        else:
            sim = {}
            for r_, pt in zip(runs, points.itertuples() if runs else []):
                if r_.snapshots is not None:
                    sim[pt.x0_pps] = spatial_distribution(r_.snapshots, source=str(r_.path / "queue_snapshots.csv"), count=r_.snapshot_count)
            if runs and not sim:
                print("note: no queue_snapshots.csv in the run directories; plotting the model only",
                      file=sys.stderr)
            fig = plot_choke_profile(list(sols.values()), sim)
        _save_plot(fig, a.plot)
    return 0


# ----------------------------------------------------------------------------- chokew

_SPEC = re.compile(r"^\s*(?:([A-Za-z_][\w.-]*)=)?([^:]+):([^:]+):([^:]+)\s*$")


def _class_spec(opt: str, text: str, kind: str, idx: int, pkt: float):
    from ..models.chokew import FlowClass

    m = _SPEC.match(text)
    if not m:
        what = "RTT (e.g. 6ms)" if kind == "tcp" else "RATE (e.g. 10Mb/s or 1250)"
        raise ParameterError(f"{opt}: '{text}' is not [NAME=]N:WEIGHT:{what.split(' ')[0]}; e.g. "
                             f"{'100:2:6ms' if kind == 'tcp' else 'udp=1:2:10Mb/s'}")
    name = m.group(1) or f"{kind}{idx}"
    n = _int(f"{opt} {text}: N", m.group(2))
    wgt = _num(f"{opt} {text}: WEIGHT", m.group(3))
    try:
        if kind == "tcp":
            return FlowClass(name, n, wgt, rtt=_time(f"{opt} {text}: RTT", m.group(4)))
        return FlowClass(name, n, wgt, rate=_rate(f"{opt} {text}: RATE", m.group(4), pkt))
    except ParameterError as e:
        raise ParameterError(f"{opt} {text}: {e}")


def _classes_from_run(run, weights: dict, pkt_default: float):
    import pandas as pd

    from ..models.chokew import FlowClass
    from ..models.runs import run_point

    pt = run_point(run)
    f = run.flows.copy()
    W = float(run.summary["scenario"]["window_s"])
    if "priority" not in f:
        f["priority"] = 1
    f["transport"] = f["transport"].astype(str).str.lower()
    classes, sim = [], []
    for (tr, pr), g in f.groupby(["transport", "priority"], sort=True):
        name = f"{tr}/p{int(pr)}"
        wgt = weights.get(int(pr), float(pr))
        if tr == "udp":
            rate = float(g["sent_pkts"].fillna(0).sum() / W / len(g))
            if rate <= 0:
                continue
            fc = FlowClass(name, len(g), wgt, rate=rate)
        else:
            fc = FlowClass(name, len(g), wgt, rtt=float(g["rtt_prop_s"].mean()))
        classes.append(fc)
        sim.append({"class": name, "throughput_share": float(g["share"].mean())})
    if not classes:
        raise ParameterError(f"--run {run.path}: no flows with traffic in flows.csv")
    p0_sim = None
    ts = run.timeseries
    if ts is not None and "aqm_p0" in ts.columns:
        w0 = float(run.summary["scenario"].get("warmup_s", 0.0))
        p0_sim = float(ts.loc[ts["time_s"] >= w0, "aqm_p0"].mean())
    return classes, pd.DataFrame(sim), pt["c_pps"], p0_sim


def _chokew_weights(run, given: dict) -> dict:
    """Priority weights of the run's CHOKeW (``weights[k-1]`` for level k, 1 beyond the list), from its
    scenario.toml; ``--weights`` may only confirm them. Without scenario.toml, ``--weights`` (the
    default weight of level k is k)."""
    from ..models.runs import bottleneck_setup

    bn = bottleneck_setup(run)
    if bn is None:
        if not given:
            raise ParameterError(f"--run {run.path}: no scenario.toml beside the results, so the run's CHOKeW "
                                 f"weights are unknown; run the scenario again with `aqmlab run`, or give --weights")
        return given
    if bn["aqm"] != "chokew":
        raise ParameterError(f"--run {run.path}: the run's bottleneck is {bn['aqm']}; the CHOKeW model "
                             f"([CHOKeW] §3) describes aqm type \"chokew\"")
    listed = [float(w) for w in bn["params"].get("weights", [1.0])]
    prios = sorted({int(p) for p in run.flows["priority"]}) if "priority" in run.flows else [1]
    weights = {k: (listed[k - 1] if 1 <= k <= len(listed) else 1.0) for k in set(prios) | set(given)}
    for k, w in given.items():
        if not _close(w, weights[k], 1e-9):
            raise ParameterError(f"--weights: {k}={w:g} disagrees with the run {run.path} (weight {weights[k]:g} "
                                 f"for priority {k} in its scenario.toml); omit --weights to take the run's weights")
    return weights


def _chokew(a) -> int:
    from ..models.chokew import ChokewParams, chokew_p0_sweep, solve_chokew
    from ..models.runs import read_run

    pkt = _packet_size(a)
    sim = None
    p0_sim = None
    cap = _rate("--capacity", a.capacity, pkt) if a.capacity is not None else None
    queue = _num("--queue", a.queue) if a.queue is not None else None
    if a.run:
        if a.tcp or a.udp:
            raise ParameterError("--run: give either --run or --tcp/--udp classes, not both")
        weights = {}
        if a.weights:
            for item in a.weights.split(","):
                k, _, v = item.partition("=")
                if not _:
                    raise ParameterError(f"--weights: '{item}' is not PRIORITY=WEIGHT (e.g. 1=1,2=2)")
                weights[_int("--weights: priority", k)] = _num("--weights: weight", v)
        run = read_run(a.run)
        weights = _chokew_weights(run, weights)
        classes, sim, c_run, p0_sim = _classes_from_run(run, weights, pkt)
        cap = _setting("--capacity", cap, [(run.path, c_run)], "capacity {v:g} pkt/s", 1e-6)
        if queue is None:  # the waiting time D = queue / capacity at the run's own mean queue
            queue = float(run.summary["bottleneck"].get("queue_mean_pkts", float("nan")))
            queue = queue if queue == queue and queue > 0 else None
    else:
        if a.weights:
            raise ParameterError("--weights: only meaningful with --run")
        tcp = a.tcp or ["w1=100:1:6ms", "w2=100:2:6ms"]  # chokew-4.1 setup unless --tcp is given
        classes = [_class_spec("--tcp", t, "tcp", i + 1, pkt) for i, t in enumerate(tcp)]
        classes += [_class_spec("--udp", t, "udp", i + 1, pkt) for i, t in enumerate(a.udp or [])]
        names = [c.name for c in classes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ParameterError(f"--tcp/--udp: class name {dup[0]} used twice; name classes with NAME=N:W:...")
    kw = {"capacity": cap, "queue": queue, "eta": a.eta}
    try:
        P = ChokewParams(**{k: v for k, v in kw.items() if v is not None})
    except ParameterError as e:
        raise _as_option(e)
    p0s = _list("--p0", a.p0) if a.p0 is not None else None
    for v in p0s or []:
        if not v > 0:
            raise ParameterError(f"--p0: must be > 0, got {v:g}")

    if p0s is not None and len(p0s) > 1:
        sweep = chokew_p0_sweep(classes, p0s, P)
        if a.json:
            _emit_json({"model": "chokew", "params": {"capacity": P.capacity, "queue": P.queue, "eta": P.eta},
                        "sweep": _records(sweep)})
        else:
            print(f"CHOKeW steady state, p0 sweep: capacity {P.capacity:g} pkt/s, D = {P.D:g} s")
            print(_table(sweep, ["p0", "class", "weight", "p", "r", "q", "throughput_share", "utilisation", "starved"],
                         ["p0", "class", "w", "p", "r", "q", "share/flow", "utilisation", "starved"]))
        if a.plot:
            from ..models.plots import plot_chokew_p0_sweep

            _save_plot(plot_chokew_p0_sweep(sweep), a.plot)
        return 0

    sol = solve_chokew(classes, P, p0=p0s[0] if p0s else None)
    sol.require()
    if a.json:
        out = {"model": "chokew", "params": {"capacity": P.capacity, "queue": P.queue, "eta": P.eta},
               **sol.as_dict()}
        if sim is not None:
            out["simulation"] = {"classes": _records(sim), "p0_mean": p0_sim, "run": a.run}
        _emit_json(out)
    else:
        print(f"CHOKeW steady state: capacity {P.capacity:g} pkt/s, D = {P.D:g} s, eta {P.eta}; "
              f"p0 = {sol.p0:.5g} ({'given' if p0s else 'saturates the link'}), utilisation {sol.utilisation:.4g}")
        df = sol.classes.copy()
        cols = ["class", "kind", "n", "weight", "p", "r", "q", "lambda_pps", "throughput_pps", "throughput_share",
                "class_share", "p_bound"]
        heads = ["class", "kind", "n", "w", "p", "r", "q", "send pkt/s", "thr pkt/s", "share/flow", "class share",
                 "p bound"]
        if sim is not None:
            df["sim_share"] = df["class"].map(dict(zip(sim["class"], sim["throughput_share"])))
            cols.append("sim_share")
            heads.append("sim share/flow")
        print(_table(df, cols, heads))
        if not sol.in_domain:
            print(f"note: {sol.message}")
        if p0_sim is not None:
            print(f"simulation: mean p0 {p0_sim:.4g}")
    if a.plot:
        from ..models.plots import plot_chokew

        _save_plot(plot_chokew(sol, sim), a.plot)
    return 0


# ----------------------------------------------------------------------------- raqm


def _raqm(a) -> int:
    import pandas as pd

    from ..models.raqm import alpha_hat, c_of_x, iterate_raqm

    r0 = _num("--r0", a.r0) if a.r0 is not None else 1.0
    if r0 <= 0:
        raise ParameterError(f"--r0: must be > 0, got {r0:g}")
    x_start = _num("--x-start", a.x_start) if a.x_start is not None else 1.5
    steps = _int("--steps", a.steps) if a.steps is not None else 100
    f_prime = _num("--f-prime", a.f_prime) if a.f_prime is not None else 0.0
    tol = _num("--tol", a.tol) if a.tol is not None else 1e-6
    xs = _list("--x", a.x) if a.x is not None else [0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75]
    for x in xs:
        if not 0 < x < 2:
            raise ParameterError(f"--x: c(x) is defined for 0 < x < 2, got {x:g}")
    if a.epsilon is not None:
        runs = [("epsilon", v) for v in _list("--epsilon", a.epsilon)]
    elif a.alpha is not None:
        runs = [("m", v * r0) for v in _list("--alpha", a.alpha)]
    else:
        runs = [("m", v) for v in (_list("--m", a.m) if a.m is not None else [1.0, 3.0, 4.5])]
    trajs = []
    for kind, v in runs:
        try:
            trajs.append(iterate_raqm(x_start, steps=steps, r0=r0, f_prime=f_prime, tol=tol, **{kind: v}))
        except ParameterError as e:
            raise _as_option(e, {"m": "alpha"} if a.alpha is not None else None)
    table = pd.DataFrame({"x": xs, "c": c_of_x(xs), "alpha_hat": alpha_hat([x * r0 for x in xs], r0)})
    if a.json:
        _emit_json({"model": "raqm", "r0": r0, "x_start": x_start, "bound": _records(table),
                    "iterations": [t.as_dict() for t in trajs]})
    else:
        print(f"RAQM stability: alpha_hat(r_k) = c(x)/r0 with x = r_k/r0, r0 = {r0:g} (c(x) >= 4, c(1) = 4)")
        print(_table(table, ["x", "c", "alpha_hat"], ["x = r_k/r0", "c(x)", "alpha_hat"]))
        print(f"\niteration from x_1 = {x_start:g} (f' = {f_prime:g}, {steps} periods)")
        for t in trajs:
            name = f"m = {t.gain:g} (alpha = {t.gain / r0:g})" if t.mode == "static" else f"epsilon = {t.gain:g}"
            band = t.extra.get("unstable_band")
            extra = f"; alpha >= alpha_hat for {band[0]:.4g} < x < {band[1]:.4g}" if band else ""
            head = ", ".join(f"{v:.4g}" for v in t.steps["x"].head(8))
            print(f"  {name}: {t.outcome}; {t.message}{extra}\n    x_k: {head}, ...")
    if a.plot:
        from ..models.plots import plot_raqm

        static = [t.gain for t in trajs if t.mode == "static"]
        _save_plot(plot_raqm(trajs, gain_line=static[-1] if len(static) == 1 else
                             (max(static) if static else None)), a.plot)
    if a.require_convergence:
        for t in trajs:
            if not t.converged:
                name = f"m = {t.gain:g}" if t.mode == "static" else f"epsilon = {t.gain:g}"
                raise NotConvergedError(f"RAQM iteration with {name} from x_1 = {x_start:g}: {t.message}")
    return 0


# ----------------------------------------------------------------------------- ward


def _ward(a) -> int:
    from ..models.runs import sweep_points
    from ..models.ward import PEAK_S, PEAK_SHARE, share_curve_summary, ward_curve

    pkt = _packet_size(a)
    c = _rate("--c", a.c, pkt) if a.c is not None else None
    sim = sweep_points(a.run) if a.run else None
    if sim is not None:
        c = _setting("--c", c, list(zip(sim["run"], sim["c_pps"])), "c = {v:g} pkt/s", 1e-6)
    if c is None:
        c = 125.0
    if c <= 0:
        raise ParameterError(f"--c: must be > 0, got {c:g}")
    s = _list("--s", a.s) if a.s is not None else _list("--s", "0.01:100:41")
    for v in s:
        if not v > 0:
            raise ParameterError(f"--s: UDP rates x0/c must be > 0, got {v:g}")
    curve = ward_curve(s, c)
    summ = share_curve_summary(sim["s"], sim["udp_share"]) if sim is not None else None
    if a.json:
        out = {"model": "ward", "c": c, "peak_share": PEAK_SHARE, "peak_s_reference": PEAK_S,
               "note": "mu0_reference = s*exp(-2s) is a reconstruction matching the stated peak 1/(2e) and "
                       "limit 0, not the WARD paper's fluid model",
               "curve": _records(curve)}
        if sim is not None:
            out["simulation"] = {"points": _records(sim[["run", "x0_pps", "s", "udp_share", "udp_drop_pct"]]),
                                 "summary": summ}
        _emit_json(out)
    else:
        print(f"WARD: stated peak UDP share 1/(2e) = {PEAK_SHARE:.4f}, limit 0 as the UDP rate grows.")
        print(f"Reference curve s*exp(-2s) (a reconstruction, not the paper's model) peaks at s = {PEAK_S:g} "
              f"(x0 = {PEAK_S * c:g} pkt/s); CHOKe large-N curve for comparison.")
        print(_table(curve, ["s", "x0", "mu0_reference", "mu0_choke_large_n"],
                     ["s = x0/c", "x0 pkt/s", "WARD ref", "CHOKe large-N"]))
        if sim is not None:
            print(f"\nsimulation: peak UDP share {summ['peak_share']:.4f} at s = {summ['peak_at']:.3g}; "
                  f"share {summ['last_share']:.4f} at the largest rate s = {summ['last_at']:.3g}; "
                  f"{'rises then falls' if summ['unimodal'] else 'not single-peaked'}")
    if a.plot:
        from ..models.plots import plot_ward

        import numpy as np

        lo, hi = min(s + (list(sim["s"]) if sim is not None else [])), max(s + (list(sim["s"]) if sim is not None else []))
        dense = ward_curve(np.geomspace(lo, hi if hi > lo else lo * 10, 300), c)
        _save_plot(plot_ward(dense, sim), a.plot)
    return 0
