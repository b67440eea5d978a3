"""Experiment definitions: ``experiments/<id>/experiment.toml`` read into :class:`Experiment`.

The file format is documented in docs/reproduce.md. In short::

    id = "choked-model1"            # = the directory name
    paper = "CHOKeD"                # tag of the source paper (spec README)
    source = "Figs. 4.2-4.7, Table II"
    title = "..."
    description = "one line for `aqmlab list experiments`"
    scenario = "scenario.toml"      # base scenario (default)

    [runs]
    seeds = 5
    set = []                        # overrides for every run
    variants_name = "scheme"        # column of the variants (default "scheme")
    [[runs.variants]]               # the schemes compared: label + overrides (+ scenario)
    label = "RED"
    set = ['bottleneck.aqm={type="red", min_th=40, max_th=80}']
    [[runs.axes]]                   # varied parameters (cartesian product, after the variants)
    name = "N"                      # column name, usable in ${...} templates
    label = "number of flows"       # axis label in figures
    unit = ""
    values = [25, 50, 75, 100]      # or points = [{value=..., set=[...], scenario=...}, ...]
    set = ["flows[0].count=${N * 22 // 25}"]

    [quick]                         # --quick: fewer seeds, shorter runs, fewer points
    seeds = 2
    set = ['simulation.duration="50s"']
    axes = { N = [25, 100] }
    variants = ["RED", "CHOKeD"]

    [[figures]] ...                 # see figures.py
    [[tables]] ...                  # see tables.py

A zipped axis sets several columns at once: ``names = ["N", "q0"]`` with ``values = [[40, 50], ...]``.
``reference.toml`` beside the file holds the published values, tables and claims (references.py).
"""

from __future__ import annotations

import os
import re
from ..base.compat import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ExperimentError
from ..sweep import Choice, Dimension, Sweep, SweepError

EXPERIMENT_FILE = "experiment.toml"
REFERENCE_FILE = "reference.toml"


def experiments_dir(explicit: str | os.PathLike | None = None) -> Path:
    """Where the experiment definitions are: ``explicit``, else ``$AQMLAB_EXPERIMENTS``, else
    ``./experiments`` if it exists, else the ones installed with the package (``aqmlab/experiments``,
    which the source checkout's top-level ``experiments`` links to)."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("AQMLAB_EXPERIMENTS")
    if env:
        return Path(env)
    here = Path.cwd() / "experiments"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[1] / "experiments"


@dataclass
class Axis:
    name: str
    label: str
    unit: str
    dim: Dimension
    values: list  # the values in order (tuples for a zipped axis)
    names: tuple | None = None


@dataclass
class Experiment:
    id: str
    path: Path  # the experiment's directory
    paper: str
    source: str
    title: str
    description: str
    scenario: str
    seeds: int
    set: list
    variants_name: str
    variants: list  # of Choice
    axes: list  # of Axis
    quick: dict
    figures: list  # raw tables
    tables: list
    references: list = field(default_factory=list)  # published values, a [[table]]'s cells included
    claims: list = field(default_factory=list)
    ref_tables: list = field(default_factory=list)  # the published tables of reference.toml (references.py)
    raw: dict = field(default_factory=dict)
    full_set: list = field(default_factory=list)
    #: where the experiment runs several readings of the paper: [{coord, main, others: {value: what it is}}]
    readings: list = field(default_factory=list)

    @property
    def file(self) -> Path:
        return self.path / EXPERIMENT_FILE

    @property
    def coord_names(self) -> list[str]:
        out = [self.variants_name] if self.variants else []
        for a in self.axes:
            out += list(a.names) if a.names else [a.name]
        return out

    def axis(self, name: str) -> Axis | None:
        for a in self.axes:
            if a.name == name or (a.names and name in a.names):
                return a
        return None

    def variant_labels(self, quick: bool = False) -> list[str]:
        labels = [str(c.value) for c in self.variants]
        if quick and "variants" in self.quick:
            labels = [v for v in labels if v in self.quick["variants"]]
        return labels

    def seeds_for(self, quick: bool) -> int:
        return int(self.quick.get("seeds", self.seeds)) if quick else self.seeds

    def sweep(self, quick: bool = False, extra_set=(), seed: int | None = None) -> Sweep:
        """The runs of this experiment (``quick``: its ``[quick]`` settings) as a :class:`Sweep`.
        ``extra_set`` overrides are applied last (``aqmlab reproduce --set``)."""
        dims = []
        if self.variants:
            chosen = self.variants
            if quick and "variants" in self.quick:
                chosen = [c for c in self.variants if str(c.value) in self.quick["variants"]]
            dims.append(Dimension(self.variants_name, tuple(chosen)))
        for a in self.axes:
            d = a.dim
            if quick and a.name in self.quick.get("axes", {}):
                keep = [_norm(v) for v in self.quick["axes"][a.name]]
                d = Dimension(d.name, tuple(c for c in d.choices if _norm(c.value) in keep), d.names)
            dims.append(d)
        post = list(self.full_set) if not quick else list(self.quick.get("set", []))
        post += list(extra_set)
        try:
            src_path = self.path / self.scenario
            return Sweep(src_path, dims, self.seeds_for(quick), seed=seed, overrides=self.set,
                         base_dir=self.path, post=post)
        except (OSError, SweepError) as e:
            raise ExperimentError(f"{self.file}: {e}")


def _norm(v):
    if isinstance(v, list):
        return tuple(_norm(x) for x in v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _need(d: dict, key: str, kind, where: str):
    if key not in d:
        raise ExperimentError(f"{where}.{key}: missing" if where else f"{key}: missing")
    v = d[key]
    if not isinstance(v, kind):
        raise ExperimentError(f"{where + '.' if where else ''}{key}: expected {getattr(kind, '__name__', kind)}, got {v!r}")
    return v


def _str_list(v, where: str) -> list[str]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ExperimentError(f"{where}: expected a list of override strings")
    return list(v)


_KNOWN_TOP = {"id", "paper", "source", "title", "description", "scenario", "runs", "quick", "figures", "tables",
              "full", "ns2", "notes", "readings"}
_KNOWN_NS2 = {"release", "tcp_preset", "red", "why"}
_KNOWN_RUNS = {"seeds", "set", "variants", "variants_name", "axes"}
_KNOWN_AXIS = {"name", "names", "label", "unit", "values", "points", "set"}
_KNOWN_QUICK = {"seeds", "set", "axes", "variants", "note"}


def _check_keys(d: dict, known: set, where: str):
    for k in d:
        if k not in known:
            raise ExperimentError(f"{where}{k}: unknown key; known: {', '.join(sorted(known))}")


def _axis(i: int, a: dict) -> Axis:
    where = f"runs.axes[{i}]"
    if not isinstance(a, dict):
        raise ExperimentError(f"{where}: expected a table")
    _check_keys(a, _KNOWN_AXIS, where + ".")
    names = a.get("names")
    if names is not None:
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ExperimentError(f"{where}.names: expected a list of column names")
        name = a.get("name", "+".join(names))
        names = tuple(names)
    else:
        name = _need(a, "name", str, where)
    axis_set = _str_list(a.get("set"), f"{where}.set")
    raw_points = a.get("points", a.get("values"))
    if raw_points is None or not isinstance(raw_points, list) or not raw_points:
        raise ExperimentError(f"{where}: give values = [...] or points = [...]")
    choices, values = [], []
    for j, p in enumerate(raw_points):
        if isinstance(p, dict):
            _check_keys(p, {"value", "set", "scenario"}, f"{where}.points[{j}].")
            if "value" not in p:
                raise ExperimentError(f"{where}.points[{j}].value: missing")
            v = p["value"]
            extra = _str_list(p.get("set"), f"{where}.points[{j}].set")
            scen = p.get("scenario")
        else:
            v, extra, scen = p, [], None
        if names is not None:
            v = tuple(v) if isinstance(v, list) else v
        choices.append(Choice(v, tuple(axis_set + extra), scen))
        values.append(v)
    try:
        dim = Dimension(name, tuple(choices), names)
    except SweepError as e:
        raise ExperimentError(f"{where}: {e}")
    return Axis(name, str(a.get("label", name)), str(a.get("unit", "")), dim, values, names)


def load_experiment(path: str | os.PathLike) -> Experiment:
    """Read ``<dir>/experiment.toml`` (``path`` is the directory or the file) and its reference.toml."""
    p = Path(path)
    d = p.parent if p.is_file() else p
    f = d / EXPERIMENT_FILE
    try:
        raw = tomllib.loads(f.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExperimentError(f"{f}: no such file")
    except tomllib.TOMLDecodeError as e:
        raise ExperimentError(f"{f}: invalid TOML: {e}")
    try:
        exp = _parse(raw, d)
    except ExperimentError as e:
        raise ExperimentError(f"{f}: {e}")
    rf = d / REFERENCE_FILE
    if rf.is_file():
        from .references import parse_references

        try:
            exp.references, exp.claims, exp.ref_tables = parse_references(
                tomllib.loads(rf.read_text(encoding="utf-8")))
            _check_points(exp)
            _check_figures(exp)
            _assign_roles(exp)
        except (tomllib.TOMLDecodeError, ExperimentError) as e:
            raise ExperimentError(f"{rf}: {e}")
    return exp


def _check_points(exp: Experiment) -> None:
    """A published value belongs to one point of the paper's figure or table: its ``where`` names
    every coordinate that varies (or, for a maximum or minimum, all but those of ``at``); claims
    name only coordinates."""
    varying = ([exp.variants_name] if len(exp.variants) > 1 else []) + [
        n for a in exp.axes if len(a.values) > 1 for n in (a.names or (a.name,))]
    coords = set(exp.coord_names)
    for r in exp.references:
        where = set((r.get("where") or {}).keys()) | set((r.get("at") or {}).keys())
        for k in where - coords:
            raise ExperimentError(f"{r['loc']}.where.{k}: not a coordinate ({', '.join(exp.coord_names)})")
        free = [c for c in varying if c not in where]
        if free:
            raise ExperimentError(f"{r['loc']}.where: name the paper's point: {', '.join(free)} varies "
                                  f"(a value counts only at the paper's point)")
    for c in exp.claims:
        for k in list((c.get("where") or {}).keys()) + [c[k] for k in ("of", "along") if k in c]:
            if k not in coords:
                raise ExperimentError(f"{c['loc']}: {k!r} is not a coordinate ({', '.join(exp.coord_names)})")


def _mentions(entry: dict, coord: str) -> list[str]:
    """The values of coordinate ``coord`` an entry selects or names (where, at, and is / order
    when it compares along ``coord``)."""
    out: list = []
    for k in ("where", "at"):
        v = (entry.get(k) or {}).get(coord)
        if v is not None:
            out += v if isinstance(v, list) else [v]
    if entry.get("of") == coord:
        if "is" in entry:
            out.append(entry["is"])
        out += list(entry.get("order", []))
    return [str(x) for x in out]


def _assign_roles(exp: Experiment) -> None:
    """Each value's and claim's ``role`` (references.ROLES) and why: as its entry declares it
    (context, no_information), else "other reading" when it names a reading of the paper the
    experiment does not declare its main one (``readings``), else "scored". A claim that names no
    reading while the experiment runs several compares them all: that is an error."""
    from .references import role_of

    for r in exp.references + exp.claims:
        role, why = role_of(r)
        if role == "scored":
            for rd in exp.readings:
                named = _mentions(r, rd["coord"])
                other = [x for x in named if x in rd["others"]]
                if other:
                    role = "other reading"
                    why = (f"{rd['coord']} = {other[0]}: {rd['others'][other[0]]}; the experiment's main reading is "
                           f"{rd['coord']} = {rd['main']}")
                    break
                if not named:
                    raise ExperimentError(f"{r['loc']}.where: name the reading ({rd['coord']} = {rd['main']!r}, the "
                                          f"main one, or another): the experiment runs several readings of the "
                                          f"paper (readings)")
        r["role"], r["role_why"] = role, why


def _check_figures(exp: Experiment) -> None:
    """Each value's and claim's ``figure`` is a figure or table of the paper's inventory
    (``papers/<paper>.toml`` beside the experiments), when the paper has one."""
    from .references import figures_of
    from .papers import inventory_for

    inv = inventory_for(exp.path.parent, exp.paper)
    if inv is None:
        return
    for r in exp.references + exp.claims:
        for f in figures_of(r):
            if f not in inv.ids:
                raise ExperimentError(f"{r['loc']}.figure: {f!r} is not a figure or table of [{exp.paper}] "
                                      f"({inv.path.name} lists {', '.join(inv.ids)})")


def _parse(raw: dict, d: Path) -> Experiment:
    _check_keys(raw, _KNOWN_TOP, "")
    eid = _need(raw, "id", str, "")
    if eid != d.name:
        raise ExperimentError(f"id: {eid!r} differs from the directory name {d.name!r}")
    runs = raw.get("runs", {})
    if not isinstance(runs, dict):
        raise ExperimentError("runs: expected a table")
    _check_keys(runs, _KNOWN_RUNS, "runs.")
    seeds = runs.get("seeds", 1)
    if not isinstance(seeds, int) or seeds < 1:
        raise ExperimentError(f"runs.seeds: must be a positive integer, got {seeds!r}")
    variants = []
    for i, v in enumerate(runs.get("variants", [])):
        _check_keys(v, {"label", "set", "scenario"}, f"runs.variants[{i}].")
        label = _need(v, "label", str, f"runs.variants[{i}]")
        variants.append(Choice(label, tuple(_str_list(v.get("set"), f"runs.variants[{i}].set")), v.get("scenario")))
    labels = [c.value for c in variants]
    if len(set(labels)) != len(labels):
        raise ExperimentError("runs.variants: labels must be unique")
    axes = [_axis(i, a) for i, a in enumerate(runs.get("axes", []))]
    quick = raw.get("quick", {})
    _check_keys(quick, _KNOWN_QUICK, "quick.")
    for name, vals in quick.get("axes", {}).items():
        ax = next((a for a in axes if a.name == name), None)
        if ax is None:
            raise ExperimentError(f"quick.axes.{name}: no such axis")
        known = [_norm(v) for v in ax.values]
        for v in vals:
            if _norm(v) not in known:
                raise ExperimentError(f"quick.axes.{name}: {v!r} is not one of the axis values")
    for v in quick.get("variants", []):
        if v not in labels:
            raise ExperimentError(f"quick.variants: {v!r} is not a variant label")
    full = raw.get("full", {})
    _check_keys(full, {"set", "note"}, "full.")
    ns2 = raw.get("ns2")
    if ns2 is not None:
        if not isinstance(ns2, dict):
            raise ExperimentError("ns2: expected a table (release, tcp_preset, red, why)")
        _check_keys(ns2, _KNOWN_NS2, "ns2.")
        for k in _KNOWN_NS2:
            if not isinstance(ns2.get(k), str):
                raise ExperimentError(f"ns2.{k}: missing (a string)")
    readings = raw.get("readings", [])
    if not isinstance(readings, list) or not all(isinstance(x, dict) for x in readings):
        raise ExperimentError("readings: a list of { coord, main, others = { value = \"what it is\" } } tables")
    notes = raw.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise ExperimentError("notes: expected a list of strings")
    exp = Experiment(
        id=eid, path=d, paper=str(raw.get("paper", "")), source=str(raw.get("source", "")),
        title=str(raw.get("title", eid)), description=_need(raw, "description", str, ""),
        scenario=str(raw.get("scenario", "scenario.toml")), seeds=seeds,
        set=_str_list(runs.get("set"), "runs.set"), variants_name=str(runs.get("variants_name", "scheme")),
        variants=variants, axes=axes, quick=quick, figures=list(raw.get("figures", [])),
        tables=list(raw.get("tables", [])), raw=raw, full_set=_str_list(full.get("set"), "full.set"),
    )
    exp.readings = [_reading(i, x, exp) for i, x in enumerate(readings)]
    if not (d / exp.scenario).is_file():
        raise ExperimentError(f"scenario: {exp.scenario}: no such file in {d}")
    from ..analysis.figures import check_figure
    from ..analysis.tables import check_table

    for i, fig in enumerate(exp.figures):
        check_figure(fig, exp, f"figures[{i}]")
        _check_output_name(fig, f"figures[{i}]")
    for i, t in enumerate(exp.tables):
        check_table(t, exp, f"tables[{i}]")
        _check_output_name(t, f"tables[{i}]")
    return exp


def _reading(i: int, x: dict, exp: Experiment) -> dict:
    """One ``[[readings]]`` entry: a coordinate whose values are readings of the paper, the one the
    experiment scores (``main``) and the others, each with what it is (shown beside, not counted)."""
    w = f"readings[{i}]"
    _check_keys(x, {"coord", "main", "others"}, w + ".")
    coord = _need(x, "coord", str, w)
    if coord not in exp.coord_names:
        raise ExperimentError(f"{w}.coord: {coord!r} is not a coordinate ({', '.join(exp.coord_names)})")
    known = ([str(c.value) for c in exp.variants] if coord == exp.variants_name else
             [str(v) for a in exp.axes if a.name == coord for v in a.values])
    main = str(_need(x, "main", str, w))
    others = x.get("others")
    if not isinstance(others, dict) or not others or not all(isinstance(v, str) and v for v in others.values()):
        raise ExperimentError(f"{w}.others: {{ value = \"what this reading is\" }}, one or more")
    for v in [main, *others]:
        if v not in known:
            raise ExperimentError(f"{w}: {v!r} is not a value of {coord} ({', '.join(known)})")
    if main in others:
        raise ExperimentError(f"{w}.others: {main!r} is the main reading")
    return {"coord": coord, "main": main, "others": {str(k): v for k, v in others.items()}}


_OUTPUT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")


def _check_output_name(spec: dict, where: str) -> None:
    """A figure's or table's name is the stem of files written in the experiment's output folder: a
    plain file name, never a path (``../../x`` would write outside ``--out``)."""
    name = spec.get("name") if isinstance(spec, dict) else None
    if isinstance(name, str) and (not _OUTPUT_NAME.fullmatch(name) or ".." in name):
        raise ExperimentError(f"{where}.name: {name!r} must be a plain file name (letters, digits, '_', '-', '.', "
                              "'+'; no '/' or '..'): it names files inside the output folder")


def find_experiments(root: str | os.PathLike | None = None) -> list[Path]:
    """Directories holding an experiment.toml, sorted by name."""
    r = experiments_dir(root)
    if not r.is_dir():
        return []
    return sorted(p for p in r.iterdir() if (p / EXPERIMENT_FILE).is_file())


def list_experiments(root=None) -> list[Experiment]:
    return [load_experiment(p) for p in find_experiments(root)]
