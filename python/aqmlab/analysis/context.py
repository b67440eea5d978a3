"""What figure, table and comparison code gets: an experiment, its gathered runs, an output folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..sweep import SweepResult

if TYPE_CHECKING:
    from ..reproduce.experiment import Experiment


@dataclass
class Output:
    """One produced figure or table: its files, a caption and the automatic comparison sentences."""

    kind: str  # "figure" or "table"
    name: str
    title: str
    files: list = field(default_factory=list)
    markdown: str = ""  # tables: the Markdown table
    notes: list = field(default_factory=list)
    caption: str = ""


@dataclass
class Context:
    exp: Experiment
    res: SweepResult
    out: Path
    quick: bool = False
    _tables: dict = field(default_factory=dict)
    style: str = "paper"  # plotstyle.STYLES
    columns: int | None = None  # figure width: 1 or 2 paper columns (default: by the number of panels)
    labels: dict = field(default_factory=dict)  # shown text of values and column names (aqmlab plot --label)

    @property
    def runs(self) -> pd.DataFrame:
        return self.res.runs

    @property
    def coords(self) -> list[str]:
        return self.res.coords

    def table(self, name: str) -> pd.DataFrame:
        """A result table of every run (cached for this context)."""
        if name not in self._tables:
            self._tables[name] = self.res.table(name)
        return self._tables[name]

    def seeds_per_point(self) -> int:
        """The fewest seeds any run point had (0 without runs)."""
        r = self.runs
        if r.empty or "seed" not in r:
            return 0
        keys = [c for c in self.coords if c in r.columns]
        if not keys:
            return int(r["seed"].nunique())
        return int(r.groupby([r[k].astype(str) for k in keys])["seed"].nunique().min())

    def interval_method(self) -> str:
        from .stats import MIN_T_SEEDS

        n = self.seeds_per_point()
        return "t95" if n >= MIN_T_SEEDS else ("range" if n == 2 else "none")

    def as_run(self) -> str:
        """``"5 seeds per point, 300 s runs"`` from the runs actually made."""
        r = self.runs
        n = self.seeds_per_point()
        text = f"{n} seed{'s' if n != 1 else ''} per point"
        if "run.duration_s" in r and r["run.duration_s"].notna().any():
            d = sorted({float(v) for v in r["run.duration_s"].dropna()})
            text += ", " + "/".join(f"{v:g}" for v in d) + " s runs"
            if "run.warmup_s" in r and (r["run.warmup_s"].fillna(0) > 0).any():
                w = sorted({float(v) for v in r["run.warmup_s"].dropna()})
                text += " (measured after " + "/".join(f"{v:g}" for v in w) + " s)"
        return text

    def default_series(self) -> list[str]:
        return [self.exp.variants_name] if self.exp.variants else []

    def label(self, value) -> str:
        """How a value (a series, a category, a panel) is shown: as ``labels`` renames it, else as
        its text (numbers to 9 significant digits)."""
        text = f"{float(value):.9g}" if isinstance(value, float) else str(value)
        return str(self.labels.get(text, text))

    def coord_label(self, name: str) -> str:
        if name in self.labels:
            return str(self.labels[name])
        a = self.exp.axis(name)
        if a is None:
            return name
        label = a.label if not a.names or a.name == name else name
        return f"{label} ({a.unit})" if a.unit and not a.names else label
