"""What figure, table and comparison code gets: an experiment, its gathered runs, an output folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..sweep import SweepResult
from .experiment import Experiment


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

    def default_series(self) -> list[str]:
        return [self.exp.variants_name] if self.exp.variants else []

    def coord_label(self, name: str) -> str:
        a = self.exp.axis(name)
        if a is None:
            return name
        label = a.label if not a.names or a.name == name else name
        return f"{label} ({a.unit})" if a.unit and not a.names else label
