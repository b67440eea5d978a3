"""What a sweep is: a base scenario × dimensions × seeds, and the runs (tasks) it makes.

:class:`Sweep` holds the dimensions (:class:`Dimension`, each a list of :class:`Choice`) and
expands them into points and tasks with their cache keys; :meth:`Sweep.run` makes the runs that
are not in the cache and gathers them; :func:`sweep` is the one-call form the ``aqmlab`` package
exports. See :mod:`aqmlab.sweep` for the whole picture.
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from .. import _core
from ..base.errors import ScenarioError, SweepError
from ..run.source import MAX_DEPTH, SEED_MAX, Source, attribute, check_overrides, read_source
from .cache import open_cache
from .executors import check_jobs, execute
from .gather import SweepResult
from .grammar import (column_value, expand, expand_range, is_range, nesting_depth, shorten, split_top_level,
                      toml_value)
from .keys import canonical_scenario, key_hasher, seeded

#: the most runs one sweep may have (split larger studies into several sweeps)
MAX_RUNS = 1_000_000


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
    """A dimension that sets ``key`` to each of ``values`` (Python values; a string written as a range,
    ``"10:40:10"``, gives the range's values)."""
    if not isinstance(key, str) or not key.strip() or any(c.isspace() for c in key):
        raise SweepError(f"vary: {key!r}: expected a key path such as \"flows[0].count\"")
    if isinstance(values, str) and is_range(values):  # "10:40:10", as --vary writes it
        return Dimension(key, tuple(Choice(column_value(v), (f"{key}={v}",)) for v in expand_range(values, key)))
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
    """``key=v1,v2,...`` -> a dimension named ``key`` (values read as TOML values, like ``--set``; an
    item written as a range, ``10:40:10``, ``0.25Mb/s:8Mb/s:x2`` or ``1:1000:log4``, gives its values:
    :func:`~aqmlab.sweep.grammar.expand_range`)."""
    if not isinstance(text, str) or "=" not in text:
        raise SweepError(f"--vary {shorten(str(text))}: expected key.path=value1,value2,...")
    key, _, rest = text.partition("=")
    key = key.strip()
    if not key or any(c.isspace() for c in key):
        raise SweepError(f"--vary {shorten(text)}: expected key.path=value1,value2,... with a key path before '='")
    if nesting_depth(rest) > MAX_DEPTH:
        raise SweepError(f"--vary {key}: a value nested more than {MAX_DEPTH} levels deep")
    vals = []
    for v in split_top_level(rest):
        if v == "":
            raise SweepError(f"--vary {text}: empty value (values are separated by commas)")
        vals += expand_range(v, key) if is_range(v) else [v]
    return Dimension(key, tuple(Choice(column_value(v), (f"{key}={v}",)) for v in vals))


# ----------------------------------------------------------------------------- runs


@dataclass
class Point:
    """One point of the grid: its coordinates, base scenario and overrides (templates expanded)."""

    coords: dict
    source: Source
    overrides: list
    #: the option each override came from (``--set`` or ``--vary``), for errors that name it
    origins: list | None = None

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.coords.items()) or "the base scenario"


@dataclass(frozen=True)
class Task:
    """One run: a point and a seed, with its cache key, and the engine that makes it ("aqmlab", or
    "ns2" for ns-2.35: :mod:`aqmlab.sweep.engines`)."""

    point: int
    seed: int
    key: str
    text: str
    name: str
    overrides: tuple
    label: str
    engine: str = "aqmlab"


class Sweep:
    """A base scenario × dimensions × seeds (see the module notes).

    ``scenario``: a path, TOML string, dict or :class:`~aqmlab.run.source.Source`; ``dims``: dimensions
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
        except ScenarioError as e:
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
            except ScenarioError:
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
            origins = (["--set"] * len(self.overrides) + [o for c in combo for o in ["--vary"] * len(c.set)]
                       + ["--set"] * len(self.post))
            pts.append(Point(coords, self._source_of(scen), ov, origins))
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
                except ScenarioError as e:
                    msg, theirs = attribute(str(e), p.overrides, p.origins)
                    if theirs:  # an override's mistake: named, and the file not blamed
                        raise SweepError(msg)
                    where = "" if not p.coords else f" (at {p.describe()})"
                    raise SweepError(f"{p.source.label}: {msg}{where}")
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
                out.append(Task(i, s, seeded(h, s), p.source.text, p.source.name, ov, p.source.label))
        return out

    def run(self, jobs: int | None = None, cache=True, progress: bool = False,
            on_done: Callable[[Task], None] | None = None, *, executor=None, scheduler: str | None = None,
            client=None) -> "SweepResult":
        """Make the runs not in the cache (see :func:`aqmlab.sweep.executors.execute` for ``executor``,
        ``scheduler`` and ``client``) and gather them."""
        check_jobs(jobs)
        tasks = self.tasks()
        c, tmp = open_cache(cache)
        rows: dict = {}
        stats = execute(tasks, c, jobs=jobs, progress=progress, on_done=on_done, executor=executor,
                        scheduler=scheduler, client=client, rows=rows)
        return SweepResult(self, tasks, c, stats, tmp, rows=rows)


def _override_list(overrides, what: str) -> list[str]:
    return check_overrides(overrides, what)


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
    then the metrics listed in :mod:`aqmlab.run.metrics`. For the flows of every run use
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
