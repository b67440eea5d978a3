"""Reading simulation results for comparison with the models.

A run directory is what ``aqmlab run`` writes (``summary.json``, ``flows.csv``, ``timeseries.csv``;
column definitions in ``docs/metrics.md``). Optionally it holds ``queue_snapshots.csv``, the queue
snapshots of metric M10 (spec experiments.md §3) with one row per waiting packet per snapshot:

=====================  ==========================================================================
column                 meaning
=====================  ==========================================================================
``time_s``             snapshot time (s); all rows of one snapshot share it (``t_s`` is
                       accepted as a synonym)
``position_from_tail`` 0 = the packet that arrived last (tail) ... n-1 = the head (next to send);
                       1-based numbering (1 = tail) is detected and accepted
``flow_id``            the packet's flow (as in flows.csv)
``transport``          ``udp`` or ``tcp``
=====================  ==========================================================================

``aqmlab run`` writes this file when the scenario sets ``simulation.queue_snapshots = true`` (one
snapshot per sample in the measurement window); it writes no rows for an empty queue and records
the number of snapshots in ``summary.json`` (``queue_snapshots.count``), which ``read_run`` passes
on. A hand-made file may instead mark an empty snapshot by a row with only the time set.
:func:`spatial_distribution` (from :mod:`aqmlab.run.snapshots`, where it is computed for
:func:`aqmlab.spatial_distribution` too) turns the snapshots into the profile the models predict.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..base.errors import RunDataError
from ..run.snapshots import SNAPSHOT_COLUMNS, SNAPSHOT_FILE, spatial_distribution

__all__ = ["RunData", "read_run", "run_point", "sweep_points", "spatial_distribution", "bottleneck_setup",
           "SNAPSHOT_FILE"]


@dataclass
class RunData:
    path: Path
    summary: dict
    flows: pd.DataFrame
    timeseries: pd.DataFrame | None
    snapshots: pd.DataFrame | None
    snapshot_count: int | None = None
    scenario: dict | None = None
    """The run's resolved scenario (``scenario.toml``, every default filled in), if present."""


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise RunDataError(f"{path}: not a readable CSV table ({str(e).splitlines()[0]})")
    except OSError as e:
        raise RunDataError(f"{path}: cannot read: {e.strerror or e}")


#: columns of flows.csv the models read as numbers (when present)
NUMERIC_FLOW_COLUMNS = ("throughput_bps", "drops_total", "bneck_arrivals", "priority", "flow_id")


def _numeric(col: pd.Series, path: Path, name: str) -> pd.Series:
    """A flows.csv column as numbers (empty cells are NaN); a RunDataError if it holds text."""
    out = pd.to_numeric(col, errors="coerce")
    bad = out.isna() & col.notna()
    if bad.any():
        raise RunDataError(f"{path}: column {name} holds {str(col[bad].iloc[0])[:20]!r}, not a number")
    return out.astype(float)


def read_run(path) -> RunData:
    """Load a run directory; raise RunDataError naming what is missing."""
    p = Path(path)
    if not p.exists():
        raise RunDataError(f"{p}: no such run directory")
    if not p.is_dir():
        raise RunDataError(f"{p}: not a directory (give a directory written by `aqmlab run`)")
    sp, fp = p / "summary.json", p / "flows.csv"
    for f in (sp, fp):
        if not f.is_file():
            raise RunDataError(f"{p}: not a run directory: {f.name} is missing (write one with `aqmlab run`)")
    try:
        summary = json.loads(sp.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunDataError(f"{sp}: not valid JSON ({e})")
    if not isinstance(summary, dict):
        raise RunDataError(f"{sp}: not a run summary (a JSON object written by `aqmlab run`)")
    flows = _read_csv(fp)
    need = {"transport", "share", "sent_pkts", "sent_bytes", "rtt_prop_s"}
    missing = need - set(flows.columns)
    if missing:
        raise RunDataError(f"{fp}: missing column(s) {', '.join(sorted(missing))}")
    for col in sorted(need - {"transport"}) + [c for c in NUMERIC_FLOW_COLUMNS if c in flows.columns]:
        flows[col] = _numeric(flows[col], fp, col)
    for col in ("transport", "priority", "flow_id", "sent_pkts"):  # every flow has them
        if col in flows.columns and flows[col].isna().any():
            row = int(flows[col].isna().to_numpy().argmax())
            raise RunDataError(f"{fp}: row {row + 1} has no {col} (a damaged table; write it again with `aqmlab run`)")
    for key in ("scenario", "bottleneck"):
        if not isinstance(summary.get(key), dict):
            topo = summary.get("topology")
            other = topo.get("type") if isinstance(topo, dict) else None
            why = (f": the models describe one bottleneck, and this run's network is a {other}"
                   if key == "bottleneck" and isinstance(other, str) and other != "dumbbell" else "")
            raise RunDataError(f"{sp}: no '{key}' section{why}")
    ts = _read_csv(p / "timeseries.csv") if (p / "timeseries.csv").is_file() else None
    snaps = None
    if (p / SNAPSHOT_FILE).is_file():
        snaps = _read_csv(p / SNAPSHOT_FILE)
        if "t_s" in snaps.columns and "time_s" not in snaps.columns:
            snaps = snaps.rename(columns={"t_s": "time_s"})
        missing = set(SNAPSHOT_COLUMNS) - set(snaps.columns)
        if missing:
            raise RunDataError(f"{p / SNAPSHOT_FILE}: missing column(s) {', '.join(sorted(missing))}; "
                               f"expected {', '.join(SNAPSHOT_COLUMNS)}")
    qs = summary.get("queue_snapshots")
    count = qs.get("count") if isinstance(qs, dict) else None
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise RunDataError(f"{sp}: queue_snapshots.count must be a whole number >= 0, got {count!r}")
    scenario = None
    if (p / "scenario.toml").is_file():
        from ..base.compat import tomllib

        try:
            scenario = tomllib.loads((p / "scenario.toml").read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise RunDataError(f"{p / 'scenario.toml'}: not a valid scenario ({e})")
    return RunData(p, summary, flows, ts, snaps, count, scenario)


def bottleneck_setup(run: RunData) -> dict | None:
    """The bottleneck as the run simulated it, from its ``scenario.toml``: ``aqm`` (the type),
    ``params`` (every parameter of the discipline), ``limit``, ``queue_unit``, ``rate_bps``.
    ``None`` for a run folder without ``scenario.toml`` (written by hand, or by an older aqmlab)."""
    sc = run.scenario
    if sc is None:
        return None
    b = sc.get("bottleneck")
    if not isinstance(b, dict) or not isinstance(b.get("aqm"), dict):
        raise RunDataError(f"{run.path / 'scenario.toml'}: no [bottleneck] with its aqm (the models describe "
                           f"one bottleneck)")
    from ..base.units import parse_rate

    params = dict(b["aqm"])
    kind = params.pop("type", "droptail")
    rate = b.get("rate")
    return {"aqm": kind, "params": params, "limit": b.get("limit"), "queue_unit": b.get("queue_unit", "packets"),
            "rate_bps": parse_rate(str(rate)) if rate is not None else math.nan}


def run_point(run: RunData) -> dict:
    """The quantities the models predict, measured in one run.

    ``c_pps`` (capacity in packets/s, with the mean data packet size), ``x0_pps`` (UDP sending rate,
    summed over UDP flows), ``s = x0/c``, ``udp_share`` (M3, summed over UDP flows), ``tcp_share``,
    ``N`` (TCP flows), ``d`` (median round-trip propagation delay of the TCP flows), ``queue_mean``
    (M7), ``delay_mean_s`` (M8), ``udp_drop_pct`` (M9).
    """
    s, f = run.summary, run.flows
    try:
        W = float(s["scenario"]["window_s"])
        cap = float(s["bottleneck"]["capacity_bps"])
    except (KeyError, TypeError, ValueError):
        raise RunDataError(f"{run.path}/summary.json: scenario.window_s or bottleneck.capacity_bps missing")
    transport = f["transport"].astype(str).str.lower()
    sent = f["sent_pkts"].fillna(0).sum()
    pkt = float(f["sent_bytes"].fillna(0).sum() / sent) if sent > 0 else 1000.0
    c_pps = cap / (8.0 * pkt)
    udp, tcp = f[transport == "udp"], f[transport == "tcp"]
    x0 = float(udp["sent_pkts"].fillna(0).sum() / W) if len(udp) else math.nan
    drops = udp["drops_total"].sum() if "drops_total" in udp else math.nan
    arr = udp["bneck_arrivals"].sum() if "bneck_arrivals" in udp else math.nan
    b = s["bottleneck"]
    return {
        "run": str(run.path),
        "aqm": b.get("aqm"),
        "c_pps": c_pps,
        "packet_size": pkt,
        "x0_pps": x0,
        "s": x0 / c_pps if len(udp) else math.nan,
        "udp_flows": int(len(udp)),
        "udp_share": float(udp["share"].sum()) if len(udp) else math.nan,
        "tcp_share": float(tcp["share"].sum()) if len(tcp) else math.nan,
        "N": int(len(tcp)),
        "d": float(tcp["rtt_prop_s"].median()) if len(tcp) else math.nan,
        "queue_mean": b.get("queue_mean_pkts", math.nan),
        "delay_mean_s": b.get("delay_mean_s", math.nan),
        "udp_drop_pct": float(100.0 * drops / arr) if arr and arr > 0 else math.nan,
    }


def sweep_points(paths, need_udp: bool = True) -> pd.DataFrame:
    """:func:`run_point` for every run directory, sorted by UDP rate."""
    rows = []
    for p in paths:
        run = read_run(p)
        row = run_point(run)
        if need_udp and row["udp_flows"] == 0:
            raise RunDataError(f"{run.path}: flows.csv has no UDP flow (transport == 'udp') to compare with")
        rows.append(row)
    if not rows:
        raise RunDataError("no run directories given")
    return pd.DataFrame(rows).sort_values("x0_pps", kind="stable").reset_index(drop=True)
