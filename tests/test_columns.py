"""What every column means (issue 40, item 3): ``aqmlab list metrics [PATTERN]`` prints each column's
definition and unit from ``python/aqmlab/run/columns.toml`` (installed with the package), the same
file docs/metrics.md's tables are made from; every column the engine and the runs table write is
defined there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import aqmlab
from aqmlab.run import columns
from aqmlab.run.metrics import _flatten, run_row
from conftest import EXAMPLES, ROOT, aqmlab as cli


def test_docs_metrics_md_tables_are_the_packaged_definitions():
    page = ROOT / "docs" / "metrics.md"
    differ = columns.update_docs(page, write=False)
    assert not differ, (f"docs/metrics.md's tables {differ} differ from python/aqmlab/run/columns.toml: edit the "
                        "TOML, then run `python -m aqmlab.run.columns --docs docs/metrics.md`; or, to keep what "
                        "the page says, `python -m aqmlab.run.columns --docs docs/metrics.md --adopt`")
    text = page.read_text(encoding="utf-8")
    # every table of the file is on the page, and the page has no hand-written copy of one
    for tid in columns.catalogue():
        assert text.count(columns.BEGIN.format(tid)) == 1, tid


def test_the_check_command_fails_on_a_page_that_disagrees(tmp_path):
    page = tmp_path / "m.md"
    page.write_text("x\n" + columns.BEGIN.format("fairness") + "\n| old | table |\n" + columns.END + "\n")
    assert columns.main(["--docs", str(page), "--check"]) == 1
    assert columns.main(["--docs", str(page)]) == 0 and columns.main(["--docs", str(page), "--check"]) == 0
    assert "`jain_throughput_all`" in page.read_text()


def test_the_definitions_are_package_data():
    # the installed package's own copy (the repository's file when installed editable, site-packages
    # when installed from a wheel, as CI does), and the same as the repository's
    installed = Path(aqmlab.__file__).resolve().parent / "run"
    assert columns.FILE.resolve().parent == installed and columns.FILE.is_file()
    assert columns.FILE.read_bytes() == (ROOT / "python" / "aqmlab" / "run" / columns.FILE.name).read_bytes()
    assert columns.FILE.name in (ROOT / "pyproject.toml").read_text(), "listed for the sdist in [tool.maturin] include"


def _covered(name: str, keys) -> bool:
    return any(columns._regex(k).fullmatch(name) for k in keys)


@pytest.mark.parametrize("example, overrides", [
    ("voip-latency.toml", ['simulation.duration="20s"', 'simulation.flow_series_interval="1s"',
                           "simulation.queue_snapshots=true"]),
    ("parking-lot.toml", ['simulation.duration="20s"']),
    ("traffic-mix.toml", []),
    ("chokew-diffserv.toml", ['simulation.duration="30s"', 'simulation.warmup="5s"']),
])
def test_every_column_the_engine_writes_is_defined(example, overrides):
    res = aqmlab.run(EXAMPLES / example, overrides=overrides)
    cat = columns.catalogue()
    keys = {t: [k for r in cat[t].rows for k in r.keys] for t in cat}
    for table, df in (("flows", res.flows), ("timeseries", res.timeseries), ("flow_series", res.flow_series),
                      ("latency", res.latency), ("queue_snapshots", res.snapshots)):
        if df is None:
            continue
        undefined = [c for c in df.columns if not _covered(c, keys[table] + (["aqm_<state>"] if table == "timeseries"
                                                                             else []))]
        assert not undefined, f"{example}: {table} columns not in columns.toml: {undefined}"
    s = res.summary
    for g in s["groups"]:
        flat: dict = {}
        _flatten("", g, flat)
        assert not [k for k in flat if not _covered(k, keys["groups"])], (example, flat.keys())
    for link in s["links"].values():
        flat = {}
        _flatten("", link, flat)
        assert not [k for k in flat if not _covered(k, keys["bottleneck"] + keys["links"])], (example, flat.keys())
    for k in s["fairness"]:
        assert _covered(k, keys["fairness"])
    # and every column of the runs table
    undefined = [k for k in run_row(res) if not columns.is_runs_column(k)]
    assert not undefined, f"{example}: runs columns not in columns.toml: {undefined}"


def test_list_metrics_prints_a_columns_definition_and_unit():
    r = cli("list", "metrics", "group.voip.loss")
    assert r.returncode == 0, r.stderr
    row = next(r for r in columns.catalogue()["groups"].rows if r.keys == ("loss",))
    assert "group.<name>.loss [fraction]" in r.stdout
    # the definition as the page gives it (wrapped, without Markdown)
    words = " ".join(r.stdout.split())
    assert " ".join(columns.plain(row.text).split())[:120] in words
    # only what was asked: the one column, not every table
    assert "flows table" not in r.stdout and "timeseries" not in r.stdout


@pytest.mark.parametrize("query, expect, absent", [
    ("loss", ["group.<name>.loss", "{all,tcp,udp,app.<app>,priority.<level>,variant.<v>}.loss"], ["utilisation"]),
    ("bottleneck.delay*", ["bottleneck.delay_mean_s", "bottleneck.delay_p50_s"], ["owd_p99"]),
    ("owd_p99_s", ["group.<name>.owd_p99_s", "  owd_p99_s [s, —]"], ["share"]),
    ("cwnd", ["cwnd [segments]"], ["loss"]),
    ("links.r1-r2.groups.udp.share", ["links.<link>.groups.<name>.share"], ["owd"]),
    ("starved", ["tcp.starved, group.<name>.starved"], ["loss"]),
])
def test_list_metrics_finds_columns_by_name_fragment_or_glob(query, expect, absent):
    r = cli("list", "metrics", query)
    assert r.returncode == 0, r.stderr
    for e in expect:
        assert e in r.stdout, (e, r.stdout)
    for a in absent:
        assert not re.search(rf"^\s+\S*{re.escape(a)}", r.stdout, re.M), (a, r.stdout)


def test_list_metrics_without_a_pattern_lists_every_table_and_an_unknown_one_is_an_error():
    r = cli("list", "metrics")
    assert r.returncode == 0
    for t in columns.catalogue().values():
        assert t.title in " ".join(r.stdout.split()), t.title
    bad = cli("list", "metrics", "qqqzzz")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "list metrics qqqzzz" in bad.stderr


def test_a_column_added_on_the_page_is_adopted_into_the_packaged_file(tmp_path, monkeypatch):
    """Whoever adds a column on docs/metrics.md instead of columns.toml runs --adopt; the file then has
    it, every other row unchanged, and the page agrees again."""
    toml = tmp_path / "columns.toml"
    toml.write_text(columns.FILE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(columns, "FILE", toml)
    columns.catalogue.cache_clear()
    try:
        before = columns.catalogue()
        page = tmp_path / "m.md"
        page.write_text((ROOT / "docs" / "metrics.md").read_text(encoding="utf-8").replace(
            "| `timeouts` | — | retransmission-timer expirations with data outstanding |",
            "| `timeouts` | — | retransmission-timer expirations with data outstanding |\n"
            "| `new_col_s` | s | a column someone added on the page |"), encoding="utf-8")
        assert columns.main(["--docs", str(page), "--check"]) == 1
        assert columns.main(["--docs", str(page), "--adopt"]) == 0
        after = columns.catalogue()
        new = [r for r in after["flows"].rows if r.keys == ("new_col_s",)]
        assert len(new) == 1 and new[0].unit == "s" and new[0].text == "a column someone added on the page"
        assert [r for r in after["flows"].rows if r.keys != ("new_col_s",)] == list(before["flows"].rows)
        assert {t: v for t, v in after.items() if t != "flows"} == {t: v for t, v in before.items() if t != "flows"}
        assert columns.main(["--docs", str(page), "--check"]) == 0
    finally:
        columns.catalogue.cache_clear()


def _units_of_runs_columns() -> dict:
    """{runs pattern: its unit} for every row of columns.toml whose unit is one for all its keys or
    one per key (``—, packets, packets, fraction``)."""
    out = {}
    for t in columns.catalogue().values():
        for row in t.rows:
            units = [u.strip() for u in row.unit.split(",")]
            pats = columns.runs_patterns(row)
            if len(units) == 1:
                out.update({p: units[0] for p in pats})
            elif len(units) == len(row.keys):
                for k, u in zip(row.keys, units):
                    out.update({p: u for p in pats if p == k or p.endswith("." + k)})
    return out


def test_one_convention_for_ratios_a_fraction_of_1_stored_and_a_percentage_printed(tmp_path):
    """docs/metrics.md, "Units and ratios": every ratio is stored as a fraction of 1, the one column in
    percent says so by its name (``_pct``), and what a person reads prints a fraction as a percentage;
    a Jain's index is printed as the number it is."""
    from aqmlab.analysis.stats import Interval
    from aqmlab.cli.output import fmt_cell

    units = _units_of_runs_columns()
    assert {p for p, u in units.items() if u == "%"} and all(p.endswith("_pct") for p, u in units.items() if u == "%")
    assert not [p for p, u in units.items() if p.endswith("_pct") and u != "%"]
    res = aqmlab.run(EXAMPLES / "voip-latency.toml", overrides=['simulation.duration="15s"',
                                                                "simulation.queue_snapshots=true"])
    row = run_row(res)
    checked = 0
    for col, v in row.items():
        unit = next((u for p, u in units.items() if columns._regex(p).fullmatch(col)), None)
        if not isinstance(v, (int, float)) or v != v:
            continue
        cell = fmt_cell(col, Interval(float(v), float(v), float(v), 1, "none"))
        if unit == "fraction":
            checked += 1
            # a utilisation can pass 1 slightly (docs/metrics.md, timeseries `utilisation`)
            assert -1e-12 <= v <= (1.05 if "utilisation" in col else 1 + 1e-12), (col, v)
            assert cell == f"{v * 100 + 0.0:.{len(cell.split('.')[1]) - 1}f}%", (col, v, cell)
        elif unit == "%":
            assert 0 <= v <= 100 and cell.endswith("%") and float(cell[:-1]) == pytest.approx(v, abs=0.05)
        elif "jain" in col:
            assert 0 < v <= 1 + 1e-12 and "%" not in cell and float(cell) == pytest.approx(v, abs=5e-4), (col, cell)
    assert checked >= 10, "the run has shares, losses and a utilisation"
    # aqmlab run prints a group's share and loss as the percentages of the summary's fractions
    r = cli("run", EXAMPLES / "voip-latency.toml", "--set", 'simulation.duration="15s"', "--out", tmp_path / "r")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = next(l for l in lines if l.startswith("group ")).split()
    assert head.index("share") < head.index("loss")
    for g in res.summary["groups"]:
        cells = next(l for l in lines if l.startswith(g["name"] + " ")).split()
        shown = [c for c in cells if c.endswith("%")]  # the share, then the loss: the row's only ratios
        assert [float(c[:-1]) for c in shown] == pytest.approx([g["share"] * 100, g["loss"] * 100], abs=0.05), cells
