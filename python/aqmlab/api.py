"""The Python face of the engine: load a scenario, run it, get DataFrames back.

Nothing heavy is imported here: a :class:`Result` keeps the engine's columns and builds a pandas
DataFrame only when ``res.flows`` (or another table) is first asked for, and :meth:`Result.save`
writes CSV with the standard library and Parquet with pyarrow. So ``aqmlab run`` and sweep workers
never load pandas.
"""

from __future__ import annotations

import json
import numbers
import os
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from . import _core
from ._core import ScenarioError

#: seeds are unsigned 64-bit integers
SEED_MAX = (1 << 64) - 1
#: how deeply a dict scenario or an override value may nest (TOML needs far less)
MAX_DEPTH = 64


class ScenarioFileError(ScenarioError, FileNotFoundError):
    """A scenario file that does not exist; both an :class:`aqmlab.ScenarioError` and a
    ``FileNotFoundError``."""


class Source:
    """A scenario's text with where it came from (for error messages and default names)."""

    __slots__ = ("text", "label", "name")

    def __init__(self, text: str, label: str, name: str):
        self.text = text
        self.label = label  # file path as given, or "<string>" / "<dict>"
        self.name = name  # default scenario name (file stem)

    def __repr__(self):
        return f"Source(label={self.label!r}, name={self.name!r})"

    def __eq__(self, other):
        return isinstance(other, Source) and (self.text, self.label, self.name) == (other.text, other.label, other.name)

    def __reduce__(self):
        return (Source, (self.text, self.label, self.name))


def _looks_like_toml(s: str) -> bool:
    if "\n" in s:
        return True
    from ._compat import tomllib

    try:
        return bool(tomllib.loads(s))
    except (tomllib.TOMLDecodeError, RecursionError):
        return False


def read_source(scenario) -> Source:
    """Accept a path, a TOML string or a dict, and return its TOML text.

    A string is a path if a file of that name exists or it is not TOML text (one line that TOML does
    not read, such as ``runs/a=b.toml``). Raises :class:`aqmlab.ScenarioError` for anything else:
    a missing file (also a ``FileNotFoundError``), a directory, a file that is not UTF-8 text or is
    larger than 16 MiB, a dict with a value TOML cannot hold. A :class:`Source` is returned as is.
    """
    from ._io import read_text_bounded

    if isinstance(scenario, Source):
        return scenario
    if isinstance(scenario, Mapping):
        return Source(dict_to_toml(scenario), "<dict>", "scenario")
    if isinstance(scenario, str) and not os.path.exists(scenario) and _looks_like_toml(scenario):
        return Source(scenario, "<string>", "scenario")
    if isinstance(scenario, (str, os.PathLike)):
        p = Path(scenario)
        try:
            return Source(read_text_bounded(p), str(scenario), p.stem)
        except FileNotFoundError:
            raise ScenarioFileError(f"{scenario}: no such file") from None
        except IsADirectoryError:
            raise ScenarioError(f"{scenario}: is a directory, not a scenario file") from None
        except UnicodeDecodeError:
            raise ScenarioError(f"{scenario}: not a text (UTF-8) file") from None
        except ValueError as e:
            raise ScenarioError(f"{scenario}: {e}") from None
        except OSError as e:
            raise ScenarioError(f"{scenario}: cannot read: {e.strerror or e}") from None
    raise ScenarioError(f"scenario: expected a path, a TOML string or a dict, not {type(scenario).__name__}")


def _check_toml_value(v, where: str, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise ScenarioError(f"<dict>: {where}: nested more than {MAX_DEPTH} levels deep")
    if isinstance(v, Mapping):
        for k, x in v.items():
            if not isinstance(k, str):
                raise ScenarioError(f"<dict>: {where + '.' if where else ''}{k!r}: keys must be strings, "
                                    f"not {type(k).__name__}")
            _check_toml_value(x, f"{where}.{k}" if where else k, depth + 1)
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            _check_toml_value(x, f"{where}[{i}]", depth + 1)
    elif v is None:
        raise ScenarioError(f"<dict>: {where}: None has no TOML form; leave the key out for its default")
    elif not isinstance(v, (str, bool, numbers.Integral, numbers.Real)) and not hasattr(v, "isoformat"):
        raise ScenarioError(f"<dict>: {where}: a {type(v).__name__} is not a scenario value "
                            f"(strings, numbers, booleans, lists and tables are)")


def _plain(v):
    """numpy scalars and tuples as the Python values tomli_w writes."""
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, bool) or isinstance(v, (str, int, float)):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return v


def dict_to_toml(d: Mapping) -> str:
    """A scenario given as a dict, as TOML text; a value TOML cannot hold is a ScenarioError with
    its key path."""
    import tomli_w

    _check_toml_value(d, "")
    try:
        return tomli_w.dumps(_plain(d))
    except (TypeError, ValueError) as e:
        raise ScenarioError(f"<dict>: {e}") from None


def check_seed(seed, what: str = "seed"):
    """``None`` or an integer in 0..2^64-1; anything else is a ScenarioError."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ScenarioError(f"{what}: must be an integer from 0 to 2^64-1, got {seed!r}")
    seed = int(seed)
    if not 0 <= seed <= SEED_MAX:
        raise ScenarioError(f"{what}: must be an integer from 0 to 2^64-1 (18446744073709551615), got {seed}")
    return seed


def check_overrides(overrides, what: str = "overrides") -> list[str]:
    """A list of ``"key.path=value"`` strings; a single string is one override."""
    if overrides is None:
        return []
    if isinstance(overrides, str):
        return [overrides]
    if isinstance(overrides, Mapping) or not isinstance(overrides, Iterable):
        raise ScenarioError(f"{what}: expected a list of \"key.path=value\" strings, got {type(overrides).__name__}")
    out = list(overrides)
    for o in out:
        if not isinstance(o, str):
            raise ScenarioError(f"{what}: expected \"key.path=value\" strings, got {o!r}")
    return out


def _frame(columns):
    import pandas as pd

    return pd.DataFrame({name: values for name, values in columns})


#: result tables: attribute -> file stem
TABLES = {"flows": "flows", "timeseries": "timeseries", "snapshots": "queue_snapshots", "flow_series": "flow_series"}


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
        wall_seconds: the engine's wall time.

    A table is held as the engine's columns and becomes a DataFrame when first read.
    """

    def __init__(self, summary: dict, flows=None, timeseries=None, wall_seconds: float = float("nan"),
                 snapshots=None, flow_series=None):
        self.summary = summary
        self.wall_seconds = wall_seconds
        # per table: a DataFrame, a list of (name, values) columns, or a loader returning columns
        self._data = {"flows": flows, "timeseries": timeseries, "snapshots": snapshots, "flow_series": flow_series}

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
        """A table as ``(column, values)`` pairs of Python lists, without pandas (``None`` if the run
        has no such table)."""
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
    del _set

    def __repr__(self):
        sc = self.summary.get("scenario", {})
        return f"<Result {sc.get('name')!r} seed {sc.get('seed')}>"

    def jain(self, column: str = "throughput_bps", group: str | Iterable[str] | None = None, flows=None) -> float:
        """Jain's index of fairness (Σx)²/(n·Σx²) of ``column`` over a chosen set of flows.

        ``group``: a group name or several; ``flows``: flow ids, or a boolean mask over ``self.flows``.
        With neither, all flows.
        """
        import pandas as pd

        df = self.flows
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
        s2 = float((x * x).sum())
        return 1.0 if s2 == 0 else float(x.sum() ** 2 / (len(x) * s2))

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
        from ._io import atomic_write_bytes, write_table_files

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


def _engine(src: Source, call):
    """Call the engine; a too deeply nested value or a bad ``max_memory`` becomes a ScenarioError."""
    try:
        return call()
    except ScenarioError:
        raise
    except RecursionError:
        raise ScenarioError(f"{src.label}: nested too deeply") from None
    except (ValueError, OverflowError, TypeError) as e:  # max_memory / $AQMLAB_MAX_MEMORY
        raise ScenarioError(str(e)) from None


def validate(scenario, overrides: Sequence[str] = (), max_memory: int | str | None = None) -> dict:
    """Check a scenario without running it; returns a short description, with the run's resource
    estimate (``memory_estimate_bytes``, ``events_estimate``).

    Raises :class:`aqmlab.ScenarioError` with ``'<key path>: <what is wrong>'``, also when the
    memory estimate exceeds ``max_memory`` (bytes or a size such as ``"8GB"``; default
    ``$AQMLAB_MAX_MEMORY``, else half the machine's physical memory).
    """
    src = read_source(scenario)
    ov = check_overrides(overrides)
    return json.loads(_engine(src, lambda: _core.validate(src.text, src.name, ov, max_memory)))


def run(
    scenario,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    progress: Callable[[float], None] | None = None,
    max_memory: int | str | None = None,
    pcap_dir: str | os.PathLike | bool | None = None,
) -> Result:
    """Run a scenario (a path, a TOML string or a dict) and return a :class:`Result`.

    ``seed`` replaces the scenario's ``simulation.seed`` (an integer from 0 to 2^64-1);
    ``overrides`` are ``"key.path=value"`` strings (one string is one override) applied before
    validation; ``progress(sim_seconds)`` is called periodically. A scenario whose memory estimate
    exceeds ``max_memory`` (bytes or a size such as ``"8GB"``; default ``$AQMLAB_MAX_MEMORY``, else
    half the physical memory) is refused before any work (docs/scenarios.md, "Resources"). Bad input
    raises :class:`aqmlab.ScenarioError`; a failed run :class:`aqmlab.SimulationError`.

    The scenario's ``[[pcap]]`` traces (docs/scenarios.md, "Packet traces") are written into
    ``pcap_dir``; by default into a temporary folder that lives as long as the Result, from which
    :meth:`Result.save` copies them; ``pcap_dir=False`` writes none. ``Result.pcap`` lists them.
    """
    import time

    src = read_source(scenario)
    seed = check_seed(seed)
    ov = check_overrides(overrides)
    if progress is not None and not callable(progress):
        raise ScenarioError(f"progress: expected a function of the simulated time, got {type(progress).__name__}")
    tmp = None
    if pcap_dir is None and ("pcap" in src.text or any("pcap" in o for o in ov)):
        import tempfile

        tmp = tempfile.TemporaryDirectory(prefix="aqmlab-pcap-")
        pcap_dir = tmp.name
    where = None if pcap_dir in (None, False) else os.fspath(pcap_dir)
    t0 = time.perf_counter()
    raw = _engine(src, lambda: _core.run(src.text, src.name, seed, ov, progress, max_memory, where))
    wall = time.perf_counter() - t0
    summary = json.loads(raw["summary"])
    if ov:
        from .rundir import describe

        summary["scenario"]["overrides"] = list(ov)
        summary["scenario"]["description"] = describe(summary["scenario"].get("description", ""), ov)
    res = Result(summary, raw["flows"], raw["timeseries"], wall, raw.get("snapshots"), raw.get("flow_series"))
    res._resolve = (src.text, src.name, src.label, list(ov), seed)
    res.pcap = [Path(f) for f in raw.get("pcap", [])]
    res._pcap_tmp = tmp  # removed with the Result
    return res


def spatial_distribution(result: Result, grid: int = 200):
    """The spatial distribution (docs/metrics.md) of a run made with ``simulation.queue_snapshots = true``: the probability ``rho_udp(y)``
    that the packet at position ``y`` of the queue (``y = 0`` tail, ``y = b_avg`` head, rescaled per
    snapshot) is a UDP packet. Returns columns ``y`` and ``rho_udp`` (see docs/metrics.md).
    """
    from .models.runs import spatial_distribution as m10

    if result.snapshots is None:
        raise ValueError("this run took no queue snapshots (set simulation.queue_snapshots = true)")
    return m10(result.snapshots, n_grid=grid, source="snapshots", count=result.summary["queue_snapshots"]["count"])


def names(kind: str) -> list[tuple[str, str]]:
    """Available names with descriptions; ``kind`` is ``"aqm"``, ``"tcp"`` or ``"traffic"``."""
    return list(_core.names(kind))

