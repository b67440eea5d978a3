"""Run keys: the content address of one run, under which the cache stores it.

A key is a SHA-256 over a canonical form of what determines a run's result: the parsed base
scenario (so comments and layout do not count, but every value does), its default name, the
overrides in order, the seed, the aqmlab version, the cache format and a fingerprint of the engine
that makes the run (so a rebuilt engine never reuses old results): aqmlab's binary, or for a run in
ns-2.35 the ``ns`` program and the translator (:func:`aqmlab.ns2.engine.build_id`), under another
name, so the two engines' runs of one scenario never share a key.
"""

from __future__ import annotations

import hashlib
import json
from typing import Sequence

from ..base.compat import tomllib
from ..base.version import __version__, engine_build_id
from .cache import CACHE_FORMAT


def canonical_scenario(text: str):
    """The parsed scenario (for hashing): layout and comments do not matter, values do."""
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return {"__text__": text}


def engine_id(engine: str = "aqmlab") -> str:
    """The fingerprint of ``engine`` ("aqmlab" or "ns2") that goes into a run's key."""
    if engine == "aqmlab":
        return engine_build_id()
    if engine == "ns2":
        from ..ns2.engine import build_id

        return f"ns2:{build_id()}"
    raise ValueError(f"unknown engine {engine!r} (aqmlab, ns2)")


def key_hasher(text: str, name: str, overrides: Sequence[str], canonical=None, engine: str = "aqmlab"):
    """The SHA-256 state of a run's key before its seed (shared by the seeds of a point)."""
    material = {
        "format": CACHE_FORMAT,
        "aqmlab": __version__,
        "engine": engine_id(engine),
        "scenario": canonical_scenario(text) if canonical is None else canonical,
        "name": name,
        "overrides": list(overrides),
    }
    blob = json.dumps(material, sort_keys=True, default=str, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode())


def seeded(h, seed: int) -> str:
    """The key of the run with ``seed``, from the state :func:`key_hasher` returned."""
    h = h.copy()
    h.update(b"|seed=%d" % int(seed))
    return h.hexdigest()


def run_key(text: str, name: str, overrides: Sequence[str], seed: int, engine: str = "aqmlab") -> str:
    """The content address of one run (see the module notes)."""
    return seeded(key_hasher(text, name, overrides, engine=engine), seed)
