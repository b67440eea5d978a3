"""The small languages of a sweep: value lists, values and override templates.

* ``--vary key=v1,v2,...``: :func:`split_top_level` splits at commas outside brackets, braces and
  quotes; each value is read as ``--set`` reads it (:func:`parse_value`: a TOML value, else the text
  itself); :func:`column_value` is what the results table shows for it. An item may be a range
  (:func:`expand_range`): ``10:40:10`` (start, stop, step: 10, 20, 30, 40), ``0.25Mb/s:8Mb/s:x2``
  (each value twice the last) or ``1ms:1s:log7`` (7 values evenly spaced on a log scale).
* Python values become TOML text with :func:`toml_value` (inline tables for dicts).
* ``${expr}`` in an override (experiment files use them: ``flows[0].count=${N // 2}``) is replaced by
  :func:`expand`: an arithmetic expression over the values of the point's dimensions.

Mistakes raise :class:`~aqmlab.base.errors.SweepError`.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Mapping

from ..base.compat import tomllib
from ..base.errors import ScenarioError, SweepError
from ..run.source import MAX_DEPTH
from ..run.source import toml_value as _toml_value


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` outside brackets, braces and quotes."""
    parts, depth, quote, cur = [], 0, None, []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch in "[{(":
            depth += 1
            cur.append(ch)
        elif ch in "]})":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def nesting_depth(text: str) -> int:
    """The deepest nesting of brackets and braces in ``text`` (quotes not looked into)."""
    depth = deepest = 0
    quote = None
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_value(text: str):
    """A value as ``--set`` reads it: a TOML value, else the text itself as a string."""
    if nesting_depth(text) > MAX_DEPTH:
        raise SweepError(f"{shorten(text)}: nested more than {MAX_DEPTH} levels deep")
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text.strip()
    except RecursionError:
        raise SweepError(f"{shorten(text)}: nested too deeply") from None


def shorten(text: str, n: int = 40) -> str:
    """``text`` on one line, cut to ``n`` characters (for error messages)."""
    text = text.replace("\n", "\\n")
    return text if len(text) <= n else text[:n] + "…"


def toml_value(x) -> str:
    """Python value -> TOML value text (inline tables for dicts); :func:`aqmlab.run.source.toml_value`
    with its errors as SweepError."""
    try:
        return _toml_value(x)
    except ScenarioError as e:
        raise SweepError(str(e)) from None


# ----------------------------------------------------------------------------- templates

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCS = {"int": int, "float": float, "round": round, "min": min, "max": max, "str": str, "abs": abs,
          "ceil": math.ceil, "floor": math.floor}


def _eval(node, env: Mapping):
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise SweepError(f"unknown name {node.id!r}; known: {', '.join(sorted(env)) or 'none'}")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        return _FUNCS[node.func.id](*[_eval(a, env) for a in node.args])
    raise SweepError(f"not allowed in a template: {ast.unparse(node)!r} (numbers, dimension names, + - * / // % **, "
                     f"{', '.join(_FUNCS)})")


def expand(template: str, env: Mapping) -> str:
    """Replace every ``${expr}`` in ``template`` by the value of ``expr`` over ``env``.

    ``expr`` may use numbers, strings, the names in ``env``, ``+ - * / // % **`` and ``int``,
    ``float``, ``round``, ``min``, ``max``, ``str``, ``abs``, ``ceil``, ``floor``. A value is written as it would be in
    TOML for a number, and as plain text for a string (so ``"${rate}kb/s"`` works).
    """
    out, i = [], 0
    while True:
        j = template.find("${", i)
        if j < 0:
            out.append(template[i:])
            return "".join(out)
        k = template.find("}", j)
        if k < 0:
            raise SweepError(f"{template!r}: '${{' without a closing '}}'")
        out.append(template[i:j])
        expr = template[j + 2:k]
        try:
            v = _eval(ast.parse(expr.strip(), mode="eval"), env)
        except SyntaxError:
            raise SweepError(f"{template!r}: cannot read the expression {expr!r}")
        except SweepError as e:
            raise SweepError(f"{template!r}: {e}")
        except (ArithmeticError, TypeError, ValueError) as e:
            raise SweepError(f"{template!r}: {expr.strip()}: {e}")
        out.append(v if isinstance(v, str) else toml_value(v))
        i = k + 1


# ----------------------------------------------------------------------------- ranges

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUM})([A-Za-z/µ%]*)\s*:\s*({_NUM})([A-Za-z/µ%]*)\s*:\s*(?:(x|\*|log)\s*({_NUM})|({_NUM})([A-Za-z/µ%]*))\s*$")
#: the most values one range may give
MAX_RANGE = 10_000


def is_range(text: str) -> bool:
    """Whether ``text`` is written as a range (``START:STOP:STEP``, ``START:STOP:xF``, ``START:STOP:logN``)."""
    return bool(_RANGE.match(text))


def expand_range(text: str, key: str = "") -> list[str]:
    """The values of a range, as the texts ``--vary`` would be given:

    * ``START:STOP:STEP`` — ``START``, ``START + STEP``, … up to ``STOP`` included (when the steps
      reach it; a negative step counts down);
    * ``START:STOP:xF`` — ``START``, ``START × F``, … up to ``STOP`` (a geometric range, ``F > 1``,
      or ``0 < F < 1`` counting down);
    * ``START:STOP:logN`` — ``N`` values from ``START`` to ``STOP`` evenly spaced on a log scale
      (rounded to 6 significant digits).

    Values may carry a unit (``10ms:50ms:10ms``, ``0.25Mb/s:8Mb/s:x2``); ``START``, ``STOP`` and a
    step must then have the same one. Integers stay integers. Raises SweepError."""
    where = f"--vary {key + '=' if key else ''}{text.strip()}"
    m = _RANGE.match(text)
    if not m:
        raise SweepError(f"{where}: expected START:STOP:STEP, START:STOP:xFACTOR or START:STOP:logN")
    a, ua, b, ub, op, opv, step, us = m.groups()
    if ua != ub or (step is not None and us and us != ua):
        raise SweepError(f"{where}: give START, STOP and the step in one unit (got {ua or 'none'}, {ub or 'none'}"
                         + (f", {us or 'none'}" if step is not None else "") + ")")
    unit = ua
    ints = all(re.fullmatch(r"[-+]?\d+", t) for t in (a, b, step or opv or "0"))
    x0, x1 = float(a), float(b)
    if op in ("x", "*"):
        f = float(opv)
        if not (f > 0 and f != 1) or x0 <= 0 or x1 <= 0:
            raise SweepError(f"{where}: a geometric range needs START and STOP above 0 and a factor above 0, not 1")
        if (x1 - x0) * (f - 1) < 0:
            raise SweepError(f"{where}: a factor of {opv} never goes from {a} to {b}")
        n = int(math.floor(math.log(x1 / x0) / math.log(f) + 1e-9)) + 1
        vals = [x0 * f ** i for i in range(min(n, MAX_RANGE + 1))]
        ints = ints and float(opv).is_integer()
    elif op == "log":
        if not re.fullmatch(r"\d+", opv) or int(opv) < 2:
            raise SweepError(f"{where}: logN needs a whole number of values N of at least 2")
        n = int(opv)
        if x0 <= 0 or x1 <= 0:
            raise SweepError(f"{where}: a log range needs START and STOP above 0")
        vals = [float(f"{x0 * (x1 / x0) ** (i / (n - 1)):.6g}") for i in range(min(n, MAX_RANGE + 1))]
        ints = False
    else:
        d = float(step)
        if d == 0 or (x1 - x0) * d < 0:
            raise SweepError(f"{where}: a step of {step}{us} never goes from {a} to {b}")
        n = int(math.floor((x1 - x0) / d + 1e-9)) + 1
        vals = [x0 + i * d for i in range(min(n, MAX_RANGE + 1))]
    if len(vals) > MAX_RANGE:
        raise SweepError(f"{where}: more than {MAX_RANGE} values")
    if ints and all(float(v).is_integer() for v in vals):
        return [f"{int(round(v))}{unit}" for v in vals]
    return [f"{float(f'{v:.12g}'):.12g}{unit}" for v in vals]


def column_value(text: str):
    """The table value of a --vary value: a number, boolean or string as TOML reads it; a list or
    table stays the text written."""
    v = parse_value(text)
    return text.strip() if isinstance(v, (list, dict)) else v
