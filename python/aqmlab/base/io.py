"""Small file helpers with no heavy imports: bounded reads, atomic writes, tables as CSV and Parquet.

Result tables travel as *columns*: a list of ``(name, values)`` pairs, as the engine returns them.
CSV is written here with the standard library (the same text pandas writes: ``repr`` of floats,
NaN as an empty cell); Parquet with pyarrow, imported on first use. pandas is never imported here.
"""

from __future__ import annotations

import csv
import errno
import io
import math
import os
import tempfile
from pathlib import Path
from typing import Callable, Sequence

#: the largest scenario or experiment file read (a scenario is a small TOML file; /dev/zero is not)
MAX_TEXT_BYTES = 16 << 20

Columns = Sequence  # of (name, list) pairs


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


#: permissions of files and directories made here, as open() and mkdir() would give them
FILE_MODE = 0o666 & ~_umask()
DIR_MODE = 0o777 & ~_umask()


def read_text_bounded(path, limit: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of ``path``, refusing more than ``limit`` bytes (``ValueError``) or NUL bytes
    (``UnicodeDecodeError``): a device, a binary or a huge file is not a scenario."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit >> 20} MiB; a scenario is a small TOML file")
    if b"\0" in data:
        raise UnicodeDecodeError("utf-8", data, data.index(b"\0"), data.index(b"\0") + 1, "NUL byte")
    return data.decode("utf-8")


def os_reason(e: OSError) -> str:
    """A short reason for an OSError (``disk full``, ``read-only file system``, ...)."""
    if e.errno == errno.ENOSPC:
        return "no space left on the device (disk full)"
    if e.errno == errno.EROFS:
        return "read-only file system"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if e.errno == errno.EDQUOT:
        return "disk quota exceeded"
    return e.strerror or str(e)


def name_problem(name: str) -> str | None:
    """What a name taken from an option or a scenario must be to be a file or folder name inside the
    folder a command was given, when it is not: ``"without a path separator"``, ``"without
    '..'"``, ... (read as "give a name <that>"); None when it can be used. So no name leads a command
    to write outside its folder."""
    if not isinstance(name, str) or not name.strip():
        return "that is not empty"
    if "/" in name or "\\" in name or (os.sep in name) or (os.altsep and os.altsep in name):
        return "without a path separator"
    if ".." in name:
        return "without '..'"
    if "\0" in name or any(ord(c) < 32 for c in name):
        return "without control characters"
    if name.startswith((".", "-")):
        return "that does not start with '.' or '-'"
    return None


def probe_writable(directory, what: str, min_free: int = 1 << 20) -> None:
    """Create ``directory`` if needed and prove that a file can be written, renamed and removed
    there, with at least ``min_free`` bytes free. Raises ``OSError`` whose text starts with ``what``."""
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
        if not d.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a directory")
        fd, tmp = tempfile.mkstemp(prefix=".aqmlab-probe-", dir=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(b"\0" * 4096)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, tmp + ".done")
            tmp += ".done"
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        st = os.statvfs(d)
        if st.f_bavail * st.f_frsize < min_free:
            raise OSError(errno.ENOSPC, "no space left")
    except OSError as e:
        raise OSError(e.errno, f"{what}: cannot write: {os_reason(e)}") from None


def atomic_write(path, write: Callable[[io.BufferedWriter], None], tmp_dir=None) -> Path:
    """Write ``path`` through ``write(file)`` into a temporary file beside it (or in ``tmp_dir``, an
    existing directory on the same file system), then rename it into place: a crash or a full disk leaves the old file or
    none, never a truncated one."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=tmp_dir or p.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p


def atomic_write_bytes(path, data: bytes, tmp_dir=None) -> Path:
    return atomic_write(path, lambda f: f.write(data), tmp_dir)


def _cell(v):
    if isinstance(v, float) and math.isnan(v):
        return ""
    return v


#: rows of a CSV table written at a time (the text of one chunk is all the memory writing takes
#: beyond the table, and Ctrl-C is seen between chunks)
CSV_CHUNK_ROWS = 1 << 16


def _csv_parts(columns: Columns):
    """The CSV text of a table in parts: the header, then :data:`CSV_CHUNK_ROWS` rows at a time."""
    cols = [values for _, values in columns]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([name for name, _ in columns])
    yield buf.getvalue()
    n = min((len(v) for v in cols), default=0)
    for a in range(0, n, CSV_CHUNK_ROWS):
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(
            zip(*[[_cell(v) for v in values[a:a + CSV_CHUNK_ROWS]] for values in cols]))
        yield buf.getvalue()


def csv_bytes(columns: Columns) -> bytes:
    """The CSV text of a table (header, then one line per row), as pandas' ``to_csv(index=False)``."""
    return "".join(_csv_parts(columns)).encode("utf-8")


def write_csv(f, columns: Columns) -> None:
    """Write :func:`csv_bytes` of a table into the binary file ``f``, a chunk of rows at a time."""
    for part in _csv_parts(columns):
        f.write(part.encode("utf-8"))


def _arrow_array(values: list):
    """A column as a pyarrow array, built from raw buffers for the engine's column types (float,
    int, str): ``pa.array(list)`` would import pandas to check whether the list is a pandas object."""
    import array as _array
    import itertools

    import pyarrow as pa

    n = len(values)
    if isinstance(values, _array.array) and values.typecode in "dq":  # the engine's numeric columns
        return pa.Array.from_buffers(pa.float64() if values.typecode == "d" else pa.int64(), n,
                                     [None, pa.py_buffer(values)])
    if n == 0:  # as pandas types an empty column
        return pa.Array.from_buffers(pa.float64(), 0, [None, pa.py_buffer(b"")])
    kinds = {type(v) for v in values}
    if n and kinds <= {float, int} and kinds:
        if kinds == {int} and all(-(1 << 63) <= v < (1 << 63) for v in values):
            return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(_array.array("q", values))])
        if int not in kinds or all(abs(v) < (1 << 53) for v in values if type(v) is int):
            return pa.Array.from_buffers(pa.float64(), n, [None, pa.py_buffer(_array.array("d", values))])
    if n and kinds == {str}:
        enc = [v.encode("utf-8") for v in values]
        offsets = list(itertools.chain((0,), itertools.accumulate(map(len, enc))))
        if offsets[-1] < (1 << 31):
            return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(_array.array("i", offsets)),
                                                          pa.py_buffer(b"".join(enc))])
    return pa.array(values)


def _arrow_table(columns: Columns):
    import pyarrow as pa

    cols = list(columns)
    return pa.Table.from_arrays([_arrow_array(list(v)) for _, v in cols], names=[name for name, _ in cols])


def parquet_bytes(columns: Columns) -> bytes:
    """A table as Parquet: the engine's column types by :mod:`aqmlab.base.parquet` (no third-party
    import), anything else by pyarrow."""
    sink = io.BytesIO()
    write_parquet(sink, columns)
    return sink.getvalue()


def write_parquet(f, columns: Columns) -> None:
    """Write a table as Parquet into the binary file ``f`` (see :func:`parquet_bytes`), the engine's
    column types one column at a time."""
    from .parquet import write_parquet as plain
    from .version import __version__

    if plain(f, columns, created_by=f"aqmlab version {__version__}"):
        return
    import pyarrow.parquet as pq

    pq.write_table(_arrow_table(columns), f)


def arrow_bytes(columns: Columns) -> bytes:
    """A table in the Arrow IPC file format (Feather v2): written and read ten times faster than
    Parquet for the small tables of a run; large tables are LZ4-compressed."""
    import pyarrow as pa

    table = _arrow_table(columns)
    comp = "lz4" if table.nbytes > (256 << 10) and pa.Codec.is_available("lz4") else None
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=comp)) as w:
        w.write_table(table)
    return sink.getvalue()


def read_arrow(data: bytes):
    """An Arrow IPC file (bytes) as a pyarrow Table."""
    import pyarrow as pa

    return pa.ipc.open_file(pa.BufferReader(data)).read_all()


def read_parquet(data: bytes | str | os.PathLike):
    """A Parquet file (path or bytes) as a pyarrow Table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = pa.BufferReader(data) if isinstance(data, (bytes, bytearray, memoryview)) else str(data)
    return pq.ParquetFile(src, pre_buffer=False).read()


def arrow_columns(table) -> list:
    """A pyarrow Table as ``(name, values)`` pairs of Python lists."""
    return [(name, col.to_pylist()) for name, col in zip(table.column_names, table.columns)]


def write_table_files(directory, stem: str, columns: Columns, csv: bool = True) -> list[Path]:
    """``<stem>.csv`` (unless ``csv`` is false) and ``<stem>.parquet`` in ``directory``, each atomically
    and streamed into its file (a chunk of rows or a column at a time, not the whole file in memory)."""
    d = Path(directory)
    out = []
    if csv:
        out.append(atomic_write(d / f"{stem}.csv", lambda f: write_csv(f, columns)))
    out.append(atomic_write(d / f"{stem}.parquet", lambda f: write_parquet(f, columns)))
    return out


def progress_bar(iterable=None, always: bool = False, **kw):
    """A tqdm progress bar on stderr. It is drawn only when stderr is a terminal (tqdm's
    ``disable=None``): a log file or a pipe gets no frames. ``always`` draws it anywhere (a caller of
    the Python API asked for it: a notebook's stderr is not a terminal)."""
    import sys

    from tqdm import tqdm

    return tqdm(iterable, file=sys.stderr, disable=False if always else None, **kw)
