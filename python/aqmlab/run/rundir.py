"""Where a run's results go, and the resolved scenario written beside them.

``aqmlab run`` never replaces the results of one run with those of another without being told:

* the default folder is unique to what was run: ``results/<file stem>/`` for the scenario as
  written, ``results/<stem>-seed<N>/`` with another ``--seed``, and a short digest of the overrides
  with ``--set`` (``results/<stem>-set-1a2b3c4d/``), so two runs of one file with different
  ``--set`` land in two folders;
* a folder that already holds results is reused only if they are of the same run (the same
  resolved scenario and seed, hence bit-identical results). When the default folder holds another
  run (the scenario file was edited since), the run goes to the first of ``<folder>-2``,
  ``<folder>-3``, … that is free or holds this same run, and says so (:func:`free_out`); an
  ``--out`` folder holding another run's results, or files that are not an aqmlab run, is refused
  with a one-line error naming what differs, unless ``--force`` is given.

Every run folder holds ``scenario.toml``, the resolved scenario (every default filled in, the
overrides applied, the seed set): ``aqmlab run results/<name>/scenario.toml`` runs it again.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

from .. import _core
from ..base.errors import OutDirError
from ..base.version import __version__

SCENARIO_FILE = "scenario.toml"
# what `aqmlab run` writes; a folder holding only these (and nothing else) is a run folder
RESULT_STEMS = ("summary", "scenario", "flows", "timeseries", "queue_snapshots", "flow_series", "latency")
RESULT_SUFFIXES = (".json", ".toml", ".csv", ".parquet", ".pcap")


def default_out(stem: str, overrides: Sequence[str], seed: int | None, scenario_seed: int | None,
                root: Path = Path("results")) -> Path:
    """``results/<stem>[-seed<N>][-set-<digest>]``: unique to the scenario file, seed and overrides.
    A ``stem`` (the scenario's ``name``) that is not a plain name (a path separator, ``..``) is an
    OutDirError: results never go outside ``root``."""
    from ..base.io import name_problem

    why = name_problem(stem)
    if why:
        raise OutDirError(f"name: {stem!r} cannot name the results folder: give a name {why}, or --out DIR")
    name = stem
    if seed is not None and seed != scenario_seed:
        name += f"-seed{seed}"
    if overrides:
        h = hashlib.sha256("\n".join(overrides).encode()).hexdigest()[:8]
        name += f"-set-{h}"
    return root / name


def describe(description: str, overrides: Sequence[str]) -> str:
    """The scenario's description, saying which values the overrides changed."""
    if not overrides:
        return description
    return f"{description} [with --set {'; '.join(overrides)}]" if description else f"with --set {'; '.join(overrides)}"


def resolved_text(text: str, name: str, label: str, overrides: Sequence[str], seed: int | None) -> str:
    """The resolved scenario (``_core.resolve``) with a header saying where it came from."""
    how = f"aqmlab run {label}" + "".join(f" --set '{o}'" for o in overrides) + (
        f" --seed {seed}" if seed is not None else "")
    header = [
        f"The scenario of this run, resolved by aqmlab {__version__}: every default filled in, the",
        "overrides applied and the seed set. Run it again with `aqmlab run <this file>`.",
        f"made by: {how}",
    ]
    import json

    info = json.loads(_core.validate(text, name, list(overrides)))
    ov = list(overrides)
    # named after its default folder, so that running this file again lands in the same place
    try:
        run_name = default_out(info["name"], overrides, seed, info["seed"]).name
    except OutDirError:  # a name that cannot name a folder (results go to --out): kept as it is
        run_name = info["name"]
    if run_name != info["name"]:
        ov.append(f"name={json.dumps(run_name)}")
    if overrides:
        # the description says what the overrides changed (a TOML basic string is JSON-compatible)
        ov.append(f"description={json.dumps(describe(info.get('description', ''), overrides))}")
    return _core.resolve(text, name, ov, seed, header)


def same_run(old: str, new: str) -> bool:
    """Whether two resolved scenarios give the same results (equal but for name and description)."""
    from ..base.compat import tomllib

    try:
        a, b = tomllib.loads(old), tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        return False
    for k in ("name", "description"):  # labels, not what is simulated
        a.pop(k, None)
        b.pop(k, None)
    return a == b


def flat_keys(d, prefix=""):
    """A scenario (parsed TOML) as ``{key path: value}`` (tables of a list by index)."""
    out = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flat_keys(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
        for i, v in enumerate(d):
            out.update(flat_keys(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = d
    return out


def differences(old: str, new: str, limit: int = 3) -> str:
    """The first key paths whose values differ between two resolved scenarios, as ``k: a -> b``."""
    from ..base.compat import tomllib

    try:
        a, b = flat_keys(tomllib.loads(old)), flat_keys(tomllib.loads(new))
    except tomllib.TOMLDecodeError:
        return "its scenario.toml is not valid TOML"
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k) and k not in ("name", "description")]
    show = "; ".join(f"{k}: {_short(a.get(k))} -> {_short(b.get(k))}" for k in keys[:limit])
    more = f" and {len(keys) - limit} more" if len(keys) > limit else ""
    return (show + more) if keys else "only the description differs"


def _short(v) -> str:
    if v is None:
        return "(none)"
    s = str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, str) else str(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _is_result_file(p: Path) -> bool:
    return p.is_file() and p.stem in RESULT_STEMS and p.suffix in RESULT_SUFFIXES or p.suffix == ".pcap"


def check_out(out: Path, resolved: str, force: bool = False) -> None:
    """Refuse (``OutDirError``) to write a run's results into ``out`` if it holds another run's
    results or files that are not an aqmlab run, unless ``force``."""
    if not out.exists():
        return
    if not out.is_dir():
        raise OutDirError(f"{out}: exists and is not a directory")
    if force:
        return
    entries = list(out.iterdir())
    if not entries:
        return
    others = [p.name for p in entries if not _is_result_file(p)]
    if others:
        raise OutDirError(f"{out}: holds files that are not results of aqmlab run ({', '.join(sorted(others)[:3])}"
                          f"{', ...' if len(others) > 3 else ''}); give another --out, or --force to write into it")
    prev = out / SCENARIO_FILE
    if not prev.is_file():
        raise OutDirError(f"{out}: holds results without a {SCENARIO_FILE}, so which run they are of is unknown; "
                          f"give another --out, or --force to replace them")
    old = prev.read_text(encoding="utf-8", errors="replace")
    if not same_run(old, resolved):
        raise OutDirError(f"{out}: holds the results of another run ({differences(old, resolved)}); "
                          f"give --out DIR to keep both, or --force to replace them")


#: how many numbered folders ``free_out`` tries
MAX_VERSIONS = 10_000


def free_out(out: Path, resolved: str) -> tuple[Path, str | None]:
    """The default folder for a run: ``out`` if it is free or holds this same run, else the first of
    ``out-2``, ``out-3``, … that is (a scenario file edited and run again lands beside its earlier
    results, never over them). Returns the folder and, when it is not ``out``, why ``out`` was not
    used (``check_out``'s reason)."""
    try:
        check_out(out, resolved)
        return out, None
    except OutDirError as e:
        why = str(e)
    for k in range(2, MAX_VERSIONS):
        cand = out.with_name(f"{out.name}-{k}")
        try:
            check_out(cand, resolved)
            return cand, why
        except OutDirError:
            continue
    raise OutDirError(f"{out}: it and {MAX_VERSIONS - 2} numbered folders beside it hold other runs; give --out DIR")


def remove_stale(out: Path, written: Sequence[Path]) -> None:
    """Delete result files of an earlier run that this run did not write (e.g. queue_snapshots.csv
    when snapshots are now off), so that a folder never mixes two runs."""
    keep = {Path(p).name for p in written}
    for p in out.iterdir():
        if _is_result_file(p) and p.name not in keep:
            p.unlink()
