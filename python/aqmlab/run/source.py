"""A scenario as given (a path, a TOML string or a dict), read into its TOML text.

:func:`read_source` accepts what :func:`aqmlab.run` accepts and returns a :class:`Source`: the text
and where it came from (for error messages and default names). :func:`check_seed` and
:func:`check_overrides` check the other arguments of a run the same way, as
:class:`aqmlab.ScenarioError`.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import re
from pathlib import Path
from typing import Iterable, Mapping

from ..base.errors import ScenarioError, ScenarioFileError


#: seeds are unsigned 64-bit integers
SEED_MAX = (1 << 64) - 1
#: how deeply a dict scenario or an override value may nest (TOML needs far less)
MAX_DEPTH = 64


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
    from ..base.compat import tomllib

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
    from ..base.io import read_text_bounded

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


def toml_value(x) -> str:
    """A Python value as TOML value text (inline tables for dicts), as an override's value."""
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
                raise ScenarioError(f"{k!r}: a table's keys must be strings")
            key = k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)
            items.append(f"{key} = {toml_value(v)}")
        return "{ " + ", ".join(items) + " }"
    raise ScenarioError(f"cannot write {x!r} ({type(x).__name__}) as a scenario value")


def check_overrides(overrides, what: str = "overrides") -> list[str]:
    """A list of ``"key.path=value"`` strings (a single string is one override), or a dict
    ``{"key.path": value}`` of Python values (written as TOML: ``{"bottleneck.aqm.max_p": 0.2,
    "bottleneck.delay": "10ms"}``; a dict value is an inline table)."""
    if overrides is None:
        return []
    if isinstance(overrides, str):
        return [overrides]
    if isinstance(overrides, Mapping):
        out = []
        for k, v in overrides.items():
            if not isinstance(k, str) or not k.strip() or "=" in k or any(c.isspace() for c in k):
                raise ScenarioError(f"{what}: {k!r}: expected a key path such as \"bottleneck.aqm.max_p\"")
            try:
                out.append(f"{k}={toml_value(v)}")
            except RecursionError:
                raise ScenarioError(f"{what}: {k}: a value nested too deeply") from None
            except ScenarioError as e:
                raise ScenarioError(f"{what}: {k}: {e}") from None
        return out
    if not isinstance(overrides, Iterable):
        raise ScenarioError(f"{what}: expected a list of \"key.path=value\" strings or a dict, got "
                            f"{type(overrides).__name__}")
    out = list(overrides)
    for o in out:
        if not isinstance(o, str):
            raise ScenarioError(f"{what}: expected \"key.path=value\" strings, got {o!r}")
    return out


def attribute(msg: str, overrides, origins=None) -> tuple[str, bool]:
    """Who caused a scenario error ``msg`` (``"<key path>: <why>"``): an override or the file.

    When the key path lies at or under an override's key (``bottleneck.aqm: missing field`` after
    ``--set 'bottleneck.aqm={type="red"}'``), the override did: returns ``("--set <override>: <why>",
    True)`` (``origins[i]`` names the option of override ``i``, ``--set`` by default; the key path is
    kept when it lies below the override's key). When the key is a sibling of an override's and the
    reason names the override's key (``bottleneck.aqm.max_th: must be greater than min_th (600)``
    after ``--set bottleneck.aqm.min_th=600``), the message says so: ``(<why>; with --set ...)``,
    False. Otherwise ``(msg, False)``: the file's. A message that already names an override
    (``--set ...: ...``) is the override's."""
    if msg.startswith("--"):
        return msg, True
    path, sep, why = msg.partition(": ")
    if not sep:
        return msg, False
    ovs = list(overrides or [])
    flag = lambda i: (origins[i] if origins is not None and i < len(origins) else "--set")
    keys = [str(o).partition("=")[0].strip().replace(" ", "") for o in ovs]
    for i in reversed(range(len(ovs))):
        k = keys[i]
        if k and (path == k or path.startswith(k + ".") or path.startswith(k + "[")):
            return f"{flag(i)} {ovs[i]}: {why if path == k else f'{path}: {why}'}", True
    parent = path.rpartition(".")[0]
    for i in reversed(range(len(ovs))):
        k = keys[i]
        kparent, _, leaf = k.rpartition(".")
        if leaf and ((kparent == parent and re.search(rf"(?<![\w.]){re.escape(leaf)}(?!\w)", why))
                     or re.search(rf"(?<![\w.]){re.escape(k)}(?![\w.])", why)):
            return f"{msg} (with {flag(i)} {ovs[i]})", False
    return msg, False


#: the example scenarios, installed with the package (the checkout's ``examples/`` links here)
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def examples() -> list[tuple[str, str]]:
    """The example scenarios installed with aqmlab: ``(name, description)`` in name order."""
    from ..base.compat import tomllib

    out = []
    for p in sorted(EXAMPLES.glob("*.toml")):
        try:
            desc = str(tomllib.loads(p.read_text(encoding="utf-8")).get("description", ""))
        except (OSError, tomllib.TOMLDecodeError):
            desc = ""
        out.append((p.stem, desc))
    return out


def example(name: str) -> Path:
    """The path of the installed example scenario ``name`` (``"voip-latency"``, with or without
    ``.toml``), which runs from any folder: ``aqmlab.run(aqmlab.example("voip-latency"))``.
    An unknown name is a :class:`ScenarioError` with the nearest and the list."""
    from ..base.errors import did_you_mean

    stem = str(name).strip()
    stem = stem[:-5] if stem.endswith(".toml") else stem
    p = EXAMPLES / f"{stem}.toml"
    if stem and "/" not in stem and p.is_file():
        return p
    names = [n for n, _ in examples()]
    raise ScenarioError(f"--example {name}: no such example{did_you_mean(stem, names)} (examples: {', '.join(names)})")
