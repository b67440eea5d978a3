"""Units: reading them (the engine's parsers, the one grammar of scenario files) and printing them.

``parse_rate("10Mb/s")`` (bits per second), ``parse_duration("100ms")`` (seconds) and
``parse_size("8GB")`` (bytes) are the engine's own parsers (``aqmlab._core``), so a command-line
option reads a value exactly as a scenario file does; they raise ``ValueError`` with the reason.

``fmt_rate``, ``fmt_time``, ``fmt_delay``, ``fmt_pct`` and ``fmt_num`` print values as the command
line shows them (``982.40 kb/s``, ``2.50 s``, ``753.7 ms``, ``9.4%``, ``0.561``; ``-`` for a missing
value). The conventions (docs/metrics.md, "Units and ratios"): a delay a person reads is in ms
(``fmt_delay``, whatever its size); a ratio is a fraction of 1 in the files and printed as a
percentage with its sign (``fmt_pct``); a zero is never printed with a sign (``-0 b/s``).
"""

from __future__ import annotations

import math

from .._core import parse_duration, parse_rate, parse_size

#: bit rates and their factors, largest first
RATE_UNITS = (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3))


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_rate(bps) -> str:
    """``982.40 kb/s``: two decimals in the largest unit the rate reaches; ``-`` for None or NaN."""
    if _missing(bps):
        return "-"
    bps = bps + 0.0  # (-0.0, the sum of nothing, prints as 0)
    for unit, f in RATE_UNITS:
        if abs(bps) >= f:
            return f"{bps / f:.2f} {unit}"
    return f"{bps:.0f} b/s"


def rate_unit(v: float) -> tuple[str, float]:
    """The unit :func:`fmt_rate` would give ``v``: ``("Mb/s", 1e6)``."""
    return next(((u, f) for u, f in RATE_UNITS if abs(v) >= f), ("b/s", 1.0))


def fmt_time(s) -> str:
    """``2.50 s``, ``753.7 ms`` or ``40 us``; ``-`` for None or NaN."""
    if _missing(s):
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def fmt_delay(s) -> str:
    """A delay in ms, whatever its size: ``753.7 ms``, ``1204.0 ms``, ``0.042 ms``; ``-`` for None or NaN."""
    if _missing(s):
        return "-"
    ms = s * 1e3 + 0.0
    return f"{ms:.1f} ms" if abs(ms) >= 1 or ms == 0 else f"{ms:.2g} ms"


#: words that make a ``*_s`` key a delay (printed in ms), not a duration
DELAY_WORDS = ("delay", "owd", "rtt", "late", "sojourn")


def is_delay(key: str) -> bool:
    """Whether the ``*_s`` key ``key`` is a delay a packet saw (``delay_p99_s``, ``owd_p50_s``,
    ``rtt_mean_s``, ``late_p99_s``), which is printed in ms, rather than a duration."""
    leaf = key.rsplit(".", 1)[-1]
    return leaf.endswith("_s") and any(w in leaf for w in DELAY_WORDS)


def fmt_seconds(key: str, s) -> str:
    """A ``*_s`` value as printed: a delay (:func:`is_delay`) in ms, another duration in s, ms or us."""
    return fmt_delay(s) if is_delay(key) else fmt_time(s)


def fmt_pct(x, digits: int = 1) -> str:
    """A fraction of 1 as a percentage with its sign: ``9.4%``; a small non-zero one keeps two
    significant digits (``0.042%``, never a ``0.0%`` that is not zero); ``-`` for None or NaN."""
    if _missing(x):
        return "-"
    p = x * 100 + 0.0
    if p != 0 and abs(p) < 10 ** -digits:
        return f"{p:.2g}%"
    return f"{p:.{digits}f}%"


def fmt_num(x, digits=3) -> str:
    """``x`` with ``digits`` decimals; ``-`` for None or NaN."""
    return "-" if _missing(x) else f"{x + 0.0:.{digits}f}"


__all__ = ["parse_rate", "parse_duration", "parse_size", "fmt_rate", "fmt_time", "fmt_delay", "fmt_seconds", "fmt_pct",
           "fmt_num", "is_delay", "DELAY_WORDS", "rate_unit",
           "RATE_UNITS"]
