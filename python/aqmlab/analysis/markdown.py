"""Markdown tables, as the report, the experiment tables and the comparisons write them."""

from __future__ import annotations


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table (``|`` in a cell escaped as ``\\|``)."""
    def esc(s):
        return str(s).replace("|", "\\|")

    out = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


__all__ = ["md_table"]
