"""Two runs side by side: what differs in their scenarios, and every number of their summaries
with the difference (``aqmlab diff RUN_A RUN_B``).

A run is a folder written by ``aqmlab run`` (``summary.json`` and the resolved ``scenario.toml``)
or a :class:`~aqmlab.run.result.Result`. :func:`diff` returns both comparisons as rows; the
summary's numbers are named by their path in ``summary.json`` (``bottleneck.utilisation``,
``groups.udp.share``, ``fairness.jain_throughput_tcp``), the groups by their names.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ScenarioError
from .rundir import SCENARIO_FILE

#: parts of the summary that describe the engine's work, not the network (left out unless asked)
ENGINE_KEYS = ("engine.",)


@dataclass
class RunDiff:
    """``scenario``: ``(key path, value in A, value in B)`` for each scenario key that differs
    (``None``: absent); ``summary``: ``(key path, A, B)`` for every number of either summary."""

    a: str
    b: str
    scenario: list = field(default_factory=list)
    summary: list = field(default_factory=list)

    def changed(self, rel: float = 0.0) -> list:
        """The summary rows whose values differ (by more than ``rel`` of the larger, when given)."""
        out = []
        for k, x, y in self.summary:
            if x is None or y is None:
                out.append((k, x, y))
            elif x != y and not (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)):
                if abs(x - y) > rel * max(abs(x), abs(y)):
                    out.append((k, x, y))
        return out


def _read_run(path) -> tuple[dict, str | None, str]:
    p = Path(path)
    if not p.exists():
        raise ScenarioError(f"{p}: no such folder")
    if p.is_file() and p.name in ("summary.json", SCENARIO_FILE):
        p = p.parent
    try:
        summary = json.loads((p / "summary.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"{p}: not a run folder (no summary.json; give a folder written by aqmlab run)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ScenarioError(f"{p / 'summary.json'}: not readable ({type(e).__name__}: {e})") from None
    if not isinstance(summary, dict):
        raise ScenarioError(f"{p / 'summary.json'}: not a run summary")
    sc = p / SCENARIO_FILE
    try:
        text = sc.read_text(encoding="utf-8") if sc.is_file() else None
    except (OSError, UnicodeDecodeError):
        text = None
    return summary, text, str(p)


def flatten(d, prefix: str = "") -> dict:
    """The numbers of a summary (or any nested dict) by key path; a list of named tables (the
    summary's ``groups``) by their names. Text and lists of text are left out."""
    out: dict = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
        for i, v in enumerate(d):
            name = v.get("name", i) if isinstance(v, dict) else i
            out.update(flatten({kk: vv for kk, vv in v.items() if kk != "name"}, f"{prefix}.{name}"))
    elif isinstance(d, bool):
        out[prefix] = float(d)
    elif isinstance(d, numbers.Real):
        out[prefix] = d
    elif d is None:
        out[prefix] = math.nan
    return out


def _scenario_rows(a: str | None, b: str | None) -> list:
    from ..base.compat import tomllib
    from .rundir import flat_keys

    if a is None or b is None:
        return []
    try:
        x, y = flat_keys(tomllib.loads(a)), flat_keys(tomllib.loads(b))
    except tomllib.TOMLDecodeError:
        return []
    return [(k, x.get(k), y.get(k)) for k in dict.fromkeys([*x, *y])
            if x.get(k) != y.get(k) and k not in ("name", "description")]


def _one_bottleneck(summary: dict) -> dict:
    """A dumbbell's summary holds its bottleneck twice (``bottleneck`` and ``links.bottleneck``):
    keep one."""
    links = summary.get("links")
    if isinstance(summary.get("bottleneck"), dict) and isinstance(links, dict) and "bottleneck" in links:
        summary = dict(summary, links={k: v for k, v in links.items() if k != "bottleneck"})
    return summary


def diff(run_a, run_b, engine: bool = False) -> RunDiff:
    """Compare two runs (folders written by ``aqmlab run``, or :class:`Result` objects). Raises
    :class:`aqmlab.ScenarioError` for a path that is not a run folder. ``engine``: include the
    engine's counters (events, packets created)."""
    sides = []
    for r in (run_a, run_b):
        if hasattr(r, "summary") and isinstance(r.summary, dict):
            text = getattr(r, "_scenario", None)
            sides.append((r.summary, text, repr(r)))
        else:
            sides.append(_read_run(r))
    (sa, ta, na), (sb, tb, nb) = sides
    fa, fb = flatten(_one_bottleneck(sa)), flatten(_one_bottleneck(sb))
    rows = [(k, fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb])
            if engine or not k.startswith(ENGINE_KEYS)]
    return RunDiff(na, nb, _scenario_rows(ta, tb), rows)
