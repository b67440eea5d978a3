"""The outcome of one run: :class:`Result`, its summary and its tables.

Nothing heavy is imported here: a :class:`Result` keeps the engine's columns and builds a pandas
DataFrame only when ``res.flows`` (or another table) is first asked for, and :meth:`Result.save`
writes CSV with the standard library and Parquet with its own writer (pyarrow for other column
types). So ``aqmlab run`` and sweep workers never load pandas.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from ..base.metrics import jain

if TYPE_CHECKING:
    import pandas as pd

def _frame(columns):
    """A DataFrame over the engine's columns without copying the numeric ones: each becomes a
    numpy view of its ``array.array`` (which the view keeps alive), and the frame is built with
    ``copy=False``, so pandas neither copies them nor consolidates them into one 2-D block. The
    default constructor held three copies of every value at once (the array, pandas' copy and the
    consolidated block, about 25 bytes a value); this holds one (docs/scenarios.md, "Resources")."""
    import array

    import numpy as np
    import pandas as pd

    data = {}
    for name, values in columns:
        if isinstance(values, array.array):
            values = np.frombuffer(values, dtype="f8" if values.typecode == "d" else "i8")
        data[name] = values
    return pd.DataFrame(data, copy=False)


#: result tables: attribute -> file stem
TABLES = {"flows": "flows", "timeseries": "timeseries", "snapshots": "queue_snapshots", "flow_series": "flow_series",
          "latency": "latency"}


class Result:
    """The outcome of one run.

    Attributes:
        summary: the run summary (the content of ``summary.json``): ``summary["links"][name]`` for
            every measured link, ``summary["bottleneck"]`` for a dumbbell.
        flows: one row per flow (``flows.csv``; a pandas DataFrame), with its ``path`` and
            ``hop_drops``; see docs/metrics.md.
        timeseries: one row per sample per measured link (``timeseries.csv``; column ``link``).
        snapshots: with ``simulation.queue_snapshots = true``: one row per waiting packet per
            snapshot (``queue_snapshots.csv``), for the spatial distribution of flows in the queue
            (docs/metrics.md); else ``None``.
        flow_series: with ``simulation.flow_series_interval``: one row per active flow per sample
            (``flow_series.csv``); else ``None``.
        latency: with ``simulation.latency = true`` or a probe group (``app = "probe"``): the
            one-way delay and RTT distributions, one row per histogram bucket per recorded flow and
            metric (``latency.csv``: ``flow_id``, ``group``, ``metric``, ``delay_s``, ``count``,
            ``cdf``; docs/metrics.md, "Latency distributions"); else ``None``.
        wall_seconds: the engine's wall time.

    A table is held as the engine's columns and becomes a DataFrame when first read.
    """

    def __init__(self, summary: dict, flows=None, timeseries=None, wall_seconds: float = float("nan"),
                 snapshots=None, flow_series=None, latency=None):
        self.summary = summary
        self.wall_seconds = wall_seconds
        # per table: a DataFrame, a list of (name, values) columns, or a loader returning columns
        self._data = {"flows": flows, "timeseries": timeseries, "snapshots": snapshots, "flow_series": flow_series,
                      "latency": latency}

    def _get(self, name):
        v = self._data[name]
        if v is None:
            return None
        if callable(v):
            v = v()
        if hasattr(v, "to_pandas"):  # a pyarrow Table (from the cache)
            v = v.to_pandas()
        elif not hasattr(v, "columns"):  # engine columns
            v = _frame(v)
        self._data[name] = v
        return v

    def has(self, name: str) -> bool:
        return self._data[name] is not None

    def columns(self, name: str) -> list | None:
        """A table as ``(column, values)`` pairs without pandas (``None`` if the run has no such
        table): numeric columns as ``array.array`` (``'d'`` or ``'q'``, 8 bytes a value) straight
        from the engine, other columns as lists; both index and iterate alike."""
        v = self._data[name]
        if v is None:
            return None
        if callable(v):
            v = v()
            self._data[name] = v
        if hasattr(v, "to_pydict"):  # a pyarrow Table
            return [(c, col.to_pylist()) for c, col in zip(v.column_names, v.columns)]
        if hasattr(v, "columns"):  # a DataFrame
            return [(c, v[c].tolist()) for c in v.columns]
        return list(v)

    def _set(name):
        def set_(self, value):
            self._data[name] = value

        return set_

    flows = property(lambda self: self._get("flows"), _set("flows"), doc="one row per flow (a DataFrame)")
    timeseries = property(lambda self: self._get("timeseries"), _set("timeseries"),
                          doc="one row per bottleneck sample (a DataFrame)")
    snapshots = property(lambda self: self._get("snapshots"), _set("snapshots"), doc="queue snapshots, or None")
    flow_series = property(lambda self: self._get("flow_series"), _set("flow_series"),
                           doc="per-flow series, or None")
    latency = property(lambda self: self._get("latency"), _set("latency"),
                       doc="delay distributions (one row per histogram bucket), or None")
    del _set

    def __repr__(self):
        sc = self.summary.get("scenario", {})
        return f"<Result {sc.get('name')!r} seed {sc.get('seed')}>"

    def jain(self, column: str = "throughput_bps", group: str | Iterable[str] | None = None, flows=None) -> float:
        """Jain's index of fairness (Σx)²/(n·Σx²) of ``column`` over a chosen set of flows.

        ``group``: a group name or several; ``flows``: flow ids, or a boolean mask over ``self.flows``.
        With neither, all flows but probes (``app = "probe"``: they measure the network, they do not
        share it).
        """
        import pandas as pd

        df = self.flows
        if group is None and flows is None and "app" in df.columns:
            df = df[df["app"] != "probe"]
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
        return jain(x)

    @property
    def scenario(self) -> str | None:
        """The resolved scenario (``scenario.toml``): every default filled in, the overrides
        applied, the seed set; ``None`` for a result not made by :func:`run`."""
        if getattr(self, "_scenario", None) is None and getattr(self, "_resolve", None):
            from .rundir import resolved_text

            self._scenario = resolved_text(*self._resolve)
        return getattr(self, "_scenario", None)

    def links(self) -> "pd.DataFrame":
        """The measured links' summaries as a table: one row per link, in network order."""
        import pandas as pd

        rows = sorted(self.summary.get("links", {}).values(), key=lambda l: l["index"])
        cols = [k for k in (rows[0] if rows else {}) if not isinstance(rows[0][k], dict)]
        return pd.DataFrame([{k: r[k] for k in cols} for r in rows], columns=cols)

    def link_groups(self) -> "pd.DataFrame":
        """What each group sent through each measured link: one row per (link, group) with
        ``arrivals``, ``transmitted``, ``drops``, ``throughput_bps`` and ``share`` of the link's
        capacity (ACKs of all flows as group ``"(acks)"``, without a share)."""
        import pandas as pd

        rows = []
        for name, l in sorted(self.summary.get("links", {}).items(), key=lambda kv: kv[1]["index"]):
            for g, v in l["groups"].items():
                rows.append({"link": name, "group": g, **v})
            rows.append({"link": name, "group": "(acks)", **l["acks"], "share": float("nan")})
        return pd.DataFrame(rows, columns=["link", "group", "arrivals", "transmitted", "drops", "throughput_bps",
                                           "share"])

    def hops(self) -> "pd.DataFrame":
        """Each flow's paths hop by hop: one row per flow per link of its data path (``direction``
        ``"data"``) and of its ACK path (``"ack"``), with ``hop`` (0 = the first link), ``link``
        (a flow's own access links are ``"access"``) and the ``drops`` there in the window."""
        import pandas as pd

        rows = []
        for fid, group, p, d, ap, ad in zip(self.flows["flow_id"], self.flows["group"], self.flows["path"],
                                            self.flows["hop_drops"], self.flows["ack_path"],
                                            self.flows["ack_hop_drops"]):
            for direction, links, drops in (("data", p, d), ("ack", ap, ad)):
                for hop, (link, n) in enumerate(zip(links.split(), drops.split())):
                    rows.append((fid, group, direction, hop, link, int(n)))
        return pd.DataFrame(rows, columns=["flow_id", "group", "direction", "hop", "link", "drops"])

    def save(self, out: str | os.PathLike) -> list[Path]:
        """Write scenario.toml (the resolved scenario), summary.json, flows.csv/.parquet and
        timeseries.csv/.parquet (and the optional tables, and the pcap traces) into ``out``. Each file is written under a
        temporary name and renamed into place, so an interrupted or failed write (a full disk) never
        leaves a truncated file."""
        from ..base.io import atomic_write_bytes, write_table_files

        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        written = []
        if self.scenario is not None:
            written.append(atomic_write_bytes(d / "scenario.toml", self.scenario.encode("utf-8")))
        written += [atomic_write_bytes(d / "summary.json",
                                       (json.dumps(self.summary, indent=2, sort_keys=True) + "\n").encode())]
        for attr, stem in TABLES.items():
            cols = self.columns(attr)
            if cols is not None:
                written += write_table_files(d, stem, cols)
        for f in getattr(self, "pcap", []):  # packet traces, unless written here already
            target = d / f.name
            if f.resolve() != target.resolve():
                import shutil

                shutil.copyfile(f, target)
            written.append(target)
        return written
