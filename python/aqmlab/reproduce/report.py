"""The reproduction report: ``report.md`` and ``report.html`` built from the same blocks.

Nothing in the report is typed in by hand: the set-up is generated from the experiment and scenario
files, the figures, tables and comparison sentences from the runs, and the published values come
from the experiments' ``reference.toml``.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

# a block is (kind, payload): ("h1"|"h2"|"h3"|"p", text), ("ul", [text]), ("table", markdown),
# ("img", (relative path, alt text)), ("pre", text), ("anchor", id: a link target), ("top", heading:
# a link back to that heading)


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading (lower case, punctuation other than '-' and '_' removed,
    spaces as '-'); report.html uses the same ids."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _inline_html(text: str) -> str:
    t = html.escape(text, quote=False)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", t)
    t = re.sub(r"(?<![*\w])\*([^*]+)\*(?![*\w])", r"<em>\1</em>", t)
    t = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', t)
    return t


def _split_row(line: str) -> list[str]:
    cells, cur, i = [], [], 0
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if s[i] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(s[i])
        i += 1
    cells.append("".join(cur).strip())
    return cells


def _table_html(md: str) -> str:
    lines = [l for l in md.splitlines()]
    out, pre = [], []
    tab = [l for l in lines if l.strip().startswith("|")]
    for l in lines:
        if l.strip().startswith("|"):
            break
        if l.strip():
            pre.append(f"<p>{_inline_html(l)}</p>")
    if len(tab) < 2:
        return "".join(pre)
    head = _split_row(tab[0])
    out.append("<table><thead><tr>" + "".join(f"<th>{_inline_html(h)}</th>" for h in head) + "</tr></thead><tbody>")
    for l in tab[2:]:
        out.append("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in _split_row(l)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(pre) + "\n".join(out)


def to_markdown(blocks: list) -> str:
    out = []
    for kind, x in blocks:
        if kind in ("h1", "h2", "h3"):
            out.append("#" * int(kind[1]) + " " + x)
        elif kind == "p":
            out.append(x)
        elif kind == "ul":
            out.append("\n".join(f"* {i}" for i in x))
        elif kind == "table":
            out.append(x)
        elif kind == "img":
            out.append(f"![{x[1]}]({x[0]})")
        elif kind == "pre":
            out.append("```\n" + x + "\n```")
        elif kind == "anchor":
            out.append(f'<a id="{x}"></a>')
        elif kind == "top":
            out.append(f"[↑ {x}](#{anchor(x)})")
    return "\n\n".join(out) + "\n"


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 3px 7px; text-align: left; }
th { background: #eee; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
code { background: #f3f3f3; padding: 0 3px; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; }
h2 { border-top: 2px solid #ccc; padding-top: 0.8em; margin-top: 2em; }
figure { margin: 0.5em 0; }
figure img { max-width: min(100%, 760px); }
p.top { font-size: 0.85em; text-align: right; margin: 0; }
"""


def to_html(blocks: list, title: str) -> str:
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{_CSS}</style></head><body>"]
    for kind, x in blocks:
        if kind in ("h1", "h2", "h3"):
            out.append(f"<{kind} id='{anchor(x)}'>{_inline_html(x)}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{_inline_html(x)}</p>")
        elif kind == "ul":
            out.append("<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in x) + "</ul>")
        elif kind == "table":
            out.append(_table_html(x))
        elif kind == "img":
            out.append(f"<figure><img src='{html.escape(x[0])}' alt='{html.escape(x[1])}'></figure>")
        elif kind == "pre":
            out.append(f"<pre>{html.escape(x)}</pre>")
        elif kind == "anchor":
            out.append(f"<a id='{html.escape(x)}'></a>")
        elif kind == "top":
            out.append(f"<p class='top'><a href='#{anchor(x)}'>↑ {html.escape(x)}</a></p>")
    out.append("</body></html>")
    return "\n".join(out)


def write(blocks: list, out: Path, title: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    md, ht = out / "report.md", out / "report.html"
    md.write_text(to_markdown(blocks), encoding="utf-8")
    ht.write_text(to_html(blocks, title), encoding="utf-8")
    return [md, ht]
