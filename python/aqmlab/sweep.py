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

Override templates (used by experiment files): ``${expr}`` in an override is replaced by the value
of ``expr``, an arithmetic expression over the values of the point's dimensions
(``flows[0].count=${N // 2}``); see :func:`expand`.

**Cache.** Every run is identified by a SHA-256 key over a canonical form of what determines its
result: the parsed base scenario (so comments and layout do not count, but every value does), its
default name, the overrides in order, the seed, the aqmlab version and a fingerprint of the engine
binary (so a rebuilt engine never reuses old results). A finished run is stored under
``<cache>/v1/<key[:2]>/<key>/`` as ``summary.json``, one Parquet file per result table and
``meta.json``; it is written into a temporary directory first and renamed into place, so an
interrupted sweep leaves no partial entry. Running the sweep again runs only what is missing.
The cache directory is ``$AQMLAB_CACHE`` or ``~/.cache/aqmlab``; ``cache=False`` (``--no-cache``)
uses a temporary directory that is removed afterwards.

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
import shutil
import sys
import tempfile
import time
from ._compat import tomllib
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import __version__, _core
from .api import Result, Source, read_source

__all__ = ["Choice", "Dimension", "Sweep", "SweepResult", "SweepError", "Cache", "sweep", "parse_vary",
           "execute", "default_cache_dir"]

#: bump when the layout of a cache entry changes
CACHE_FORMAT = 1
#: result tables a cache entry may hold (Result attribute -> file stem)
TABLES = {"flows": "flows", "timeseries": "timeseries", "snapshots": "queue_snapshots", "flow_series": "flow_series"}


class SweepError(ValueError):
    """A mistake in a sweep's definition (bad --vary, bad template, a scenario that does not validate)."""


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


def parse_value(text: str):
    """A value as ``--set`` reads it: a TOML value, else the text itself as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text.strip()


def toml_value(x) -> str:
    """Python value -> TOML value text (inline tables for dicts)."""
    if isinstance(x, (bool, np.bool_)):
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
    vals = list(values)
    return Dimension(key, tuple(Choice(toml_value(v) if isinstance(v, (list, tuple, Mapping)) else v,
                                       (f"{key}={toml_value(v)}",)) for v in vals))


def parse_vary(text: str) -> Dimension:
    """``key=v1,v2,...`` -> a dimension named ``key`` (values read as TOML values, like ``--set``)."""
    if "=" not in text:
        raise SweepError(f"--vary {text}: expected key.path=value1,value2,...")
    key, _, rest = text.partition("=")
    key = key.strip()
    if not key or any(c.isspace() for c in key):
        raise SweepError(f"--vary {text}: expected key.path=value1,value2,... with a key path before '='")
    vals = split_top_level(rest)
    if any(v == "" for v in vals):
        raise SweepError(f"--vary {text}: empty value (values are separated by commas)")
    return Dimension(key, tuple(Choice(_column_value(v), (f"{key}={v}",)) for v in vals))


def _column_value(text: str):
    """The table value of a --vary value: a number, boolean or string as TOML reads it; a list or
    table stays the text written."""
    v = parse_value(text)
    return text.strip() if isinstance(v, (list, dict)) else v


# ----------------------------------------------------------------------------- cache


def default_cache_dir() -> Path:
    env = os.environ.get("AQMLAB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "aqmlab"


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
    except tomllib.TOMLDecodeError:
        return {"__text__": text}


def run_key(text: str, name: str, overrides: Sequence[str], seed: int) -> str:
    """The content address of one run (see the module notes)."""
    material = {
        "format": CACHE_FORMAT,
        "aqmlab": __version__,
        "engine": engine_build_id(),
        "scenario": canonical_scenario(text),
        "name": name,
        "overrides": list(overrides),
        "seed": int(seed),
    }
    blob = json.dumps(material, sort_keys=True, default=str, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class Cache:
    """Finished runs on disk, one directory per run key (see the module notes)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser()

    def path(self, key: str) -> Path:
        return self.root / "v1" / key[:2] / key

    def has(self, key: str) -> bool:
        return (self.path(key) / "meta.json").is_file()

    def store(self, key: str, result: Result, meta: dict) -> Path:
        final = self.path(key)
        if self.has(key):
            return final
        tmp_root = self.root / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{key[:16]}-", dir=tmp_root))
        try:
            (tmp / "summary.json").write_text(json.dumps(result.summary, indent=1, sort_keys=True), encoding="utf-8")
            for attr, stem in TABLES.items():
                df = getattr(result, attr, None)
                if isinstance(df, pd.DataFrame):
                    df.to_parquet(tmp / f"{stem}.parquet", index=False)
            meta = dict(meta, key=key, wall_s=result.wall_seconds, created=time.time())
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True, default=str), encoding="utf-8")
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(tmp, final)
            except OSError:
                if not self.has(key):  # not a concurrent writer of the same run
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return final

    def load(self, key: str, tables: Iterable[str] | None = None) -> Result:
        """The stored run as a :class:`Result`; ``tables`` limits which tables are read (attribute
        names: ``flows``, ``timeseries``, ``snapshots``, ``flow_series``); the flows table is always read."""
        p = self.path(key)
        summary = json.loads((p / "summary.json").read_text(encoding="utf-8"))
        meta = json.loads((p / "meta.json").read_text(encoding="utf-8"))
        want = set(TABLES) if tables is None else set(tables) | {"flows"}
        frames = {}
        for attr, stem in TABLES.items():
            f = p / f"{stem}.parquet"
            if attr in want and f.is_file():
                frames[attr] = pd.read_parquet(f)
        known = {f.name for f in fields(Result)}
        kwargs = {a: frames[a] for a in ("snapshots", "flow_series") if a in frames and a in known}
        res = Result(summary, frames["flows"], frames.get("timeseries", pd.DataFrame()),
                     meta.get("wall_s", math.nan), **kwargs)
        for a in ("flow_series",):  # a table the Result class does not know yet: keep it as an attribute
            if a in frames and a not in known:
                setattr(res, a, frames[a])
        return res

    def clean_tmp(self, older_than_s: float = 3600.0) -> None:
        """Remove temporary directories left by killed runs."""
        tmp_root = self.root / "tmp"
        if not tmp_root.is_dir():
            return
        now = time.time()
        for d in tmp_root.iterdir():
            try:
                if now - d.stat().st_mtime > older_than_s:
                    shutil.rmtree(d, ignore_errors=True)
            except OSError:
                pass


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
    Both lists may use ``${...}`` templates.
    """

    def __init__(self, scenario, dims=(), seeds: int = 1, *, seed: int | None = None,
                 overrides: Sequence[str] = (), base_dir: str | os.PathLike | None = None,
                 post: Sequence[str] = ()):
        self.source = scenario if isinstance(scenario, Source) else read_source(scenario)
        self.dims: list[Dimension] = []
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
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise SweepError(f"--seeds: must be a positive integer, got {seeds!r}")
        if seed is not None and (not isinstance(seed, int) or seed < 0):
            raise SweepError(f"--seed: must be a non-negative integer, got {seed!r}")
        self.seeds = seeds
        self.seed = seed
        self.overrides = list(overrides)
        self.post = list(post)
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
            except OSError:
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
        for i, p in enumerate(self.points()):
            base = self.seed
            if validate or base is None:
                try:
                    info = json.loads(_core.validate(p.source.text, p.source.name, p.overrides))
                except _core.ScenarioError as e:
                    where = "" if not p.coords else f" (at {p.describe()})"
                    raise SweepError(f"{p.source.label}: {e}{where}")
                if base is None:
                    base = int(info.get("seed", 1))
            for k in range(self.seeds):
                s = base + k
                out.append(Task(i, s, run_key(p.source.text, p.source.name, p.overrides, s), p.source.text,
                                p.source.name, tuple(p.overrides), p.source.label))
        return out

    def run(self, jobs: int | None = None, cache=True, progress: bool = False,
            on_done: Callable[[Task], None] | None = None) -> "SweepResult":
        tasks = self.tasks()
        c, tmp = open_cache(cache)
        stats = execute(tasks, c, jobs=jobs, progress=progress, on_done=on_done)
        return SweepResult(self, tasks, c, stats, tmp)


def open_cache(cache) -> tuple[Cache, tempfile.TemporaryDirectory | None]:
    """``True`` -> the default cache; a path -> that directory; ``False``/``None`` -> a temporary one."""
    if cache is True:
        return Cache(default_cache_dir()), None
    if cache is False or cache is None:
        tmp = tempfile.TemporaryDirectory(prefix="aqmlab-sweep-")
        return Cache(tmp.name), tmp
    if isinstance(cache, Cache):
        return cache, None
    return Cache(cache), None


def _work(task: Task, root: str) -> tuple[str, float]:
    """Run one task in a worker process and store it in the cache."""
    from .api import run

    res = run(Source(task.text, task.label, task.name), seed=task.seed, overrides=list(task.overrides))
    Cache(root).store(task.key, res, {"scenario_label": task.label, "name": task.name,
                                       "overrides": list(task.overrides), "seed": task.seed,
                                       "aqmlab": __version__, "engine": engine_build_id()})
    return task.key, res.wall_seconds


def _ignore_sigint():
    """Workers leave Ctrl-C to the main process, which stops handing out runs; a worker finishes (and
    stores) the run it has, so an interruption costs no half-written state and no traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class RunFailed(RuntimeError):
    """A run of a sweep failed in the engine; the message names the run."""


def _describe_task(t: Task) -> str:
    ov = " ".join(f"--set '{o}'" for o in t.overrides)
    return f"{t.label} --seed {t.seed}" + (f" {ov}" if ov else "")


def execute(tasks: Sequence[Task], cache: Cache, jobs: int | None = None, progress: bool = False,
            on_done: Callable[[Task], None] | None = None, desc: str = "runs") -> dict:
    """Run every task whose key is not in ``cache`` (each key once), in ``jobs`` processes.

    ``on_done(task)`` is called in this process after each run is stored (for tests and progress).
    Returns ``{"total", "cached", "computed"}`` counted over distinct keys. A failing run raises
    :class:`RunFailed` after the runs already finished are stored.
    """
    cache.clean_tmp()
    first: dict[str, Task] = {}
    for t in tasks:
        first.setdefault(t.key, t)
    todo = [t for k, t in first.items() if not cache.has(k)]
    stats = {"total": len(first), "cached": len(first) - len(todo), "computed": 0}
    jobs = max(1, int(jobs or os.cpu_count() or 1))
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(first), initial=stats["cached"], desc=desc, unit="run", file=sys.stderr,
                   dynamic_ncols=True, smoothing=0.05)
    root = str(cache.root)

    def finished(t: Task):
        stats["computed"] += 1
        if bar is not None:
            bar.update(1)
        if on_done is not None:
            on_done(t)

    try:
        if jobs == 1 or len(todo) <= 1:
            for t in todo:
                try:
                    _work(t, root)
                except _core.SimulationError as e:
                    raise RunFailed(f"{_describe_task(t)}: simulation failed: {e}")
                finished(t)
        else:
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")
            ex = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=ctx, initializer=_ignore_sigint)
            try:
                pending = {}
                queue = list(reversed(todo))
                # keep at most 2 tasks per worker queued, so an interruption loses little
                while queue or pending:
                    while queue and len(pending) < 2 * jobs:
                        t = queue.pop()
                        pending[ex.submit(_work, t, root)] = t
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        t = pending.pop(fut)
                        try:
                            fut.result()
                        except _core.SimulationError as e:
                            raise RunFailed(f"{_describe_task(t)}: simulation failed: {e}")
                        finished(t)
            except BaseException:
                ex.shutdown(wait=False, cancel_futures=True)
                raise
            ex.shutdown(wait=True)
    finally:
        if bar is not None:
            bar.close()
    return stats


# ----------------------------------------------------------------------------- gathering


class SweepResult:
    """The runs of a sweep, gathered.

    ``runs``: one row per run: the dimension columns, ``seed``, ``run`` (the first 12 hex digits of
    the run's cache key), ``scenario`` (its name) and the metrics of :func:`aqmlab.runmetrics.run_row`.
    ``stats``: ``{"total", "cached", "computed"}``. :meth:`table` gathers a result table of every run;
    :meth:`result` loads one run.
    """

    def __init__(self, sweep: Sweep, tasks: Sequence[Task], cache: Cache, stats: dict, tmp=None):
        from .runmetrics import run_row

        self.sweep = sweep
        self.tasks = list(tasks)
        self.cache = cache
        self.stats = stats
        self._tmp = tmp  # keeps a temporary cache alive as long as this object
        self._points = sweep.points()
        rows = []
        for t in self.tasks:
            res = cache.load(t.key, tables=("flows", "timeseries"))
            row = self._keys(t)
            row["scenario"] = res.summary["scenario"]["name"]
            row.update(run_row(res))
            rows.append(row)
        self.runs = pd.DataFrame(rows)

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

    def table(self, name: str = "flows", where: Callable[[dict], bool] | None = None) -> pd.DataFrame:
        """A result table (``flows``, ``timeseries``, ``snapshots``, ``flow_series``) of every run
        (or of the runs whose key dict passes ``where``), with the dimension columns, ``seed`` and
        ``run`` in front."""
        frames = []
        for t in self.tasks:
            keys = self._keys(t)
            if where is not None and not where(keys):
                continue
            res = self.cache.load(t.key, tables=(name,))
            df = getattr(res, name, None)
            if not isinstance(df, pd.DataFrame):
                continue
            df = df.copy()
            for i, (k, v) in enumerate(keys.items()):
                df.insert(i, k, [v] * len(df))
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def save(self, out: str | os.PathLike, tables: Iterable[str] = ("flows",), csv_max_rows: int = 200_000) -> list[Path]:
        """Write ``runs.parquet``/``runs.csv`` and ``<table>.parquet``/``.csv`` for each of ``tables``
        (a table of more than ``csv_max_rows`` rows only as Parquet)."""
        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        written = []
        for name, df in [("runs", self.runs)] + [(TABLES.get(t, t), self.table(t)) for t in tables]:
            if df.empty and name != "runs":
                continue
            pq, csv = d / f"{name}.parquet", d / f"{name}.csv"
            _to_parquet(df, pq)
            written.append(pq)
            if len(df) <= csv_max_rows or name == "runs":
                df.to_csv(csv, index=False)
                written.append(csv)
            elif csv.exists():
                csv.unlink()
        return written


def _to_parquet(df: pd.DataFrame, path: Path) -> None:
    """Parquet needs one type per column; dimension columns may mix (e.g. ints and strings)."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object:
            kinds = {type(v) for v in out[c] if v is not None}
            if len(kinds) > 1 or (kinds and not kinds <= {str}):
                out[c] = out[c].map(lambda v: v if isinstance(v, str) or v is None else json.dumps(v) if isinstance(v, (list, dict)) else str(v))
    out.to_parquet(path, index=False)


def sweep(scenario, vary=None, seeds: int = 1, *, seed: int | None = None, overrides: Sequence[str] = (),
          jobs: int | None = None, cache=True, progress: bool = False) -> pd.DataFrame:
    """Run ``scenario`` over ``vary`` × ``seeds`` and return one row per run (a DataFrame).

    ``vary``: ``{key.path: [values]}`` (Python values, written as TOML) and/or ``"key=v1,v2"``
    strings, several combined as a cartesian product. ``seeds``: runs per point, with seeds
    ``seed, seed + 1, …`` (``seed`` defaults to the scenario's ``simulation.seed``). ``jobs``:
    processes (default: all cores). ``cache``: ``True`` (``$AQMLAB_CACHE`` or ``~/.cache/aqmlab``),
    a directory, or ``False`` (no reuse). Columns: one per varied key, ``seed``, ``run``,
    ``scenario``, then the metrics listed in :mod:`aqmlab.runmetrics`. For the flows of every run
    use ``Sweep(...).run().table("flows")``.
    """
    dims = []
    if vary is not None:
        if isinstance(vary, (str, Mapping)):
            vary = [vary]
        dims = list(vary)
    return Sweep(scenario, dims, seeds, seed=seed, overrides=overrides).run(jobs, cache, progress).runs
