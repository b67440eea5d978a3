"""A small Parquet writer for the engine's tables, in the standard library only.

``aqmlab run`` writes each result table as CSV and Parquet. pyarrow (with numpy, which it loads)
costs more CPU to import than a small run costs in total, so the engine's tables are written here
instead: one row group, one uncompressed data page per column, PLAIN encoding, every column
REQUIRED (the engine's columns have no missing values; NaN is a value). Column types: DOUBLE
(Python floats), INT64 (Python ints) and UTF-8 BYTE_ARRAY (strings). Anything else returns
``None`` and the caller falls back to pyarrow. The format is Apache Parquet's (parquet.thrift, the
file metadata in Thrift's compact protocol); the tests read these files back with pyarrow and
pandas.
"""

from __future__ import annotations

import array
import struct
import sys
from typing import Sequence

MAGIC = b"PAR1"

# parquet.thrift enums
_BOOLEAN, _INT32, _INT64, _INT96, _FLOAT, _DOUBLE, _BYTE_ARRAY = range(7)
_REQUIRED = 0
_UTF8 = 0
_PLAIN, _RLE = 0, 3
_UNCOMPRESSED = 0
_DATA_PAGE = 0

# Thrift compact protocol field types
_T_I32, _T_I64, _T_BINARY, _T_LIST, _T_STRUCT = 5, 6, 8, 9, 12


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


class _Struct:
    """Builds one Thrift struct in the compact protocol (fields in increasing id order)."""

    def __init__(self):
        self.buf = bytearray()
        self.last = 0

    def _header(self, fid: int, ftype: int):
        delta = fid - self.last
        if 0 < delta <= 15:
            self.buf.append((delta << 4) | ftype)
        else:
            self.buf.append(ftype)
            self.buf += _varint(_zigzag(fid))
        self.last = fid

    def i32(self, fid: int, v: int):
        self._header(fid, _T_I32)
        self.buf += _varint(_zigzag(v))
        return self

    def i64(self, fid: int, v: int):
        self._header(fid, _T_I64)
        self.buf += _varint(_zigzag(v))
        return self

    def binary(self, fid: int, v: bytes | str):
        if isinstance(v, str):
            v = v.encode("utf-8")
        self._header(fid, _T_BINARY)
        self.buf += _varint(len(v)) + v
        return self

    def struct(self, fid: int, s: "_Struct"):
        self._header(fid, _T_STRUCT)
        self.buf += s.bytes()
        return self

    def list(self, fid: int, etype: int, items: list):
        self._header(fid, _T_LIST)
        n = len(items)
        self.buf += bytes([(n << 4) | etype]) if n < 15 else bytes([0xF0 | etype]) + _varint(n)
        for it in items:
            if etype == _T_STRUCT:
                self.buf += it.bytes()
            elif etype == _T_BINARY:
                b = it.encode("utf-8") if isinstance(it, str) else it
                self.buf += _varint(len(b)) + b
            else:  # i32 / i64
                self.buf += _varint(_zigzag(it))
        return self

    def bytes(self) -> bytes:
        return bytes(self.buf) + b"\x00"


def _kind(values):
    """The Parquet type a column is written as, or ``None`` for a column this writer does not take."""
    if isinstance(values, array.array) and values.typecode in "dq":  # the engine's numeric columns
        return _DOUBLE if values.typecode == "d" else _INT64
    if not values:
        return _DOUBLE  # as pandas types an empty column
    kinds = {type(v) for v in values}
    if kinds == {int} and all(-(1 << 63) <= v < (1 << 63) for v in values):
        return _INT64
    if kinds <= {float, int} and all(type(v) is float or abs(v) < (1 << 53) for v in values):
        return _DOUBLE
    if kinds == {str}:
        return _BYTE_ARRAY
    return None


def _plain(values, ptype: int) -> bytes:
    """The PLAIN encoding of a column of type ``ptype`` (from :func:`_kind`)."""
    if not values:
        return b""
    if ptype == _BYTE_ARRAY:
        pack = struct.Struct("<I").pack
        return b"".join(pack(len(e)) + e for e in (v.encode("utf-8") for v in values))
    code = "q" if ptype == _INT64 else "d"
    a = values if isinstance(values, array.array) and values.typecode == code else array.array(code, values)
    if sys.byteorder != "little":
        a = array.array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def write_parquet(f, columns: Sequence, created_by: str = "aqmlab") -> bool:
    """Write a table (``(name, values)`` pairs, equal lengths) as a Parquet file into the binary
    file ``f``, one column at a time (the memory it takes beyond the table is one column's
    encoding; Ctrl-C is seen between columns). Returns ``False``, having written nothing, if a
    column holds values other than floats, ints or strings."""
    cols = [(str(name), values if isinstance(values, (list, array.array)) else list(values))
            for name, values in columns]
    n = len(cols[0][1]) if cols else 0
    if any(len(v) != n for _, v in cols):
        raise ValueError("columns of different lengths")
    types = [_kind(values) for _, values in cols]
    if None in types:
        return False
    f.write(MAGIC)
    pos = len(MAGIC)
    chunks = []
    for (name, values), ptype in zip(cols, types):
        if n == 0:
            continue
        data = _plain(values, ptype)
        dph = _Struct().i32(1, n).i32(2, _PLAIN).i32(3, _RLE).i32(4, _RLE)
        header = _Struct().i32(1, _DATA_PAGE).i32(2, len(data)).i32(3, len(data)).struct(5, dph).bytes()
        offset = pos
        f.write(header)
        f.write(data)
        size = len(header) + len(data)
        pos += size
        del data
        meta = (_Struct().i32(1, ptype).list(2, _T_I32, [_PLAIN, _RLE]).list(3, _T_BINARY, [name])
                .i32(4, _UNCOMPRESSED).i64(5, n).i64(6, size).i64(7, size).i64(9, offset))
        chunks.append((_Struct().i64(2, offset).struct(3, meta), size))
    schema = [_Struct().binary(4, "schema").i32(5, len(cols))]
    for (name, _), ptype in zip(cols, types):
        el = _Struct().i32(1, ptype).i32(3, _REQUIRED).binary(4, name)
        if ptype == _BYTE_ARRAY:
            el.i32(6, _UTF8)
        schema.append(el)
    groups = []
    if n:
        groups.append(_Struct().list(1, _T_STRUCT, [c for c, _ in chunks]).i64(2, sum(s for _, s in chunks))
                      .i64(3, n))
    footer = (_Struct().i32(1, 1).list(2, _T_STRUCT, schema).i64(3, n).list(4, _T_STRUCT, groups)
              .binary(6, created_by).bytes())
    f.write(footer)
    f.write(struct.pack("<I", len(footer)))
    f.write(MAGIC)
    return True


def parquet_bytes(columns: Sequence, created_by: str = "aqmlab") -> bytes | None:
    """A table (``(name, values)`` pairs, equal lengths) as a Parquet file, or ``None`` if a column
    holds values other than floats, ints or strings."""
    import io

    buf = io.BytesIO()
    return buf.getvalue() if write_parquet(buf, columns, created_by) else None
