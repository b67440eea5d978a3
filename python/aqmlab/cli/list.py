"""``aqmlab list aqm|tcp|traffic|experiments|metrics [NAME] [--describe]``: what is available, one
queue discipline's parameters (``aqmlab list aqm choke``), and what every output column means
(``aqmlab list metrics loss``)."""

from __future__ import annotations

import textwrap

from .. import _core
from ..base.errors import ExperimentError, UserError
from ..base.errors import did_you_mean as suggest


def add_parser(sub) -> None:
    ls = sub.add_parser("list", help="list available AQMs, TCP variants or traffic models; one AQM's parameters; "
                                     "what each output column means",
                        description="List what is available. `aqmlab list aqm NAME` prints one queue discipline's "
                                    "parameters with their units, defaults and meaning, and its reference. `aqmlab "
                                    "list metrics [PATTERN]` prints the definition and unit of every column of the "
                                    "results (the runs table of a sweep, the flows table, ...) whose name matches "
                                    "PATTERN: a column (group.voip.loss), a fragment (loss) or a glob ('*delay*').")
    ls.add_argument("kind", choices=["aqm", "tcp", "traffic", "experiments", "metrics", "examples"])
    ls.add_argument("name", nargs="?", metavar="NAME", help="aqm: one discipline's parameters (e.g. choke); "
                                                            "metrics: a column, a fragment or a glob; examples: "
                                                            "one example's text (to copy and edit)")
    ls.add_argument("-d", "--describe", action="store_true", help="add a one-line description")
    ls.add_argument("--experiments", metavar="DIR", help="experiment definitions (default: ./experiments)")
    ls.set_defaults(fn=cmd_list)


def cmd_list(a) -> int:
    if a.kind == "metrics":
        print(describe_metrics(a.name))
        return 0
    if a.kind == "examples":
        from ..base.errors import ScenarioError
        from ..run.source import example, examples

        if a.name is not None:  # its text, to start a scenario of one's own from
            try:
                print(example(a.name).read_text(encoding="utf-8"), end="")
            except ScenarioError as e:
                raise UserError(f"list examples {a.name}: {str(e).split(': ', 1)[1]}")
            return 0
        ex = examples()
        w = max(len(n) for n, _ in ex)
        for n, d in ex:
            print(f"{n:<{w}}  {d}")
        print(f"\n(`aqmlab run --example NAME` runs one from any folder; `aqmlab list examples NAME > my.toml` copies "
              f"it; they are in {ex and example(ex[0][0]).parent})")
        return 0
    if a.kind == "experiments":
        from ..reproduce import list_experiments

        try:
            exps = list_experiments(a.experiments)
        except ExperimentError as e:
            raise UserError(str(e))
        if not exps:
            from ..reproduce import experiments_dir

            raise UserError(f"{experiments_dir(a.experiments)}: no experiments found (give --experiments DIR)")
        if a.name is not None:
            exps = [e for e in exps if e.id == a.name]
            if not exps:
                raise UserError(f"list experiments {a.name}: no such experiment"
                                + suggest(a.name, [e.id for e in list_experiments(a.experiments)]))
        w = max(len(e.id) for e in exps)
        for e in exps:
            print(f"{e.id:<{w}}  {e.description}" + (f"  [{e.paper}: {e.source}]" if a.describe else ""))
        return 0
    if a.name is not None:
        if a.kind != "aqm":
            names = [n for n, _ in _core.names(a.kind)]
            raise UserError(f"list {a.kind} {a.name}: parameters are listed for queue disciplines only "
                            f"(`aqmlab list {a.kind} -d` describes the {a.kind} names: {', '.join(names)})")
        print(describe_aqm(a.name))
        return 0
    for name, desc in _core.names(a.kind):
        print(f"{name:<12} {desc}" if a.describe else name)
    if a.kind == "tcp":  # then the presets (`tcp.preset`): with -d their values and sources
        for name, desc in _core.tcp_presets(a.describe):
            print(f"{name:<12} {desc}" if a.describe else name)
    if a.kind == "aqm" and a.describe:
        print("\n(`aqmlab list aqm NAME` lists a discipline's parameters, units, defaults and reference)")
    return 0


def describe_aqm(name: str, width: int = 100) -> str:
    """The text `aqmlab list aqm NAME` prints; a UserError with a suggestion for an unknown name."""
    d = _core.aqm_describe(name)
    if d is None:
        known = [n for n, _ in _core.names("aqm")]
        raise UserError(f"list aqm {name}: unknown queue discipline{suggest(name, known)} (known: {', '.join(known)})")
    summary, reference, params = d
    lines = [f"{name}: {summary}"]
    if reference:
        lines += textwrap.wrap(f"Reference: {reference}", width, subsequent_indent="  ")
    lines.append("")
    if not params:
        lines.append("no parameters (the buffer is the link's `limit`)")
        return "\n".join(lines)
    lines.append(f'parameters (aqm = {{ type = "{name}", ... }}; "required" must be given; a default is written as a '
                 'scenario file takes it, or as the rule that sets it from the buffer or another parameter '
                 '("limit × 100/500"); "(unset)": absent unless given):')
    rows = [(p, unit or "", "required" if default is None else "(unset)" if default == "none" else default)
            for p, _, unit, default, _, _ in params]
    w_name = max(len(r[0]) for r in rows)
    w_unit = max(4, max(len(r[1]) for r in rows))
    w_def = max(7, max(len(r[2]) for r in rows))
    head = f"  {'key':<{w_name}}  {'unit':<{w_unit}}  {'default':<{w_def}}  meaning"
    lines += [head, "  " + "-" * (len(head) - 2)]
    indent = " " * (2 + w_name + 2 + w_unit + 2 + w_def + 2)
    for (key, alias, unit, default, doc, choices), (_, u, dflt) in zip(params, rows):
        text = doc + (f" (also read as {alias})" if alias else "")
        if choices:
            text += " One of: " + "; ".join(f"{c}" + (f" ({m.rstrip('.')})" if m else "") for c, m in choices) + "."
        wrapped = textwrap.wrap(text, max(30, width - len(indent))) or [""]
        lines.append(f"  {key:<{w_name}}  {u:<{w_unit}}  {dflt:<{w_def}}  {wrapped[0]}")
        lines += [indent + t for t in wrapped[1:]]
    lines.append("")
    lines.append('Durations take a unit ("5ms", "1.5s"); docs/aqm/ has a page per discipline.')
    return "\n".join(lines)


def describe_metrics(pattern: str | None = None, width: int = 100) -> str:
    """The text `aqmlab list metrics [PATTERN]` prints: per table, each matching column (runs-table
    columns as patterns: ``group.<name>.loss``), its unit and its definition (from
    :mod:`aqmlab.run.columns`, the source of docs/metrics.md's tables). A UserError when nothing matches."""
    from ..run.columns import catalogue, compact, plain, search

    found = search(pattern)
    if not found:
        names = sorted({k for t in catalogue().values() for r in t.rows for k in r.keys})
        raise UserError(f"list metrics {pattern}: no column is named like that, and no definition mentions it"
                        + suggest(pattern.rsplit(".", 1)[-1], names)
                        + " (`aqmlab list metrics` lists them all; docs/metrics.md)")
    lines = []
    for t, rows in found:
        runs = f"; in a sweep's runs table as {', '.join(p + '<key>' for p in t.runs)}" if t.runs else ""
        lines += ["" if lines else None]
        lines += textwrap.wrap(f"{t.title} ({plain(t.where)}{runs}):", width, subsequent_indent="  ")
        for row, names in rows:
            shown = compact(names) if names else plain(row.name)
            unit = f"[{row.unit}]" if row.unit and row.unit != "—" else ""
            lines += textwrap.wrap(f"{shown} {unit}".rstrip(), width, initial_indent="  ", subsequent_indent="    ")
            lines += textwrap.wrap(plain(row.text), width, initial_indent="      ", subsequent_indent="      ")
    lines += [""] + textwrap.wrap("Units: bit/s, s, packets, bytes as the names say (_bps, _s, _pkts, _bytes); a "
                                  "fraction is of 1 (printed tables show it in %); docs/metrics.md has these tables "
                                  "and the rest.", width)
    return "\n".join(l for l in lines if l is not None)
