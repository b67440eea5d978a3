"""The papers' inventories: every figure and table of a paper, and which experiment reproduces it.

``papers/<tag>.toml`` beside the experiment folders (``experiments/papers/ward.toml``, …) lists
each figure and table of one paper, whether it shows simulation results, the experiments that
reproduce it, and why there is nothing to record where there is not::

    paper = "WARD"                          # the tag experiments give as ``paper``
    title = "WARD: a TCP-friendly stateless AQM scheme"   # optional
    [[item]]
    id = "Fig. 6"                           # as the paper numbers it; values and claims name it in `figure`
    line = 101                              # its caption's line in the paper's text
    title = "Performance under different traffic load"
    kind = "figure"                         # figure | table
    simulation = true                       # false: a flow chart, the topology, a model curve, a parameter table
    experiments = ["ward-3.2-udp-rate-sweep"]
    values = "..."                          # optional: why it has fewer published values than it plots
    why = "..."                             # required when simulation = false or there is no experiment
    [[extra]]                               # an experiment of the paper that reproduces none of its
    experiment = "chokew-x-reno"            #   figures and tables (a reconstruction), and why
    why = "..."

The scorecard (scorecard.py) counts values and claims per paper and per figure or table with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..base.compat import tomllib

PAPERS_DIR = "papers"
ITEM_KEYS = {"id", "line", "title", "kind", "simulation", "experiments", "values", "why"}


@dataclass
class Item:
    id: str
    title: str
    kind: str
    simulation: bool
    experiments: list
    line: int | None = None
    values: str = ""
    why: str = ""


@dataclass
class Inventory:
    paper: str
    path: Path
    title: str = ""
    items: list = field(default_factory=list)
    extra: list = field(default_factory=list)  # (experiment, why): experiments that reproduce no item

    @property
    def ids(self) -> list[str]:
        return [i.id for i in self.items]


def _error(msg: str):
    from ..base.errors import ExperimentError

    return ExperimentError(msg)


def load_inventory(path: Path) -> Inventory:
    """One ``papers/<tag>.toml``, checked (errors name the file and the key)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise _error(f"{path}: invalid TOML: {e}")
    for k in raw:
        if k not in ("paper", "title", "item", "extra"):
            raise _error(f"{path}: {k}: unknown key; known: extra, item, paper, title")
    if not isinstance(raw.get("paper"), str):
        raise _error(f"{path}: paper: missing (the tag experiments give as `paper`)")
    inv = Inventory(raw["paper"], path, str(raw.get("title", "")))
    seen = set()
    for i, it in enumerate(raw.get("item", [])):
        w = f"{path}: item[{i}]"
        if not isinstance(it, dict):
            raise _error(f"{w}: expected a table")
        for k in it:
            if k not in ITEM_KEYS:
                raise _error(f"{w}.{k}: unknown key; known: {', '.join(sorted(ITEM_KEYS))}")
        if not isinstance(it.get("id"), str) or not it["id"]:
            raise _error(f"{w}.id: missing (as the paper numbers it, e.g. \"Fig. 6\")")
        if it["id"] in seen:
            raise _error(f"{w}.id: {it['id']!r} is listed twice")
        seen.add(it["id"])
        kind = it.get("kind")
        if kind not in ("figure", "table"):
            raise _error(f"{w}.kind: figure or table")
        sim = it.get("simulation", True)
        if not isinstance(sim, bool):
            raise _error(f"{w}.simulation: true or false")
        exps = it.get("experiments", [])
        if not isinstance(exps, list) or not all(isinstance(e, str) for e in exps):
            raise _error(f"{w}.experiments: a list of experiment ids")
        line = it.get("line")
        if line is not None and (not isinstance(line, int) or isinstance(line, bool) or line < 1):
            raise _error(f"{w}.line: the caption's line number in the paper's text")
        why = it.get("why", "")
        if (not sim or not exps) and not (isinstance(why, str) and why):
            raise _error(f"{w}.why: say why nothing is recorded ({'not a simulation result' if not sim else 'no experiment'})")
        inv.items.append(Item(it["id"], str(it.get("title", "")), kind, sim, list(exps), line,
                              str(it.get("values", "")), str(why)))
    for i, x in enumerate(raw.get("extra", [])):
        w = f"{path}: extra[{i}]"
        if not isinstance(x, dict) or set(x) != {"experiment", "why"} or not all(
                isinstance(v, str) and v for v in x.values()):
            raise _error(f"{w}: give experiment = \"<id>\" and why = \"...\" (and nothing else)")
        inv.extra.append((x["experiment"], x["why"]))
    return inv


_CACHE: dict = {}


def inventories(root: Path) -> dict[str, Inventory]:
    """Every inventory of an experiments folder, by paper tag (cached by file and modification time)."""
    d = Path(root) / PAPERS_DIR
    if not d.is_dir():
        return {}
    out = {}
    for f in sorted(d.glob("*.toml")):
        key = (str(f.resolve()), f.stat().st_mtime_ns)
        if key not in _CACHE:
            _CACHE[key] = load_inventory(f)
        inv = _CACHE[key]
        if inv.paper in out:
            raise _error(f"{f}: paper: {inv.paper!r} has another inventory, {out[inv.paper].path.name}")
        out[inv.paper] = inv
    return out


def inventory_for(root: Path, paper: str) -> Inventory | None:
    return inventories(root).get(paper)
