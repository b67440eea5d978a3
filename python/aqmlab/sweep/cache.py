"""The result cache: one file per run, written atomically, verified on read.

An *entry* is what a run leaves behind, as one uncompressed ZIP file
``<cache>/v2/<key[:2]>/<key>.zip`` (the key is the content address of the run,
:func:`aqmlab.sweep.keys.run_key`) holding:

* ``meta.json``: what was run (scenario, overrides, seed, aqmlab version, engine build, host, wall
  time) and the size and SHA-256 of every other member;
* ``summary.json``: the run summary;
* ``row.json``: the run's metrics row (:func:`aqmlab.run.metrics.run_row`), so gathering a sweep
  reads no table;
* one Arrow IPC file (Feather v2) per result table: ``flows.arrow``, ``timeseries.arrow``, and
  ``queue_snapshots.arrow``/``flow_series.arrow`` when the run made them (``unzip`` them and read
  with ``pyarrow.feather.read_table`` or ``pandas.read_feather``).

One file per run, not a directory of files: creating files is what costs most on a busy file
system, and one file is renamed into place atomically on any POSIX file system, NFS included.

Entries are made where the run is made (a local worker process or a Dask worker), as bytes, and
written by the process that owns the cache (:meth:`Cache.put`): into a temporary file under
``<cache>/tmp/``, then renamed into place. A reader therefore sees a whole entry or none, two
writers of the same run (two clients sharing a cache, or a run retried after its worker died)
leave one whole entry, and a cache needs no shared file system between the machines of a cluster.

On read every member is checked against ``meta.json`` (and ZIP's own CRC); an entry that is
truncated or corrupt is reported, removed and made again (:meth:`Cache.check`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..base.errors import CacheError, CorruptEntry
from ..run.result import TABLES, Result

#: bump when the layout of an entry changes (also part of every run key)
CACHE_FORMAT = 2
LAYOUT = f"v{CACHE_FORMAT}"
#: temporary directories older than this are left-overs of a killed writer
STALE_TMP_SECONDS = 3600.0


def cache_layout() -> str:
    """The folder of the current cache format inside a cache directory (``v2``)."""
    return LAYOUT


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_ROW_VERSION: str | None = None


def row_version() -> str:
    """A fingerprint of the code that computes a run's metrics row (:mod:`aqmlab.run.metrics`, the
    loss of :mod:`aqmlab.run.summary` and the Jain's index of :mod:`aqmlab.base.metrics`): a row
    stored by other code is computed again from the entry's tables."""
    global _ROW_VERSION
    if _ROW_VERSION is None:
        from ..base import metrics as base_metrics
        from ..run import metrics as run_metrics
        from ..run import summary as run_summary

        h = hashlib.sha256()
        for m in (run_metrics, run_summary, base_metrics):
            with open(m.__file__, "rb") as f:
                h.update(f.read())
        _ROW_VERSION = h.hexdigest()[:16]
    return _ROW_VERSION


def _json_bytes(obj, indent=None) -> bytes:
    # (no indentation: json's C encoder is used only without it)
    return json.dumps(obj, indent=indent, sort_keys=True, default=str).encode("utf-8")


@dataclass
class Entry:
    """A finished run as its cache entry file (the ZIP bytes), with its metrics row: made where the
    run is made, stored or sent as is."""

    key: str
    data: bytes
    row: dict = field(default_factory=dict)
    wall_s: float = math.nan

    @classmethod
    def from_files(cls, key: str, files: dict, row=None, wall_s: float = math.nan) -> "Entry":
        """An entry from its members (``meta.json`` first in the file)."""
        import io
        import zipfile

        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
            for name in ["meta.json"] + [n for n in files if n != "meta.json"]:
                info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
                info.external_attr = 0o644 << 16
                z.writestr(info, files[name])
        return cls(key, buf.getvalue(), row or {}, wall_s)


#: members carry a fixed date (the time of the run is in meta.json): an entry's bytes depend only on the run
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def make_entry(key: str, result: Result, meta: dict) -> Entry:
    """The cache entry of ``result``: summary, tables (Arrow IPC), metrics row, and meta.json with
    the size and checksum of each file."""
    from ..base.io import arrow_bytes
    from ..run.metrics import run_row

    files = {"summary.json": _json_bytes(result.summary)}
    for attr, stem in TABLES.items():
        cols = result.columns(attr)
        if cols is not None:
            files[f"{stem}.arrow"] = arrow_bytes(cols)
    row = {"scenario": result.summary["scenario"]["name"], **run_row(result)}
    files["row.json"] = json.dumps({"version": row_version(), "row": row}).encode()  # (in column order)
    meta = dict(meta, key=key, format=CACHE_FORMAT, wall_s=result.wall_seconds, created=time.time(),
                host=socket.gethostname(),
                files={name: {"size": len(b), "sha256": _sha(b)} for name, b in files.items()})
    files["meta.json"] = _json_bytes(meta)
    return Entry.from_files(key, files, row, result.wall_seconds)


class Cache:
    """Finished runs on disk, one file per run key (see the module notes)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser()
        self._dirs: set = set()

    def __repr__(self):
        return f"Cache({str(self.root)!r})"

    def __reduce__(self):
        return (Cache, (str(self.root),))

    def path(self, key: str) -> Path:
        return self.root / LAYOUT / key[:2] / f"{key}.zip"

    # ------------------------------------------------------------------ reading and checking

    def _open(self, key: str):
        """``(zipfile, meta)`` of a stored entry, ``None`` if there is none; CorruptEntry if the
        file is not a whole entry."""
        import zipfile

        try:
            z = zipfile.ZipFile(self.path(key))
        except FileNotFoundError:
            return None
        except (OSError, zipfile.BadZipFile, ValueError) as e:
            raise CorruptEntry(f"not a whole entry ({type(e).__name__}: truncated?)")
        try:
            meta = json.loads(z.read("meta.json"))
        except (KeyError, OSError, ValueError, zipfile.BadZipFile) as e:
            z.close()
            raise CorruptEntry(f"meta.json unreadable ({type(e).__name__})")
        if not isinstance(meta, dict) or meta.get("key") != key or not isinstance(meta.get("files"), dict):
            z.close()
            raise CorruptEntry("meta.json does not describe this entry")
        return z, meta

    @staticmethod
    def _member(z, meta: dict, name: str) -> bytes:
        import zipfile

        f = meta["files"].get(name)
        try:
            data = z.read(name)
        except (KeyError, OSError, zipfile.BadZipFile, ValueError) as e:
            raise CorruptEntry(f"{name} unreadable ({type(e).__name__})")
        if f is None or len(data) != f.get("size") or _sha(data) != f.get("sha256"):
            raise CorruptEntry(f"{name} does not match its checksum")
        return data

    def _read(self, key: str, names) -> dict:
        """Verified members of an entry: ``{name: bytes}`` plus ``"meta"``; CorruptEntry if absent."""
        opened = self._open(key)
        if opened is None:
            raise CorruptEntry("missing")
        z, meta = opened
        with z:
            out = {n: self._member(z, meta, n) for n in names if n in meta["files"]}
        out["meta"] = meta
        return out

    def has(self, key: str) -> bool:
        """Whether an entry is stored (it is whole unless the disk damaged it: see :meth:`check`)."""
        return self.path(key).is_file()

    def check(self, key: str) -> str | None:
        """``None`` if the entry is whole, ``"absent"`` if there is none, else why it is damaged
        (every member is read and compared with the size and checksum in meta.json)."""
        try:
            opened = self._open(key)
            if opened is None:
                return "absent"
            z, meta = opened
            with z:
                for name in meta["files"]:
                    self._member(z, meta, name)
        except CorruptEntry as e:
            return str(e)
        return None

    def meta(self, key: str) -> dict:
        return self._read(key, ())["meta"]

    def row(self, key: str) -> dict:
        """The metrics row of a stored run (from row.json, or computed from its tables when it was
        stored by other metrics code)."""
        got = self._read(key, ("row.json",))
        if "row.json" in got:
            stored = json.loads(got["row.json"])
            if stored.get("version") == row_version():
                return stored["row"]
        from ..run.metrics import run_row

        res = self.load(key, ("flows", "timeseries", "snapshots"))  # (snapshots: runmetrics.py snapshots.*)
        return {"scenario": res.summary["scenario"]["name"], **run_row(res)}

    def summary(self, key: str) -> dict:
        """The stored run's ``summary.json`` (nothing else is read)."""
        return json.loads(self._read(key, ["summary.json"])["summary.json"])

    def load(self, key: str, tables: Iterable[str] | None = None) -> Result:
        """The stored run as a :class:`Result` (tables as DataFrames when first used); ``tables``
        limits which tables are read (attribute names: ``flows``, ``timeseries``, ``snapshots``,
        ``flow_series``); the flows table always is."""
        from ..base.io import read_arrow

        want = set(TABLES) if tables is None else set(tables) | {"flows"}
        names = {attr: f"{stem}.arrow" for attr, stem in TABLES.items() if attr in want}
        got = self._read(key, ["summary.json", *names.values()])
        summary = json.loads(got["summary.json"])
        t = {attr: read_arrow(got[n]) for attr, n in names.items() if n in got}
        return Result(summary, t.get("flows"), t.get("timeseries"), got["meta"].get("wall_s", math.nan),
                      t.get("snapshots"), t.get("flow_series"), t.get("latency"))

    def arrow(self, key: str, table: str):
        """One table of a stored run as a pyarrow Table (verified), or ``None`` if it has none."""
        from ..base.io import read_arrow

        name = f"{TABLES.get(table, table)}.arrow"
        got = self._read(key, (name,))
        return read_arrow(got[name]) if name in got else None

    def files(self, key: str) -> dict:
        """The members of a stored entry as bytes (verified; meta.json included)."""
        opened = self._open(key)
        if opened is None:
            raise CorruptEntry("missing")
        z, meta = opened
        with z:
            out = {n: self._member(z, meta, n) for n in meta["files"]}
            out["meta.json"] = z.read("meta.json")
        return out

    # ------------------------------------------------------------------ writing

    def probe(self) -> None:
        """Prove the cache writable (and not full) before any run; raises :class:`CacheError`."""
        from ..base.io import probe_writable

        try:
            probe_writable(self.root / "tmp", f"cache {self.root}", min_free=4 << 20)
        except OSError as e:
            raise CacheError(str(e.strerror or e)) from None

    def put(self, entry: Entry) -> bool:
        """Store ``entry`` atomically; ``False`` if the run was already stored whole (by another
        writer). A damaged entry of the same key is replaced."""
        from ..base.io import atomic_write_bytes

        final = self.path(entry.key)
        if final.exists() and self.check(entry.key) is None:
            return False
        if not self._dirs:
            (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        if final.parent not in self._dirs:  # (mkdir costs a system call even when the directory exists)
            final.parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(final.parent)
        atomic_write_bytes(final, entry.data, tmp_dir=self.root / "tmp")
        return True

    def store(self, key: str, result: Result, meta: dict) -> Path:
        """Make and store the entry of ``result`` (see :func:`make_entry`)."""
        self.put(make_entry(key, result, meta))
        return self.path(key)

    def discard(self, key: str) -> None:
        """Remove an entry."""
        try:
            self.path(key).unlink()
        except FileNotFoundError:
            pass

    def clean_tmp(self, older_than: float = STALE_TMP_SECONDS) -> None:
        """Remove temporary files left by killed writers (only old ones: another process may be
        writing a young one)."""
        d = self.root / "tmp"
        if not d.is_dir():
            return
        now = time.time()
        for p in d.iterdir():
            try:
                if now - p.stat().st_mtime > older_than:
                    shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
            except OSError:
                pass


def default_cache_dir() -> Path:
    env = os.environ.get("AQMLAB_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "aqmlab"


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


__all__ = ["Cache", "CacheError", "CorruptEntry", "Entry", "make_entry", "open_cache", "default_cache_dir",
           "cache_layout", "CACHE_FORMAT", "LAYOUT", "row_version"]
