"""What is running: aqmlab's version and a fingerprint of the engine binary.

Both are part of every cache key (:mod:`aqmlab.sweep.keys`), and a Dask worker whose engine build
differs from the client's is refused (:mod:`aqmlab.sweep.executors`).
"""

from __future__ import annotations

import hashlib
import os

from .. import _core
from .._core import __version__

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


__all__ = ["__version__", "engine_build_id"]
