"""Shared pieces of the analytical models: parameter checks, small numerics.

Every model reports failure the same way: a solver returns a result whose ``converged`` flag is
False, whose numbers are NaN and whose ``message`` says why; ``result.require()`` turns that into a
:class:`NotConvergedError`. Bad inputs raise :class:`ParameterError` at once, naming the parameter and
what is allowed. Both derive from :class:`ModelError`, which the ``aqmlab model`` command prints as one
``error:`` line; the three live with every other exception class in :mod:`aqmlab.base.errors`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real  # numpy's scalar types are registered with these

from ..base.errors import ParameterError

__all__ = ["check_real", "check_int", "check_choice", "expit", "logit"]


# ----------------------------------------------------------------------------- checks


def check_real(name: str, value, *, gt=None, ge=None, lt=None, le=None) -> float:
    """Return ``value`` as a finite float, or raise ParameterError naming ``name`` and the range."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterError(f"{name}: {value!r} is not a number")
    v = float(value)
    if not math.isfinite(v):
        raise ParameterError(f"{name}: must be finite, got {v}")
    rng = []
    if gt is not None:
        rng.append(f"> {gt:g}")
    if ge is not None:
        rng.append(f">= {ge:g}")
    if lt is not None:
        rng.append(f"< {lt:g}")
    if le is not None:
        rng.append(f"<= {le:g}")
    bad = (gt is not None and not v > gt) or (ge is not None and not v >= ge) or (
        lt is not None and not v < lt) or (le is not None and not v <= le)
    if bad:
        raise ParameterError(f"{name}: must be {' and '.join(rng)}, got {v:g}")
    return v


def check_int(name: str, value, *, ge=None) -> int:
    if isinstance(value, bool):
        raise ParameterError(f"{name}: {value!r} is not an integer")
    if isinstance(value, Integral):
        v = int(value)
    elif isinstance(value, Real) and float(value).is_integer():
        v = int(value)
    else:
        raise ParameterError(f"{name}: {value!r} is not an integer")
    if ge is not None and v < ge:
        raise ParameterError(f"{name}: must be an integer >= {ge}, got {v}")
    return v


def check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise ParameterError(f"{name}: {value!r} is not one of {', '.join(map(str, choices))}")
    return value


# ----------------------------------------------------------------------------- numerics


def expit(u: float) -> float:
    """Logistic function, overflow-free."""
    if u >= 0:
        return 1.0 / (1.0 + math.exp(-u))
    e = math.exp(u)
    return e / (1.0 + e)


def logit(p: float) -> float:
    return math.log(p) - math.log1p(-p)
