"""The Python face of the engine: load a scenario, run it, get DataFrames back."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import pandas as pd

from . import _core

ScenarioLike = "str | os.PathLike | Mapping"


@dataclass
class Source:
    """A scenario's text with where it came from (for error messages and default names)."""

    text: str
    label: str  # file path as given, or "<string>" / "<dict>"
    name: str  # default scenario name (file stem)


def read_source(scenario) -> Source:
    """Accept a path, a TOML string or a dict, and return its TOML text.

    Raises ``FileNotFoundError``/``OSError`` for unreadable files. A :class:`Source` is returned as is.
    """
    if isinstance(scenario, Source):
        return scenario
    if isinstance(scenario, Mapping):
        import tomli_w

        return Source(tomli_w.dumps(dict(scenario)), "<dict>", "scenario")
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and "\n" not in scenario and "=" not in scenario):
        p = Path(scenario)
        return Source(p.read_text(encoding="utf-8"), str(scenario), p.stem)
    if isinstance(scenario, str):
        return Source(scenario, "<string>", "scenario")
    raise TypeError(f"scenario must be a path, a TOML string or a dict, not {type(scenario).__name__}")


def _frame(columns: Sequence[tuple[str, list]]) -> pd.DataFrame:
    return pd.DataFrame({name: values for name, values in columns})


@dataclass
class Result:
    """The outcome of one run.

    Attributes:
        summary: the run summary (the content of ``summary.json``).
        flows: one row per flow (``flows.csv``); see docs/metrics.md.
        timeseries: one row per bottleneck sample (``timeseries.csv``).
    """

    summary: dict
    flows: pd.DataFrame
    timeseries: pd.DataFrame
    wall_seconds: float = field(default=float("nan"), compare=False)
    snapshots: pd.DataFrame | None = None
    """With ``simulation.queue_snapshots = true``: one row per waiting packet per snapshot
    (``queue_snapshots.csv``), for the spatial distribution of flows in the queue (docs/metrics.md)."""
    flow_series: pd.DataFrame | None = None
    """With ``simulation.flow_series_interval``: one row per active flow per sample — throughput at
    the bottleneck and goodput over the interval, and the congestion window (``flow_series.csv``)."""

    def jain(self, column: str = "throughput_bps", group: str | Iterable[str] | None = None, flows=None) -> float:
        """Jain's fairness index (Σx)²/(n·Σx²) of ``column`` over a chosen set of flows.

        ``group``: a group name or several; ``flows``: flow ids, or a boolean mask over ``self.flows``.
        With neither, all flows.
        """
        df = self.flows
        if group is not None:
            groups = [group] if isinstance(group, str) else list(group)
            unknown = set(groups) - set(df["group"])
            if unknown:
                raise ValueError(f"unknown group(s) {sorted(unknown)}; groups are {sorted(set(df['group']))}")
            df = df[df["group"].isin(groups)]
        if flows is not None:
            if isinstance(flows, pd.Series) and flows.dtype == bool:
                df = df[flows.reindex(df.index, fill_value=False)]
            else:
                df = df[df["flow_id"].isin(list(flows))]
        x = df[column].to_numpy(dtype=float)
        if len(x) == 0:
            raise ValueError("Jain's index of an empty set of flows is undefined")
        s2 = float((x * x).sum())
        return 1.0 if s2 == 0 else float(x.sum() ** 2 / (len(x) * s2))

    @property
    def scenario(self) -> str | None:
        """The resolved scenario (``scenario.toml``): every default filled in, the overrides
        applied, the seed set; ``None`` for a result not made by :func:`run`."""
        if getattr(self, "_scenario", None) is None and getattr(self, "_resolve", None):
            from .rundir import resolved_text

            self._scenario = resolved_text(*self._resolve)
        return getattr(self, "_scenario", None)

    def save(self, out: str | os.PathLike) -> list[Path]:
        """Write summary.json, scenario.toml (the resolved scenario), flows.csv/.parquet and
        timeseries.csv/.parquet into ``out``."""
        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        written = []
        if self.scenario is not None:
            p = d / "scenario.toml"
            p.write_text(self.scenario, encoding="utf-8")
            written.append(p)
        p = d / "summary.json"
        p.write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(p)
        tables = [("flows", self.flows), ("timeseries", self.timeseries)]
        if self.snapshots is not None:
            tables.append(("queue_snapshots", self.snapshots))
        if self.flow_series is not None:
            tables.append(("flow_series", self.flow_series))
        for name, df in tables:
            csv = d / f"{name}.csv"
            df.to_csv(csv, index=False)
            pq = d / f"{name}.parquet"
            df.to_parquet(pq, index=False)
            written += [csv, pq]
        return written


def validate(scenario, overrides: Sequence[str] = (), max_memory: int | str | None = None) -> dict:
    """Check a scenario without running it; returns a short description, with the run's resource
    estimate (``memory_estimate_bytes``, ``events_estimate``).

    Raises ``aqmlab.ScenarioError`` with ``'<key path>: <what is wrong>'``, also when the memory
    estimate exceeds ``max_memory`` (bytes or a size such as ``"8GB"``; default
    ``$AQMLAB_MAX_MEMORY``, else half the machine's physical memory).
    """
    src = read_source(scenario)
    return json.loads(_core.validate(src.text, src.name, list(overrides), max_memory))


def run(
    scenario,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    progress: Callable[[float], None] | None = None,
    max_memory: int | str | None = None,
) -> Result:
    """Run a scenario (a path, a TOML string or a dict) and return a :class:`Result`.

    ``seed`` replaces the scenario's ``simulation.seed``; ``overrides`` are ``"key.path=value"``
    strings applied before validation; ``progress(sim_seconds)`` is called periodically.
    A scenario whose memory estimate exceeds ``max_memory`` (bytes or a size such as ``"8GB"``;
    default ``$AQMLAB_MAX_MEMORY``, else half the physical memory) is refused with a
    ``ScenarioError`` before any work (docs/scenarios.md, "Resources").
    """
    import time

    src = read_source(scenario)
    t0 = time.perf_counter()
    raw = _core.run(src.text, src.name, seed, list(overrides), progress, max_memory)
    wall = time.perf_counter() - t0
    summary = json.loads(raw["summary"])
    if overrides:
        from .rundir import describe

        summary["scenario"]["overrides"] = list(overrides)
        summary["scenario"]["description"] = describe(summary["scenario"].get("description", ""), overrides)
    snaps = _frame(raw["snapshots"]) if "snapshots" in raw else None
    fseries = _frame(raw["flow_series"]) if "flow_series" in raw else None
    res = Result(summary, _frame(raw["flows"]), _frame(raw["timeseries"]), wall, snaps, fseries)
    res._resolve = (src.text, src.name, src.label, list(overrides), seed)
    return res


def spatial_distribution(result: Result, grid: int = 200) -> pd.DataFrame:
    """The spatial distribution (docs/metrics.md) of a run made with ``simulation.queue_snapshots = true``: the probability ``rho_udp(y)``
    that the packet at position ``y`` of the queue (``y = 0`` tail, ``y = b_avg`` head, rescaled per
    snapshot) is a UDP packet. Returns columns ``y`` and ``rho_udp`` (see docs/metrics.md).
    """
    from .models.runs import spatial_distribution as m10

    if result.snapshots is None:
        raise ValueError("this run took no queue snapshots (set simulation.queue_snapshots = true)")
    return m10(result.snapshots, n_grid=grid, source="snapshots", count=result.summary["queue_snapshots"]["count"])


def names(kind: str) -> list[tuple[str, str]]:
    """Available names with descriptions; ``kind`` is ``"aqm"``, ``"tcp"`` or ``"traffic"``."""
    return list(_core.names(kind))
