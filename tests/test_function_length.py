"""No function, Rust or Python, longer than a reader can follow: 150 lines at the most.

Python functions are measured with `ast` (from the `def` line, decorators excluded, to the last
line of the body); Rust `fn` items by matching the braces of their body (comments, strings, raw
strings and character literals stripped first), from the `fn` line to the closing brace.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 150

# a token the brace count must not see inside: comments, (byte, raw) strings, char literals
_RUST_SKIP = re.compile(
    r"""
      //[^\n]*
    | /\*(?:[^*]|\*(?!/))*\*/
    | b?r(?P<hashes>\#*)"(?:.|\n)*?"(?P=hashes)
    | b?"(?:\\.|[^"\\])*"
    | b?'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^'\\\n])'
    """,
    re.VERBOSE | re.DOTALL,
)
_FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def _blank(m: re.Match) -> str:
    # keep the newlines so that line numbers stay true
    return "".join("\n" if c == "\n" else " " for c in m.group(0))


def rust_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every `fn` with a body in `text`."""
    code = _RUST_SKIP.sub(_blank, text)
    out = []
    for m in _FN.finditer(code):
        # the signature ends at the first `{` (the body) or `;` (a declaration) outside brackets
        i, depth = m.end(), 0
        while i < len(code):
            c = code[i]
            if c in "(<[":
                depth += 1
            elif c in ")]" or (c == ">" and code[i - 1] != "-" and code[i - 1] != "="):
                depth -= 1
            elif depth <= 0 and c in "{;":
                break
            i += 1
        if i >= len(code) or code[i] == ";":
            continue
        braces, j = 0, i
        while j < len(code):
            if code[j] == "{":
                braces += 1
            elif code[j] == "}":
                braces -= 1
                if braces == 0:
                    break
            j += 1
        first = code.count("\n", 0, m.start()) + 1
        out.append((m.group(1), first, code.count("\n", 0, j) + 1))
    return out


def python_functions(text: str) -> list[tuple[str, int, int]]:
    tree = ast.parse(text)
    return [
        (n.name, n.lineno, n.end_lineno)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def _too_long(files, measure) -> list[str]:
    out = []
    for f in files:
        for name, a, b in measure(f.read_text(encoding="utf-8")):
            if b - a + 1 > LIMIT:
                out.append(f"{f.relative_to(ROOT)}:{a}: {name} is {b - a + 1} lines")
    return out


def test_rust_scanner_measures_bodies_not_strings():
    text = (
        'fn a<T: Fn() -> u8>(x: T) -> Vec<u8> where T: Copy {\n'
        '    let s = "}}} fn fake() {";\n'
        "    let c = '}'; let l: &'static str = r#\"{\"#;\n"
        "    // } a comment\n"
        "    if true { vec![] } else { vec![1] }\n"
        "}\n"
        "trait T { fn decl(&self); fn b(&self) {\n}\n}\n"
    )
    assert rust_functions(text) == [("a", 1, 6), ("b", 7, 8)]


@pytest.mark.parametrize("lines, fails", [(LIMIT, False), (LIMIT + 1, True)])
def test_checker_fails_on_a_long_function(tmp_path, lines, fails):
    rs = tmp_path / "long.rs"
    rs.write_text("fn long() {\n" + "    let _ = 1;\n" * (lines - 2) + "}\n")
    py = tmp_path / "long.py"
    py.write_text("def long():\n" + "    x = 1\n" * (lines - 1))
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert bool(_too_long([rs], rust_functions)) == fails
        assert bool(_too_long([py], python_functions)) == fails
    finally:
        ROOT = saved


def test_no_rust_function_over_150_lines():
    files = sorted(p for p in (ROOT / "crates").rglob("*.rs") if "target" not in p.parts)
    assert files
    assert _too_long(files, rust_functions) == []


def test_no_python_function_over_150_lines():
    files = sorted((ROOT / "python" / "aqmlab").rglob("*.py")) + sorted((ROOT / "tests").glob("*.py"))
    assert files
    assert _too_long(files, python_functions) == []
