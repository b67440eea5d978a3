"""A sweep's runs gathered from the cache: one row of metrics per run, and any result table of
every run (:class:`SweepResult`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from ..run.result import TABLES, Result
from .cache import Cache

if TYPE_CHECKING:
    from .spec import Sweep, Task


class SweepResult:
    """The runs of a sweep, gathered.

    ``runs``: one row per run: the dimension columns, ``seed``, ``run`` (the first 12 hex digits of
    the run's cache key), ``scenario`` (its name) and the metrics of :func:`aqmlab.run.metrics.run_row`.
    ``stats``: ``{"total", "cached", "computed"}``. :meth:`table` gathers a result table of every run;
    :meth:`result` loads one run. ``rows``: metrics rows already at hand (``key -> row``).
    """

    def __init__(self, sweep: Sweep, tasks: Sequence[Task], cache: Cache, stats: dict, tmp=None,
                 rows: Mapping | None = None):
        import pandas as pd

        self.sweep = sweep
        self.tasks = list(tasks)
        self.cache = cache
        self.stats = stats
        self._tmp = tmp  # keeps a temporary cache alive as long as this object
        self._points = sweep.points()
        rows = rows or {}
        cols: dict = {}  # built by column: much faster than a DataFrame of 1000 dicts
        for i, t in enumerate(self.tasks):
            row = self._keys(t)
            r = rows.get(t.key)
            for k, v in (r if r is not None else cache.row(t.key)).items():  # "scenario" (its name), "aqm", metrics
                row.setdefault(k, v)  # (a coordinate keeps its column)
            for k, v in row.items():
                col = cols.get(k)
                if col is None:
                    col = cols[k] = [None] * i
                col.append(v)
            for col in cols.values():
                if len(col) <= i:
                    col.append(None)
        self.runs = pd.DataFrame(cols)

    @property
    def coords(self) -> list[str]:
        return self.sweep.coord_names

    def _keys(self, t: Task) -> dict:
        d = dict(self._points[t.point].coords)
        d["seed"] = t.seed
        d["run"] = t.key[:12]
        return d

    def summary(self, i: int = 0) -> dict:
        """The ``summary.json`` of run ``i`` (row ``i`` of :attr:`runs`)."""
        return self.cache.summary(self.tasks[i].key)

    def result(self, i: int, tables: Iterable[str] | None = None) -> Result:
        """The :class:`Result` of run ``i`` (row ``i`` of :attr:`runs`)."""
        return self.cache.load(self.tasks[i].key, tables)

    def table(self, name: str = "flows", where: Callable[[dict], bool] | None = None):
        """A result table (``flows``, ``timeseries``, ``snapshots``, ``flow_series``, ``latency``) of every run
        (or of the runs whose key dict passes ``where``), with the dimension columns, ``seed`` and
        ``run`` in front (a pandas DataFrame)."""
        import pandas as pd
        import pyarrow as pa

        parts, keys, counts = [], [], []
        for t in self.tasks:
            k = self._keys(t)
            if where is not None and not where(k):
                continue
            tab = self.cache.arrow(t.key, name)
            if tab is None:
                continue
            parts.append(tab)
            keys.append(k)
            counts.append(tab.num_rows)
        if not parts:
            return pd.DataFrame()
        df = pa.concat_tables(parts, promote_options="default").combine_chunks().to_pandas()
        for i, col in enumerate(keys[0]):
            values = []
            for k, n in zip(keys, counts):
                values += [k.get(col)] * n
            df.insert(i, col, values)
        return df

    def save(self, out: str | os.PathLike, tables: Iterable[str] = ("flows",), csv_max_rows: int = 200_000) -> list[Path]:
        """Write ``runs.parquet``/``runs.csv`` and ``<table>.parquet``/``.csv`` for each of ``tables``
        (a table of more than ``csv_max_rows`` rows only as Parquet). Each file is written under a
        temporary name and renamed into place."""
        from ..base.io import atomic_write, atomic_write_bytes

        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        written = []
        for name, df in [("runs", self.runs)] + [(TABLES.get(t, t), self.table(t)) for t in tables]:
            if df.empty and name != "runs":
                continue
            pq, csv = d / f"{name}.parquet", d / f"{name}.csv"
            atomic_write(pq, lambda f, df=df: _to_parquet(df, f))
            written.append(pq)
            if len(df) <= csv_max_rows or name == "runs":
                atomic_write_bytes(csv, df.to_csv(index=False).encode("utf-8"))
                written.append(csv)
            elif csv.exists():
                csv.unlink()
        return written


def _to_parquet(df, path) -> None:
    """Parquet needs one type per column; dimension columns may mix (e.g. ints and strings)."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object:
            kinds = {type(v) for v in out[c] if v is not None}
            if len(kinds) > 1 or (kinds and not kinds <= {str}):
                out[c] = out[c].map(lambda v: v if isinstance(v, str) or v is None else json.dumps(v) if isinstance(v, (list, dict)) else str(v))
    out.to_parquet(path, index=False)
