"""The small languages of a sweep: value lists, values and override templates.

* ``--vary key=v1,v2,...``: :func:`split_top_level` splits at commas outside brackets, braces and
  quotes; each value is read as ``--set`` reads it (:func:`parse_value`: a TOML value, else the text
  itself); :func:`column_value` is what the results table shows for it.
* Python values become TOML text with :func:`toml_value` (inline tables for dicts).
* ``${expr}`` in an override (experiment files use them: ``flows[0].count=${N // 2}``) is replaced by
  :func:`expand`: an arithmetic expression over the values of the point's dimensions.

Mistakes raise :class:`~aqmlab.base.errors.SweepError`.
"""

from __future__ import annotations

import ast
import json
import math
import numbers
import operator
from typing import Mapping

from ..base.compat import tomllib
from ..base.errors import SweepError
from ..run.source import MAX_DEPTH


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
    """Python value -> TOML value text (inline tables for dicts)."""
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
                raise SweepError(f"{k!r}: a table's keys must be strings")
            key = k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)
            items.append(f"{key} = {toml_value(v)}")
        return "{ " + ", ".join(items) + " }"
    raise SweepError(f"cannot write {x!r} ({type(x).__name__}) as a scenario value")


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


def column_value(text: str):
    """The table value of a --vary value: a number, boolean or string as TOML reads it; a list or
    table stays the text written."""
    v = parse_value(text)
    return text.strip() if isinstance(v, (list, dict)) else v
