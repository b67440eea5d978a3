"""What every column means: the definitions and units of aqmlab's tables and summary keys, read from
``columns.toml`` beside this module (installed with the package).

``aqmlab list metrics [PATTERN]`` prints them (:func:`search`), and the tables of docs/metrics.md are
made from them: ``python -m aqmlab.run.columns --docs docs/metrics.md`` rewrites every table between
``<!-- columns: NAME -->`` and ``<!-- /columns -->`` (``--check`` only says whether one differs;
tests/test_columns.py runs it), so the page and the command cannot disagree.

Each table of the file lists keys as the page writes them (``group.<name>.<k>`` patterns for the
runs table of a sweep come from a table's ``runs`` prefixes: the summary's ``groups`` keys are the
runs columns ``group.<name>.<key>``, its ``bottleneck`` keys ``bottleneck.<key>`` and
``links.<link>.<key>``, the aggregates ``all.<key>``, ``tcp.<key>``, ...). :func:`runs_patterns`
lists every runs column so; :func:`matches` says whether a name (``group.voip.loss``) or a fragment
(``loss``, ``delay*``) is one of them.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FILE = Path(__file__).with_name("columns.toml")
#: where a generated table starts and ends in a Markdown page
BEGIN, END = "<!-- columns: {} (made from python/aqmlab/run/columns.toml: edit there) -->", "<!-- /columns -->"


@dataclass(frozen=True)
class Row:
    table: str
    name: str  # Markdown: the key(s) in backticks
    unit: str
    text: str  # Markdown
    keys: tuple  # the plain keys the row defines


@dataclass(frozen=True)
class Table:
    id: str
    title: str
    where: str
    head: tuple
    runs: tuple  # prefixes in the runs table ("" for none)
    labels: tuple  # text keys, not in the runs table
    rows: tuple


def _keys(name: str, also) -> tuple:
    """The keys a row's ``name`` writes in backticks, and those its ``also`` adds (what a range
    ``a`` … ``b`` stands for); a key that only names the keys below it (``groups.<name>``) is left
    out when ``also`` lists them."""
    spans = re.findall(r"`([^`]+)`", name)
    also = list(also or ())
    spans = [k for k in spans if not any(a.startswith(k + ".") for a in also)]
    return tuple(dict.fromkeys(spans + also))


@lru_cache(maxsize=1)
def catalogue() -> dict:
    """Every table of ``columns.toml``, in file order: ``{id: Table}``."""
    from ..base.compat import tomllib

    data = tomllib.loads(FILE.read_text(encoding="utf-8"))
    out = {}
    for tid, t in data.items():
        rows = tuple(Row(tid, r["name"], r.get("unit", ""), r["text"], _keys(r["name"], r.get("also")))
                     for r in t["rows"])
        out[tid] = Table(tid, t["title"], t["where"], tuple(t["head"]), tuple(t.get("runs", ())),
                         tuple(t.get("labels", ())), rows)
    return out


def markdown(table: Table) -> str:
    """The table as docs/metrics.md shows it (a unit column when its ``head`` has three)."""
    cells = lambda r: [r.name, r.unit, r.text] if len(table.head) == 3 else [r.name, r.text]
    lines = ["| " + " | ".join(table.head) + " |", "|" + "---|" * len(table.head)]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in table.rows]
    return "\n".join(lines)


def plain(md: str) -> str:
    """Markdown as plain text: links by their text, code without backticks, no emphasis."""
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", md)
    return text.replace("`", "").replace("**", "").replace("\\|", "|")


def runs_patterns(row: Row) -> list[str]:
    """The runs-table columns a row defines (patterns such as ``group.<name>.loss``); none for the
    tables and keys the runs table does not carry."""
    t = catalogue()[row.table]
    if row.table == "runs":
        return list(row.keys)
    if not t.runs:
        return []
    keys = [k for k in row.keys if k.split(".")[0] not in t.labels]
    own = {k for r in catalogue()["groups"].rows for k in r.keys}
    out = []
    for prefix in t.runs:
        for k in keys:
            if row.table == "aggregates" and prefix == "group.<name>." and k in own:
                continue  # (the summary's group key is that column)
            out.append(prefix + k)
    return out


def _regex(pattern: str) -> re.Pattern:
    """A runs pattern as a regular expression: ``<name>`` (any placeholder) one or more characters
    but a dot."""
    parts = re.split(r"(<[^>]+>)", pattern)
    return re.compile("".join("[^.]+" if p.startswith("<") else re.escape(p) for p in parts))


def matches(query: str, names) -> list[str]:
    """The names among ``names`` (keys or runs patterns) that ``query`` selects: a concrete column
    (``group.voip.loss`` selects ``group.<name>.loss``), a glob (``*delay*``), or a fragment of the
    name (``loss``, case-insensitive)."""
    q = query.strip()
    glob = any(c in q for c in "*?[")
    out = []
    for n in names:
        concrete = re.sub(r"<[^>]+>", "", n).strip(".")  # (a pattern that is only a placeholder names nothing)
        if (concrete and _regex(n).fullmatch(q)) or (glob and fnmatch.fnmatchcase(n, q)) \
                or (not glob and q.lower() in n.lower()):
            out.append(n)
    return out


def is_runs_column(name: str) -> bool:
    """Whether ``name`` can be a column of a runs table (a concrete name, ``group.voip.loss``)."""
    return any(_regex(p).fullmatch(name) for t in catalogue().values() for r in t.rows for p in runs_patterns(r))


def nearest(query: str, n: int = 3) -> list[str]:
    """The runs columns closest to ``query`` (a misspelt column: ``group.voip.los`` ->
    ``group.voip.loss``), each pattern's placeholders filled with the query's own parts."""
    import difflib

    parts = query.split(".")
    filled = []
    for t in catalogue().values():
        for r in t.rows:
            for p in runs_patterns(r):
                segs = re.split(r"\.(?![^<]*>)", p)
                if len(segs) == len(parts):
                    filled.append(".".join(q if s.startswith("<") else s for s, q in zip(segs, parts)))
                elif "<" not in p:
                    filled.append(p)
    return difflib.get_close_matches(query, list(dict.fromkeys(filled)), n=n, cutoff=0.6)


def search(query: str | None = None) -> list[tuple[Table, list]]:
    """The tables and their rows that ``query`` selects (every row without one), as ``[(table,
    [(row, names shown)])]``: for the runs table the row's runs patterns, else its keys. A query no
    name matches is looked for in the definitions."""
    def select(by_text: bool):
        out = []
        for t in catalogue().values():
            hits = []
            for r in t.rows:
                names = runs_patterns(r) if (t.runs or t.id == "runs") else list(r.keys)
                if query is None:
                    hits.append((r, names))
                    continue
                chosen = matches(query, names) or matches(query, r.keys)
                if chosen:
                    hits.append((r, chosen if set(chosen) <= set(names) else names))
                elif by_text and query.lower() in plain(r.text).lower():
                    hits.append((r, names))
            if hits:
                out.append((t, hits))
        return out

    return select(False) or (select(True) if query else [])


def compact(names: list[str]) -> str:
    """Runs patterns of one key under several prefixes as one: ``{all,tcp,udp}.loss``."""
    if len(names) < 3:
        return ", ".join(names)
    tails = {n.rsplit(".", 1)[-1] for n in names}
    if len(tails) == 1:
        heads = [n[: -len(next(iter(tails))) - 1] for n in names]
        return "{" + ",".join(heads) + "}." + next(iter(tails))
    return ", ".join(names)


def update_docs(path, write: bool = True) -> list[str]:
    """Rewrite the generated tables of the Markdown page ``path``; returns the names of the tables
    that differed (and were rewritten, with ``write``). A marker naming no table is an error."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    cat = catalogue()
    changed = []

    def repl(m):
        tid = m.group(1)
        if tid not in cat:
            raise ValueError(f"{p}: <!-- columns: {tid} -->: no such table in {FILE.name}; one of: {', '.join(cat)}")
        body = "\n" + markdown(cat[tid]) + "\n"
        if m.group(2) != body:
            changed.append(tid)
        return BEGIN.format(tid) + body + END

    start = re.escape(BEGIN).replace(r"\{\}", r"(\w+)")
    new = re.sub(start + r"(.*?)" + re.escape(END), repl, text, flags=re.S)
    if write and new != text:
        p.write_text(new, encoding="utf-8")
    return changed


def _page_rows(text: str) -> dict:
    """The rows of every generated table of a page, as the page has them: ``{table: [(name, unit,
    text)]}`` (unit ``""`` for a table without a unit column)."""
    start = re.escape(BEGIN).replace(r"\{\}", r"(\w+)")
    out = {}
    for m in re.finditer(start + r"(.*?)" + re.escape(END), text, flags=re.S):
        rows = []
        for line in m.group(2).strip().splitlines()[2:]:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            rows.append((cells[0], cells[1], cells[2]) if len(cells) == 3 else (cells[0], "", cells[1]))
        out[m.group(1)] = rows
    return out


def _toml_str(v: str) -> str:
    q = "'" * 3
    return f"{q}{v}{q}" if ("'" in v or "\\" in v) else f"'{v}'"


def dump(cat: dict) -> str:
    """The catalogue as ``columns.toml`` writes it (after the file's opening comment)."""
    lines = [FILE.read_text(encoding="utf-8").split("\n[", 1)[0].rstrip()]
    for t in cat.values():
        lines += ["", f"[{t.id}]", f"title = {_toml_str(t.title)}", f"where = {_toml_str(t.where)}",
                  "head = [" + ", ".join(f'"{h}"' for h in t.head) + "]"]
        if t.runs:
            lines.append("runs = [" + ", ".join(f'"{p}"' for p in t.runs) + "]")
        if t.labels:
            lines.append("labels = [" + ", ".join(f'"{p}"' for p in t.labels) + "]")
        for r in t.rows:
            lines += ["", f"[[{t.id}.rows]]", f"name = {_toml_str(r.name)}"]
            if r.keys != _keys(r.name, None):
                lines.append("also = [" + ", ".join(f'"{k}"' for k in r.keys if k not in
                                                      re.findall(r"`([^`]+)`", r.name)) + "]")
            lines += [f"unit = {_toml_str(r.unit)}", f"text = {_toml_str(r.text)}"]
    return "\n".join(lines) + "\n"


def adopt(path) -> list[str]:
    """Take into ``columns.toml`` the rows of the page ``path``'s generated tables where someone
    edited the page instead (a column added, a definition changed); returns the tables that changed."""
    page = _page_rows(Path(path).read_text(encoding="utf-8"))
    cat = dict(catalogue())
    changed = []
    for tid, rows in page.items():
        t = cat.get(tid)
        if t is None:
            continue
        old = {r.name: r for r in t.rows}
        new = []
        for name, unit, text in rows:
            prev = old.get(name)
            new.append(Row(tid, name, unit if len(t.head) == 3 else (prev.unit if prev else ""), text,
                           prev.keys if prev else _keys(name, None)))
        if tuple(new) != t.rows:
            cat[tid] = Table(t.id, t.title, t.where, t.head, t.runs, t.labels, tuple(new))
            changed.append(tid)
    if changed:
        FILE.write_text(dump(cat), encoding="utf-8")
        catalogue.cache_clear()
    return changed


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m aqmlab.run.columns",
                                 description="Write the column tables of a Markdown page from columns.toml.")
    ap.add_argument("--docs", required=True, metavar="PAGE", help="e.g. docs/metrics.md")
    ap.add_argument("--check", action="store_true", help="only say which tables differ (exit 1 if any)")
    ap.add_argument("--adopt", action="store_true", help="the other way: take the page's edited rows into "
                                                          "columns.toml (a column added on the page)")
    a = ap.parse_args(argv)
    if a.adopt:
        for t in adopt(a.docs):
            print(f"{FILE.name}: table {t} taken from {a.docs}")
        return 0
    changed = update_docs(a.docs, write=not a.check)
    for t in changed:
        print(f"{a.docs}: table {t} {'differs from' if a.check else 'written from'} {FILE.name}")
    return 1 if changed and a.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
