"""LaTeX tables in the booktabs style (``\\toprule``, ``\\midrule``, ``\\bottomrule``; no vertical
rules), written beside each table's CSV and Markdown so that it can be ``\\input`` into a paper."""

from __future__ import annotations

import re

#: characters LaTeX reads as commands, and text symbols with no plain-text form in LaTeX
_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "±": r"$\pm$", "×": r"$\times$",
            "–": "--", "—": "---", "≥": r"$\geq$", "≤": r"$\leq$", "µ": r"$\mu$", "μ": r"$\mu$", "·": r"$\cdot$",
            "→": r"$\rightarrow$", "Σ": r"$\Sigma$", "ρ": r"$\rho$", "≈": r"$\approx$", "…": r"\ldots{}",
            "<": r"\textless{}", ">": r"\textgreater{}"}
_PATTERN = re.compile("|".join(re.escape(k) for k in _ESCAPES))


def tex_escape(text) -> str:
    """``text`` as LaTeX reads it literally: ``_``, ``%``, ``&`` … escaped, ``±`` and ``–`` written
    as LaTeX writes them."""
    return _PATTERN.sub(lambda m: _ESCAPES[m.group(0)], str(text))


def _numeric(cell: str) -> bool:
    return bool(re.match(r"^[-+]?(\d|\.\d)", cell.strip())) or cell.strip() in ("-", "")


def tex_table(headers: list[str], rows: list[list[str]], caption: str = "", label: str = "") -> str:
    """A booktabs ``table`` environment: a column whose cells are all numbers (with their units,
    intervals) is right-aligned, any other left-aligned; ``caption`` and ``label`` (``tab:<label>``)
    when given. Needs ``\\usepackage{booktabs}`` in the document."""
    n = len(headers)
    align = "".join("r" if rows and all(_numeric(str(r[j])) for r in rows) else "l" for j in range(n))
    line = lambda cells: " & ".join(tex_escape(c) for c in cells) + r" \\"
    out = ["% made by aqmlab; needs \\usepackage{booktabs}", r"\begin{table}[tbp]", r"\centering"]
    if caption:
        out.append(r"\caption{" + tex_escape(caption) + "}")
    if label:
        out.append(r"\label{tab:" + re.sub(r"[^\w:-]+", "-", label) + "}")
    out += [r"\begin{tabular}{" + align + "}", r"\toprule", line(headers), r"\midrule"]
    out += [line([str(c) for c in r]) for r in rows]
    out += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(out) + "\n"


__all__ = ["tex_table", "tex_escape"]
