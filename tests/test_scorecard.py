"""The scorecard: published tables cell by cell beside ours, the papers' inventories, counts per paper
and per figure, and misses (python/aqmlab/reproduce/references.py, compare.py, papers.py, scorecard.py)."""

import re

import pytest

from conftest import ROOT
from conftest import aqmlab as cli
from test_reproduce import TINY_EXPERIMENT, TINY_SCENARIO

from aqmlab.reproduce import ExperimentError, list_experiments, load_experiment

EXPERIMENTS = ROOT / "experiments"

REFERENCE = """
[[reference]]
label = "UDP share, RED"
source = "[TEST] §1, Fig. 1"
figure = "Fig. 1"
line = 12
col = "udp.share"
where = { scheme = "RED", N = 4 }
value = 0.001   # deliberately wrong: the UDP flow takes most of the link

[[table]]
figure = "Table 1"
source = "[TEST] §2, Table 1"
line = 20
title = "UDP share"
where = { N = 4 }
rows = { coord = "scheme", values = ["RED", "CHOKe"] }
columns = [{ label = "UDP share", col = "udp.share", complement = true }, { label = "TCP goodput", col = "tcp.goodput_bps", unit = "kb/s" }]
cells = [[0.962, "–"], [0.000001, "–"]]   # RED's about right (the tiny run gives 0.962 [0.957, 0.966]), CHOKe's deliberately wrong
cell_explain = [["CHOKe", "UDP share", "measurement: a reason given for this cell"]]

[[claim]]
text = "the UDP flow takes more than half of the link under RED"
source = "[TEST] §1, Fig. 1"
figure = "Fig. 1"
line = 14
col = "udp.share"
where = { scheme = "RED" }
min = 0.5

[[claim]]
text = "under RED the UDP flow gets more than the TCP flows together"
source = "[TEST] §1, Fig. 1"
figure = "Fig. 1"
line = 15
kind = "order"
cols = ["udp.share", "tcp.share"]
labels = ["UDP", "TCP"]
where = { scheme = "RED" }
"""

INVENTORY = """
paper = "TEST"
[[item]]
id = "Fig. 1"
kind = "figure"
experiments = ["tiny"]
[[item]]
id = "Table 1"
kind = "table"
experiments = ["tiny"]
[[item]]
id = "Fig. 2"
kind = "figure"
simulation = false
why = "a flow chart"
[[item]]
id = "Fig. 3"
kind = "figure"
why = "the paper gives no set-up for it"
"""


@pytest.fixture
def study(tmp_path):
    root = tmp_path / "exps"
    d = root / "tiny"
    d.mkdir(parents=True)
    (d / "scenario.toml").write_text(TINY_SCENARIO)
    (d / "experiment.toml").write_text(TINY_EXPERIMENT.replace('paper = "TEST"', 'paper = "TEST"'))
    (d / "reference.toml").write_text(REFERENCE)
    (root / "papers").mkdir()
    (root / "papers" / "test.toml").write_text(INVENTORY)
    return root


def test_a_published_table_is_read_cell_by_cell(study):
    e = load_experiment(study / "tiny")
    cells = [r for r in e.references if r.get("table") is not None]
    assert len(cells) == 2 and len(e.ref_tables) == 1  # the strings are the paper's empty cells
    red = next(r for r in cells if r["where"]["scheme"] == "RED")
    assert red["where"] == {"N": 4, "scheme": "RED"} and red["col"] == "udp.share" and red["line"] == 20
    assert red["figure"] == "Table 1" and red["label"] == "Table 1: RED, UDP share"
    choke = next(r for r in cells if r["where"]["scheme"] == "CHOKe")
    assert choke["explain"].startswith("measurement")


def test_the_report_puts_each_paper_cell_beside_ours_and_counts_per_paper(study, tmp_path):
    out = tmp_path / "out"
    r = cli("reproduce", "tiny", "--quick", "--experiments", study, "--out", out, "--cache", tmp_path / "c", "-q")
    assert r.returncode == 0, r.stderr
    report = (out / "report.md").read_text()
    card = report.split("## Scorecard", 1)[1].split("## Contents", 1)[0]
    # per paper: the wrong single value and the wrong cell are misses, the right cell a match
    assert "| [TEST] | 1 | 1 / 3 | 2 / 2 | 5 | 2 of 3 with items recorded |" in card, card
    # per figure and table, in the paper's order, with why nothing is recorded
    assert re.search(r"\| \[TEST\] Fig\. 1 \| +\| \[tiny\]\(#tiny\) \| 0 / 1 \| 2 / 2 \|", card), card
    assert re.search(r"\| \[TEST\] Table 1 \| .*\| 1 / 2 \| none recorded \|", card), card
    assert "not a simulation result: a flow chart" in card
    assert re.search(r"\| \[TEST\] Fig\. 3 \| .*\| none recorded \| none recorded \| the paper gives no set-up", card)
    # every miss, with its reason kind and its one-line reason
    assert "value \u201cTable 1: CHOKe, UDP share\u201d: published 1e-06" in card and "*measurement*: a reason given" in card
    assert "value \u201cUDP share, RED\u201d" in card and "*unexplained*" in card
    assert (out / "scorecard.png").stat().st_size > 5000 and (out / "scorecard.md").is_file()
    # the experiment's section: the table as the paper prints it, each cell paper / ours (ratio)
    sect = report.split("## tiny", 1)[1]
    assert re.search(r"\| RED \| 0\.962 / 0\.9\d+ \(\d\.\d\d\) ✓ \| – \|", sect), sect
    assert re.search(r"\| CHOKe \| 1e-06 / 0\.\d+ \(\d+\.\d\d\) ✗ \| – \|", sect), sect
    assert "[TEST] §2, Table 1: UDP share (l. 20 of the paper's text)" in sect
    assert "1 of 2 cells matched" in sect


@pytest.mark.parametrize("edit, message", [
    (('cells = [[0.962, "–"], [0.000001, "–"]]', 'cells = [[0.962], [0.000001]]'), "table[0].cells: 2 rows of 2 cells"),
    (('columns = [{ label = "UDP share", col = "udp.share", complement = true }', 'col = "udp.share"\ncolumns = [{ label = "UDP share", col = "udp.share", complement = true }'),
     "table[0].cells[0][0]: col is given 2 times"),
    (('figure = "Table 1"', 'figure = "Table 9"'), "table[0].cells[0][0].figure: 'Table 9' is not a figure or table of [TEST]"),
    (('rows = { coord = "scheme", values = ["RED", "CHOKe"] }', 'rows = { coord = "scheme", values = ["RED", "CHOKe"] }\nstat = "max"'),
     "table[0].cells[0][0].at: a maximum or minimum needs the paper's point"),
    (('line = 12', 'line = "twelve"'), "reference[0].line: a line number"),
    (('labels = ["UDP", "TCP"]', 'labels = ["UDP"]'), "claim[1].labels: one label per column"),
])
def test_bad_reference_files_are_one_line_errors(study, tmp_path, edit, message):
    f = study / "tiny" / "reference.toml"
    assert edit[0] in f.read_text()
    f.write_text(f.read_text().replace(*edit, 1))
    r = cli("reproduce", "tiny", "--quick", "--experiments", study, "--out", tmp_path / "o", "--cache", tmp_path / "c")
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], r.stderr


def test_a_bad_inventory_is_a_one_line_error(study, tmp_path):
    f = study / "papers" / "test.toml"
    f.write_text(f.read_text().replace('why = "a flow chart"', ""))
    with pytest.raises(ExperimentError, match=r"test\.toml: item\[2\]\.why: say why nothing is recorded"):
        load_experiment(study / "tiny")


# ----------------------------------------------------------------------------- the packaged papers

def _inventories():
    from aqmlab.reproduce.papers import inventories

    return inventories(EXPERIMENTS)


def test_every_recorded_item_names_its_figure_and_line():
    for e in list_experiments(EXPERIMENTS):
        inv = _inventories().get(e.paper)
        if inv is None:
            continue
        for r in e.references + e.claims:
            assert r.get("figure") and r.get("line"), (e.id, r["loc"], r.get("label", r.get("text")))


def test_each_inventory_names_experiments_that_exist_and_reproduce_its_paper():
    exps = {e.id: e for e in list_experiments(EXPERIMENTS)}
    for tag, inv in _inventories().items():
        for it in inv.items:
            for x in it.experiments:
                assert x in exps and exps[x].paper == tag, (tag, it.id, x)


class _Runs:
    """Just what claims read of a reproduction: its runs table and coordinates."""

    def __init__(self, rows, coords):
        import pandas as pd

        self.runs, self.coords, self.quick = pd.DataFrame(rows), coords, False


@pytest.mark.parametrize("ys, lowest, holds", [
    ([0.1, 0.3, 0.2], False, True), ([0.1, 0.2, 0.3], False, False), ([0.3, 0.1, 0.2], False, False),
    ([0.3, 0.1, 0.2], True, True), ([0.1, 0.3, 0.05, 0.2], False, False),  # rises again after the peak
])
def test_a_peak_claim_needs_an_interior_extreme_and_no_reversal(ys, lowest, holds):
    from aqmlab.reproduce.compare import evaluate_claim

    ctx = _Runs([{"x": i, "seed": s, "udp.share": y} for i, y in enumerate(ys) for s in (1, 2)], ["x"])
    c = {"text": "rises, peaks, then drops", "kind": "peak", "along": "x", "col": "udp.share", "lowest": lowest}
    assert evaluate_claim(ctx, c)["ok"] is holds


def test_an_order_over_columns_compares_them_in_one_unit():
    from aqmlab.reproduce.compare import evaluate_claim

    # 220 kb/s against 29 kb/s, stored in b/s: each column's own default unit must not decide
    ctx = _Runs([{"seed": s, "udp.throughput_bps": 220e3, "tcp.throughput_max_per_flow_bps": 29e3} for s in (1, 2)], [])
    c = {"text": "the UDP flow gets more than any TCP flow", "kind": "order",
         "cols": ["udp.throughput_bps", "tcp.throughput_max_per_flow_bps"]}
    assert evaluate_claim(ctx, c)["ok"] is True
    assert evaluate_claim(ctx, dict(c, unit="kb/s"))["ok"] is True


def test_best_at_the_same_x_reads_each_curve_where_they_overlap():
    from aqmlab.reproduce.compare import evaluate_claim

    # A reaches a given queue with more goodput than B, although at each q0 B's goodput is higher
    rows = []
    for q0, (qa, ga), (qb, gb) in [(20, (10, 0.90), (30, 0.95)), (50, (30, 0.96), (60, 0.97)),
                                   (90, (60, 0.99), (90, 0.98))]:
        for s in (1, 2):
            rows += [{"scheme": "A", "q0": q0, "seed": s, "bottleneck.queue_mean_pkts": qa, "normalised_goodput": ga},
                     {"scheme": "B", "q0": q0, "seed": s, "bottleneck.queue_mean_pkts": qb, "normalised_goodput": gb}]
    ctx = _Runs(rows, ["scheme", "q0"])
    c = {"text": "at the same average queue A has the higher goodput", "kind": "best", "of": "scheme", "is": "A",
         "col": "normalised_goodput", "x": "bottleneck.queue_mean_pkts", "along": "q0"}
    assert evaluate_claim(ctx, c)["ok"] is True
    assert evaluate_claim(ctx, dict(c, x=None) | {"x": "bottleneck.queue_mean_pkts", "is": "B"})["ok"] is False
    plain = {k: v for k, v in c.items() if k not in ("x", "along")}
    assert evaluate_claim(ctx, plain)["ok"] is False  # at the same q0, B is higher


def test_every_experiment_of_a_paper_is_in_its_inventory():
    """An experiment reproduces a figure or table of its paper, or is listed as one that does not."""
    invs = _inventories()
    for e in list_experiments(EXPERIMENTS):
        inv = invs.get(e.paper)
        if inv is None:
            continue
        named = {x for it in inv.items for x in it.experiments} | {x for x, _ in inv.extra}
        assert e.id in named, (e.paper, e.id)
    for inv in invs.values():
        exps = {e.id for e in list_experiments(EXPERIMENTS)}
        assert all(x in exps for x, _ in inv.extra), inv.extra


@pytest.mark.parametrize("kind, holds", [("best", False), ("worst", False)])
def test_a_tie_is_neither_highest_nor_lowest(kind, holds):
    from aqmlab.reproduce.compare import evaluate_claim

    ctx = _Runs([{"scheme": s, "seed": k, "tcp.zero_goodput": 0.0} for s in ("RIO", "CHOKeW") for k in (1, 2)],
                ["scheme"])
    c = {"text": "starvation is rarer under CHOKeW", "kind": kind, "of": "scheme", "is": "CHOKeW",
         "col": "tcp.zero_goodput"}
    assert evaluate_claim(ctx, c)["ok"] is holds
    order = {"text": "RIO starves more than CHOKeW", "kind": "order", "of": "scheme", "order": ["RIO", "CHOKeW"],
             "col": "tcp.zero_goodput"}
    r = evaluate_claim(ctx, order)
    assert r["ok"] is False and ("RIO = CHOKeW" in r["agreement"] or "CHOKeW = RIO" in r["agreement"]), r


def test_the_papers_are_covered():
    """At least 380 published values and claims are recorded over the five papers, and every
    simulation figure and table has items or says why it has none."""
    exps = list_experiments(EXPERIMENTS)
    per_paper: dict = {}
    for e in exps:
        per_paper[e.paper] = per_paper.get(e.paper, 0) + len(e.references) + len(e.claims)
    assert sum(per_paper[p] for p in ("CHOKeW", "TWL", "CHOKeD", "RAQM", "WARD")) >= 380, per_paper
    assert all(per_paper[p] >= 20 for p in ("CHOKeW", "TWL", "CHOKeD", "RAQM", "WARD")), per_paper
    invs = _inventories()
    assert set(invs) == {"CHOKeW", "TWL", "CHOKeD", "RAQM", "WARD"}
    for tag, inv in invs.items():
        named = {f for e in exps if e.paper == tag for r in e.references + e.claims for f in
                 ([r["figure"]] if isinstance(r.get("figure"), str) else r.get("figure", []))}
        for it in inv.items:
            if it.simulation and it.experiments:
                assert it.id in named or it.values, (tag, it.id, "no item and no note on why")
