"""Units: reading them (the engine's parsers, the one grammar of scenario files) and printing them.

``parse_rate("10Mb/s")`` (bits per second), ``parse_duration("100ms")`` (seconds) and
``parse_size("8GB")`` (bytes) are the engine's own parsers (``aqmlab._core``), so a command-line
option reads a value exactly as a scenario file does; they raise ``ValueError`` with the reason.

``fmt_rate``, ``fmt_time`` and ``fmt_num`` print values as the command line shows them (``982.40
kb/s``, ``753.7 ms``, ``0.561``; ``-`` for a missing value).
"""

from __future__ import annotations

import math

from .._core import parse_duration, parse_rate, parse_size

#: bit rates and their factors, largest first
RATE_UNITS = (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3))


def fmt_rate(bps) -> str:
    """``982.40 kb/s``: two decimals in the largest unit the rate reaches; ``-`` for None or NaN."""
    if bps is None or (isinstance(bps, float) and math.isnan(bps)):
        return "-"
    for unit, f in RATE_UNITS:
        if abs(bps) >= f:
            return f"{bps / f:.2f} {unit}"
    return f"{bps:.0f} b/s"


def rate_unit(v: float) -> tuple[str, float]:
    """The unit :func:`fmt_rate` would give ``v``: ``("Mb/s", 1e6)``."""
    return next(((u, f) for u, f in RATE_UNITS if abs(v) >= f), ("b/s", 1.0))


def fmt_time(s) -> str:
    """``2.50 s``, ``753.7 ms`` or ``40 us``; ``-`` for None or NaN."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def fmt_num(x, digits=3) -> str:
    """``x`` with ``digits`` decimals; ``-`` for None."""
    return "-" if x is None else f"{x:.{digits}f}"


__all__ = ["parse_rate", "parse_duration", "parse_size", "fmt_rate", "fmt_time", "fmt_num", "rate_unit",
           "RATE_UNITS"]
