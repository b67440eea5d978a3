"""Sweeps: one scenario run over a grid of changes and several seeds, in parallel, with a cache.

A sweep is a base scenario, a list of *dimensions* and a number of seeds. Each dimension is a list
of *choices*; a choice has a value (what the results table shows in the dimension's column), a list
of ``--set`` overrides and optionally another base scenario. The sweep runs the cartesian product of
the dimensions, each point with seeds ``base, base + 1, …, base + K − 1`` (``base`` is the
scenario's ``simulation.seed``, 1 by default, or the ``seed`` given).

``aqmlab sweep s.toml --vary flows[0].count=10,20 --vary bottleneck.aqm.max_p=0.1,0.2 --seeds 3``
makes two dimensions with the choices ``flows[0].count=10`` … and runs 2 × 2 × 3 = 12 runs. A
value is read as a TOML value, as ``--set`` reads it; commas inside brackets, braces or quotes do
not split (``--vary 'bottleneck.aqm={type="red",min_th=5,max_th=15},{type="choke",min_th=5,max_th=15}'``).
A sweep has at most :data:`MAX_RUNS` runs.

Override templates (used by experiment files): ``${expr}`` in an override is replaced by the value
of ``expr``, an arithmetic expression over the values of the point's dimensions
(``flows[0].count=${N // 2}``); see :func:`expand`.

**Cache.** Every run is identified by a SHA-256 key over a canonical form of what determines its
result: the parsed base scenario (so comments and layout do not count, but every value does), its
default name, the overrides in order, the seed, the aqmlab version, the cache format and a
fingerprint of the engine binary (so a rebuilt engine never reuses old results). A finished run is
stored under ``<cache>/v2/<key[:2]>/<key>/`` (see :mod:`aqmlab.cache`): written atomically,
checked on read, so an interrupted sweep leaves no partial entry and a damaged one is made again.
Running the sweep again runs only what is missing. The cache directory is ``$AQMLAB_CACHE`` or
``~/.cache/aqmlab``; ``cache=False`` (``--no-cache``) uses a temporary directory that is removed
afterwards.

**Where runs are made** (:mod:`aqmlab.executors`): a local pool of processes (the default; every
core), or a Dask cluster (``executor="dask"`` with ``scheduler="tcp://host:8786"`` or
``client=distributed.Client(...)``; ``aqmlab sweep --executor dask --scheduler ...``). Both hand
out batches of runs and store the same cache entries, so a sweep begun on one finishes on the other.

Python::

    import aqmlab
    df = aqmlab.sweep("s.toml", vary={"flows[0].count": [10, 20]}, seeds=3)   # one row per run
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import math
import numbers
import operator
import os
from ._compat import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from . import __version__, _core
from .api import MAX_DEPTH, SEED_MAX, TABLES, Result, Source, read_source
from .cache import CACHE_FORMAT, LAYOUT, Cache, default_cache_dir, open_cache
from .errors import RunFailed, SweepError
from .executors import check_jobs, describe_task, execute

__all__ = ["Choice", "Dimension", "Sweep", "SweepResult", "SweepError", "RunFailed", "Cache", "sweep", "parse_vary",
           "execute", "default_cache_dir", "open_cache", "run_key", "MAX_RUNS"]

#: the most runs one sweep may have (split larger studies into several sweeps)
MAX_RUNS = 1_000_000

_describe_task = describe_task  # (old name)


def cache_layout() -> str:
    """The folder of the current cache format inside a cache directory (``v2``)."""
    return LAYOUT

# ----------------------------------------------------------------------------- values


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` outside brackets, braces and quotes."""
    parts, depth, quote, cur = [], 0, None, []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch in "[{(":
            depth += 1
            cur.append(ch)
        elif ch in "]})":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def nesting_depth(text: str) -> int:
    """The deepest nesting of brackets and braces in ``text`` (quotes not looked into)."""
    depth = deepest = 0
    quote = None
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_value(text: str):
    """A value as ``--set`` reads it: a TOML value, else the text itself as a string."""
    if nesting_depth(text) > MAX_DEPTH:
        raise SweepError(f"{_short(text)}: nested more than {MAX_DEPTH} levels deep")
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text.strip()
    except RecursionError:
        raise SweepError(f"{_short(text)}: nested too deeply") from None


def _short(text: str, n: int = 40) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= n else text[:n] + "…"


def toml_value(x) -> str:
    """Python value -> TOML value text (inline tables for dicts)."""
    if isinstance(x, bool) or (type(x).__module__ == "numpy" and type(x).__name__ in ("bool_", "bool")):
        return "true" if x else "false"
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if isinstance(x, numbers.Real):
        x = float(x)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return repr(x)
    if isinstance(x, str):
        return json.dumps(x, ensure_ascii=False)
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in x) + "]"
    if isinstance(x, Mapping):
        items = []
        for k, v in x.items():
            if not isinstance(k, str):
                raise SweepError(f"{k!r}: a table's keys must be strings")
            key = k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)
            items.append(f"{key} = {toml_value(v)}")
        return "{ " + ", ".join(items) + " }"
    raise SweepError(f"cannot write {x!r} ({type(x).__name__}) as a scenario value")


# ----------------------------------------------------------------------------- templates

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCS = {"int": int, "float": float, "round": round, "min": min, "max": max, "str": str, "abs": abs,
          "ceil": math.ceil, "floor": math.floor}


def _eval(node, env: Mapping):
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise SweepError(f"unknown name {node.id!r}; known: {', '.join(sorted(env)) or 'none'}")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        return _FUNCS[node.func.id](*[_eval(a, env) for a in node.args])
    raise SweepError(f"not allowed in a template: {ast.unparse(node)!r} (numbers, dimension names, + - * / // % **, "
                     f"{', '.join(_FUNCS)})")


def expand(template: str, env: Mapping) -> str:
    """Replace every ``${expr}`` in ``template`` by the value of ``expr`` over ``env``.

    ``expr`` may use numbers, strings, the names in ``env``, ``+ - * / // % **`` and ``int``,
    ``float``, ``round``, ``min``, ``max``, ``str``, ``abs``, ``ceil``, ``floor``. A value is written as it would be in
    TOML for a number, and as plain text for a string (so ``"${rate}kb/s"`` works).
    """
    out, i = [], 0
    while True:
        j = template.find("${", i)
        if j < 0:
            out.append(template[i:])
            return "".join(out)
        k = template.find("}", j)
        if k < 0:
            raise SweepError(f"{template!r}: '${{' without a closing '}}'")
        out.append(template[i:j])
        expr = template[j + 2:k]
        try:
            v = _eval(ast.parse(expr.strip(), mode="eval"), env)
        except SyntaxError:
            raise SweepError(f"{template!r}: cannot read the expression {expr!r}")
        except SweepError as e:
            raise SweepError(f"{template!r}: {e}")
        except (ArithmeticError, TypeError, ValueError) as e:
            raise SweepError(f"{template!r}: {expr.strip()}: {e}")
        out.append(v if isinstance(v, str) else toml_value(v))
        i = k + 1


# ----------------------------------------------------------------------------- dimensions


@dataclass(frozen=True)
class Choice:
    """One value of a dimension: the value shown in the table, its overrides (templates) and an
    optional base scenario replacing the sweep's (a path, relative to the sweep's ``base_dir``)."""

    value: object
    set: tuple = ()
    scenario: str | None = None


@dataclass(frozen=True)
class Dimension:
    """A list of choices. With ``names`` (several column names) every choice's value is a tuple
    with one value per name: the dimension sets several coordinates at once (a zipped axis)."""

    name: str
    choices: tuple
    names: tuple | None = None

    def __post_init__(self):
        if not self.choices:
            raise SweepError(f"{self.name}: give at least one value")
        if self.names is not None:
            for c in self.choices:
                if not isinstance(c.value, (tuple, list)) or len(c.value) != len(self.names):
                    raise SweepError(f"{self.name}: each value must give {len(self.names)} values "
                                     f"({', '.join(self.names)}), got {c.value!r}")

    @property
    def columns(self) -> list[str]:
        return list(self.names) if self.names is not None else [self.name]

    def coords(self, choice: Choice) -> dict:
        if self.names is not None:
            return dict(zip(self.names, choice.value))
        return {self.name: choice.value}


def vary_dimension(key: str, values: Iterable) -> Dimension:
    """A dimension that sets ``key`` to each of ``values`` (Python values)."""
    if not isinstance(key, str) or not key.strip() or any(c.isspace() for c in key):
        raise SweepError(f"vary: {key!r}: expected a key path such as \"flows[0].count\"")
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        values = [values]
    vals = list(values)
    try:
        for v in vals:
            toml_value(v)
    except RecursionError:
        raise SweepError(f"vary {key}: a value nested too deeply") from None
    return Dimension(key, tuple(Choice(toml_value(v) if isinstance(v, (list, tuple, Mapping)) else v,
                                       (f"{key}={toml_value(v)}",)) for v in vals))


def parse_vary(text: str) -> Dimension:
    """``key=v1,v2,...`` -> a dimension named ``key`` (values read as TOML values, like ``--set``)."""
    if not isinstance(text, str) or "=" not in text:
        raise SweepError(f"--vary {_short(str(text))}: expected key.path=value1,value2,...")
    key, _, rest = text.partition("=")
    key = key.strip()
    if not key or any(c.isspace() for c in key):
        raise SweepError(f"--vary {_short(text)}: expected key.path=value1,value2,... with a key path before '='")
    if nesting_depth(rest) > MAX_DEPTH:
        raise SweepError(f"--vary {key}: a value nested more than {MAX_DEPTH} levels deep")
    vals = split_top_level(rest)
    if any(v == "" for v in vals):
        raise SweepError(f"--vary {text}: empty value (values are separated by commas)")
    return Dimension(key, tuple(Choice(_column_value(v), (f"{key}={v}",)) for v in vals))


def _column_value(text: str):
    """The table value of a --vary value: a number, boolean or string as TOML reads it; a list or
    table stays the text written."""
    v = parse_value(text)
    return text.strip() if isinstance(v, (list, dict)) else v


# ----------------------------------------------------------------------------- run keys


_BUILD_ID: str | None = None


def engine_build_id() -> str:
    """A fingerprint of the engine binary (``aqmlab._core``): any rebuild gives a new cache key space."""
    global _BUILD_ID
    if _BUILD_ID is None:
        h = hashlib.sha256()
        path = getattr(_core, "__file__", None)
        if path and os.path.isfile(path):
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        else:  # pragma: no cover - a built-in module
            h.update(repr(_core).encode())
        _BUILD_ID = h.hexdigest()[:16]
    return _BUILD_ID


def canonical_scenario(text: str):
    """The parsed scenario (for hashing): layout and comments do not matter, values do."""
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return {"__text__": text}


def key_hasher(text: str, name: str, overrides: Sequence[str], canonical=None):
    """The SHA-256 state of a run's key before its seed (shared by the seeds of a point)."""
    material = {
        "format": CACHE_FORMAT,
        "aqmlab": __version__,
        "engine": engine_build_id(),
        "scenario": canonical_scenario(text) if canonical is None else canonical,
        "name": name,
        "overrides": list(overrides),
    }
    blob = json.dumps(material, sort_keys=True, default=str, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode())


def _seeded(h, seed: int) -> str:
    h = h.copy()
    h.update(b"|seed=%d" % int(seed))
    return h.hexdigest()


def run_key(text: str, name: str, overrides: Sequence[str], seed: int) -> str:
    """The content address of one run (see the module notes)."""
    return _seeded(key_hasher(text, name, overrides), seed)

# ----------------------------------------------------------------------------- runs


@dataclass
class Point:
    """One point of the grid: its coordinates, base scenario and overrides (templates expanded)."""

    coords: dict
    source: Source
    overrides: list

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.coords.items()) or "the base scenario"


@dataclass(frozen=True)
class Task:
    """One run: a point and a seed, with its cache key."""

    point: int
    seed: int
    key: str
    text: str
    name: str
    overrides: tuple
    label: str


class Sweep:
    """A base scenario × dimensions × seeds (see the module notes).

    ``scenario``: a path, TOML string, dict or :class:`~aqmlab.api.Source`; ``dims``: dimensions
    (:class:`Dimension`, a ``"key=v1,v2"`` string, or a ``{key: [values]}`` mapping);
    ``seeds``: seeds per point; ``seed``: first seed (default: the scenario's); ``overrides``:
    ``--set`` strings applied to every run before the dimensions' own; ``post``: ``--set`` strings
    applied after them (they win); ``base_dir``: where the choices' ``scenario`` paths are looked up.
    Both lists may use ``${...}`` templates. Bad input raises :class:`SweepError`.
    """

    def __init__(self, scenario, dims=(), seeds: int = 1, *, seed: int | None = None,
                 overrides: Sequence[str] = (), base_dir: str | os.PathLike | None = None,
                 post: Sequence[str] = ()):
        try:
            self.source = scenario if isinstance(scenario, Source) else read_source(scenario)
            self.overrides = _override_list(overrides, "overrides")
            self.post = _override_list(post, "post")
        except _core.ScenarioError as e:
            raise SweepError(str(e)) from None
        self.dims: list[Dimension] = []
        if dims is None:
            dims = ()
        if not isinstance(dims, (str, Mapping, Dimension, Iterable)):
            raise SweepError(f"vary: expected {{key: [values]}} or \"key=v1,v2\" strings, got {type(dims).__name__}")
        for d in ([dims] if isinstance(dims, (str, Mapping, Dimension)) else list(dims)):
            if isinstance(d, Dimension):
                self.dims.append(d)
            elif isinstance(d, str):
                self.dims.append(parse_vary(d))
            elif isinstance(d, Mapping):
                self.dims += [vary_dimension(k, v) for k, v in d.items()]
            else:
                raise SweepError(f"not a dimension: {d!r}")
        names = [n for d in self.dims for n in d.columns]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SweepError(f"{dup[0]}: varied twice; give all its values in one --vary")
        if isinstance(seeds, bool) or not isinstance(seeds, numbers.Integral) or seeds < 1:
            raise SweepError(f"--seeds: must be a positive integer, got {seeds!r}")
        seeds = int(seeds)
        n_points = math.prod(len(d.choices) for d in self.dims)
        if n_points * seeds > MAX_RUNS:
            raise SweepError(f"--seeds {seeds}: {n_points * seeds} runs ({n_points} point(s) × {seeds} seeds) is more "
                             f"than the {MAX_RUNS} one sweep may have; split it into several sweeps")
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed <= SEED_MAX:
                raise SweepError(f"--seed: must be an integer from 0 to 2^64-1, got {seed!r}")
            if seed + seeds - 1 > SEED_MAX:
                raise SweepError(f"--seed {seed}: with --seeds {seeds} the last seed would pass 2^64-1")
            seed = int(seed)
        self.seeds = seeds
        self.seed = seed
        self.base_dir = Path(base_dir) if base_dir is not None else None
        self._sources: dict[str, Source] = {}

    @property
    def coord_names(self) -> list[str]:
        return [n for d in self.dims for n in d.columns]

    def _source_of(self, path: str | None) -> Source:
        if path is None:
            return self.source
        if path not in self._sources:
            p = (self.base_dir / path) if self.base_dir is not None else Path(path)
            try:
                self._sources[path] = read_source(p)
            except _core.ScenarioError:
                raise SweepError(f"{p}: no such scenario file")
        return self._sources[path]

    def points(self) -> list[Point]:
        pts = []
        for combo in itertools.product(*[d.choices for d in self.dims]):
            coords = {}
            for d, c in zip(self.dims, combo):
                coords.update(d.coords(c))
            env = {k: v for k, v in coords.items() if isinstance(k, str) and k.isidentifier()}
            scen = None
            try:
                ov = [expand(s, env) for s in self.overrides]
            except SweepError as e:
                raise SweepError(f"--set {e}")
            for d, c in zip(self.dims, combo):
                if c.scenario is not None:
                    scen = c.scenario
                try:
                    ov += [expand(s, env) for s in c.set]
                except SweepError as e:
                    raise SweepError(f"{d.name}={c.value}: {e}")
            try:
                ov += [expand(s, env) for s in self.post]
            except SweepError as e:
                raise SweepError(f"--set {e}")
            pts.append(Point(coords, self._source_of(scen), ov))
        return pts

    def tasks(self, validate: bool = True) -> list[Task]:
        """Every run, in table order. With ``validate`` each point is checked first; a scenario
        error raises :class:`SweepError` ``'<file>: <key path>: <message> (at <point>)'``."""
        out = []
        canon: dict = {}
        for i, p in enumerate(self.points()):
            base = self.seed
            if validate or base is None:
                try:
                    info = json.loads(_core.validate(p.source.text, p.source.name, p.overrides))
                except _core.ScenarioError as e:
                    where = "" if not p.coords else f" (at {p.describe()})"
                    raise SweepError(f"{p.source.label}: {e}{where}")
                except RecursionError:
                    raise SweepError(f"{p.source.label}: a value nested too deeply (at {p.describe()})") from None
                if base is None:
                    base = int(info.get("seed", 1))
                    if base + self.seeds - 1 > SEED_MAX:
                        raise SweepError(f"--seeds {self.seeds}: from the scenario's seed {base} the last seed "
                                         "would pass 2^64-1")
            if id(p.source) not in canon:
                canon[id(p.source)] = canonical_scenario(p.source.text)
            h = key_hasher(p.source.text, p.source.name, p.overrides, canon[id(p.source)])
            ov = tuple(p.overrides)
            for k in range(self.seeds):
                s = base + k
                out.append(Task(i, s, _seeded(h, s), p.source.text, p.source.name, ov, p.source.label))
        return out

    def run(self, jobs: int | None = None, cache=True, progress: bool = False,
            on_done: Callable[[Task], None] | None = None, *, executor=None, scheduler: str | None = None,
            client=None) -> "SweepResult":
        """Make the runs not in the cache (see :func:`aqmlab.executors.execute` for ``executor``,
        ``scheduler`` and ``client``) and gather them."""
        check_jobs(jobs)
        tasks = self.tasks()
        c, tmp = open_cache(cache)
        rows: dict = {}
        stats = execute(tasks, c, jobs=jobs, progress=progress, on_done=on_done, executor=executor,
                        scheduler=scheduler, client=client, rows=rows)
        return SweepResult(self, tasks, c, stats, tmp, rows=rows)


def _override_list(overrides, what: str) -> list[str]:
    from .api import check_overrides

    return check_overrides(overrides, what)


# ----------------------------------------------------------------------------- gathering


class SweepResult:
    """The runs of a sweep, gathered.

    ``runs``: one row per run: the dimension columns, ``seed``, ``run`` (the first 12 hex digits of
    the run's cache key), ``scenario`` (its name) and the metrics of :func:`aqmlab.runmetrics.run_row`.
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
            row.update(r if r is not None else cache.row(t.key))  # "scenario" (its name), then the metrics
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

    def result(self, i: int, tables: Iterable[str] | None = None) -> Result:
        """The :class:`Result` of run ``i`` (row ``i`` of :attr:`runs`)."""
        return self.cache.load(self.tasks[i].key, tables)

    def table(self, name: str = "flows", where: Callable[[dict], bool] | None = None):
        """A result table (``flows``, ``timeseries``, ``snapshots``, ``flow_series``) of every run
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
        from ._io import atomic_write, atomic_write_bytes

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


def sweep(scenario, vary=None, seeds: int = 1, *, seed: int | None = None, overrides: Sequence[str] = (),
          jobs: int | None = None, cache=True, progress: bool = False, executor: str | None = None,
          scheduler: str | None = None, client=None):
    """Run ``scenario`` over ``vary`` × ``seeds`` and return one row per run (a pandas DataFrame).

    ``vary``: ``{key.path: [values]}`` (Python values, written as TOML) and/or ``"key=v1,v2"``
    strings, several combined as a cartesian product. ``seeds``: runs per point, with seeds
    ``seed, seed + 1, …`` (``seed`` defaults to the scenario's ``simulation.seed``). ``overrides``:
    ``"key.path=value"`` strings for every run (one string is one override). ``jobs``: local
    processes (default: all cores; a positive integer). ``cache``: ``True`` (``$AQMLAB_CACHE`` or
    ``~/.cache/aqmlab``), a directory, or ``False`` (no reuse). ``client``: a
    ``distributed.Client`` to make the runs on a Dask cluster (or ``executor="dask"`` with
    ``scheduler="tcp://host:port"``). Columns: one per varied key, ``seed``, ``run``, ``scenario``,
    then the metrics listed in :mod:`aqmlab.runmetrics`. For the flows of every run use
    ``Sweep(...).run().table("flows")``.

    Raises :class:`SweepError` for a bad sweep (and a scenario that does not validate),
    :class:`RunFailed` if runs failed (after the others are stored).
    """
    dims = []
    if vary is not None:
        if isinstance(vary, (str, Mapping)):
            vary = [vary]
        elif not isinstance(vary, Iterable):
            raise SweepError(f"vary: expected {{key: [values]}} or \"key=v1,v2\" strings, got {type(vary).__name__}")
        dims = list(vary)
    check_jobs(jobs)
    return Sweep(scenario, dims, seeds, seed=seed, overrides=overrides).run(
        jobs, cache, progress, executor=executor, scheduler=scheduler, client=client).runs
