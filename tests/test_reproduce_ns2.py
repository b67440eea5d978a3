"""The third column: ``aqmlab reproduce --ns2`` runs each run point ns-2.35 can express in ns-2.35
(cached under a key that names the engine), shows paper / ns-2.35 / aqmlab for every item resting on
those points, and arbitrates a miss by it (python/aqmlab/reproduce/crosscheck.py,
python/aqmlab/sweep/engines.py). The runs need ns-2.35: skipped without it locally, a failure on CI."""

import math

import pandas as pd
import pytest

from conftest import aqmlab as cli
from test_ns2 import needs_ns
from test_reproduce import TINY_EXPERIMENT, TINY_REFERENCE, TINY_SCENARIO

from aqmlab.reproduce.crosscheck import AGREES, DEFECT, arbitrate, nearer

# RED as ns-2.35's Queue/RED (the variant it can express); CHOKe has no ns-2.35 queue
EXPERIMENT = TINY_EXPERIMENT.replace('type = "red", min_th', 'type = "red", variant = "ns2", min_th')
REFERENCE = '''
[[reference]]
label = "UDP share, RED"
source = "[TEST] Fig. 1"
col = "udp.share"
where = { scheme = "RED", N = 4 }
value = 0.3
explain = "unexplained: the UDP flow takes {{udp.share}} of the link"

[[table]]
figure = "Table 1"
source = "[TEST] Table 1"
title = "Queue"
col = "bottleneck.queue_mean_pkts"
rows = { coord = "scheme", values = ["RED", "CHOKe"] }
columns = { coord = "N", values = [2] }
cells = [[20], [20]]
explain = "unexplained: the queue sits at {{bottleneck.queue_mean_pkts}}"
'''


def _study(tmp_path):
    d = tmp_path / "exps" / "tiny"
    d.mkdir(parents=True)
    (d / "scenario.toml").write_text(TINY_SCENARIO)
    (d / "experiment.toml").write_text(EXPERIMENT)
    (d / "reference.toml").write_text(REFERENCE)
    return tmp_path / "exps"


def _reproduce(tmp_path, exps, out):
    r = cli("reproduce", "tiny", "--quick", "--ns2", "--experiments", exps, "--out", out, "--cache",
            tmp_path / "cache", "-q")
    assert r.returncode == 0, r.stderr
    return (out / "report.md").read_text()


@needs_ns
def test_the_ns2_column_appears_for_a_tiny_experiment_with_a_red_variant(tmp_path):
    exps = _study(tmp_path)
    out = tmp_path / "out"
    report = _reproduce(tmp_path, exps, out)
    # RED's two points ran in ns-2.35 (2 seeds each), CHOKe's were refused with the translator's reason
    assert "ns-2.35 runs (`--ns2`): 4, of which 0 came from the cache" in report
    assert "**ns-2.35:** 2 of 4 run points" in report and "cannot express 'choke'" in report
    ours = pd.read_csv(out / "tiny" / "runs.csv")
    theirs = pd.read_csv(out / "tiny" / "ns2" / "runs.csv")
    assert set(theirs["scheme"]) == {"RED"} and len(theirs) == 4
    # one scenario, point and seed, two engines: two cache keys
    both = ours.merge(theirs, on=["scheme", "N", "seed"], suffixes=("", "_ns2"))
    assert len(both) == 4 and (both["run"] != both["run_ns2"]).all()

    ref = pd.read_csv(out / "tiny" / "reference.csv")
    red = ref[ref["label"] == "UDP share, RED"].iloc[0]
    share = theirs.loc[theirs["N"] == 4, "udp.share"].mean()
    assert math.isclose(red["ns-2.35 value"], share, rel_tol=1e-9)        # the number is ns-2.35's run
    assert red["ok"] == False and red["ns-2.35 ok"] == False               # noqa: E712 (pandas)
    # a UDP flow at twice the link rate takes nearly all of it under RED in both engines, not 0.3
    assert red["ns-2.35 agrees with aqmlab"] == True                       # noqa: E712
    assert red["reason"].startswith(f"{AGREES}: ns-2.35 {share:#.3g}"), red["reason"]
    assert "Before ns-2.35: unexplained: the UDP flow takes" in red["reason"]
    # a point ns-2.35 cannot express: the item says why, in the translator's one line (the key and why)
    choke = ref.loc[ref["label"] == "Table 1: CHOKe, 2", "ns-2.35"].iloc[0]
    assert choke == "not run: bottleneck.aqm.type: ns-2.35 cannot express 'choke'", choke
    # the table cell by cell: paper / ns-2.35 / ours where ns-2.35 ran the point
    q = theirs.loc[theirs["N"] == 2, "bottleneck.queue_mean_pkts"].mean()
    assert f"| RED | 20 / ns-2.35 {q:.4g} / " in report
    assert "| CHOKe | 20 / " in report and "| CHOKe | 20 / ns-2.35" not in report
    assert "* Not run in ns-2.35 (CHOKe, 2): bottleneck.aqm.type: ns-2.35 cannot express 'choke'." in report
    # the list of misses gives ns-2.35's number beside the paper's and ours
    assert f"published 0.3, ours {red['ours']}, ns-2.35 {red['ns-2.35']} — *{AGREES}*" in report
    assert "*ns-2.35 agrees with aqmlab* (before ns-2.35: " in report      # misses by reason kind
    assert "ns-2.35 beside aqmlab, point by point" in report               # the engine check

    again = _reproduce(tmp_path, exps, tmp_path / "out2")
    assert "ns-2.35 runs (`--ns2`): 4, of which 4 came from the cache" in again


@needs_ns
def test_an_experiment_ns2_cannot_express_at_all_says_why_item_by_item(tmp_path):
    """aqmlab's RED of the tiny experiment (variant fj93) and CHOKe: no point runs in ns-2.35, yet
    every item has its ns-2.35 cell, the refusal of the points it rests on."""
    d = tmp_path / "exps" / "tiny"
    d.mkdir(parents=True)
    (d / "scenario.toml").write_text(TINY_SCENARIO)
    (d / "experiment.toml").write_text(TINY_EXPERIMENT)
    (d / "reference.toml").write_text(TINY_REFERENCE)
    out = tmp_path / "out"
    report = _reproduce(tmp_path, tmp_path / "exps", out)
    assert "ns-2.35 runs (`--ns2`): 0, of which 0 came from the cache" in report
    assert not (out / "tiny" / "ns2").exists()
    ref = pd.read_csv(out / "tiny" / "reference.csv")
    assert ref["ns-2.35"].str.startswith("not run: bottleneck.aqm").all(), ref["ns-2.35"].tolist()
    red = ref.loc[ref["label"] == "UDP share, RED", "ns-2.35"].iloc[0]
    assert "RED variant" in red and "choke" not in red, red       # only the refusal of the item's own points
    assert "Items resting on points ns-2.35 cannot express" in (out / "scorecard.md").read_text()


def test_without_ns_the_ns2_option_is_one_line(tmp_path, monkeypatch):
    exps = _study(tmp_path)
    monkeypatch.setenv("AQMLAB_NS", str(tmp_path / "no-ns"))
    r = cli("reproduce", "tiny", "--quick", "--ns2", "--experiments", exps, "--out", tmp_path / "o", "--cache",
            tmp_path / "c", "-q")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "AQMLAB_NS=" in r.stderr, r.stderr


def _row(ok, ours=1.0):
    return {"ok": ok, "reason": "unexplained: why", "published": "0.3", "ours": f"{ours}", "ours_value": ours}


@pytest.mark.parametrize("aq, ns, ns_ok, with_aqmlab, kind", [
    (False, 0.95, False, True, AGREES),          # both far from the paper, together: the engines agree
    (False, 0.31, True, False, DEFECT),          # ns-2.35 reproduces the paper, we do not: a candidate defect
    (False, 0.60, False, False, "unexplained"),  # neither: the reason stays, with ns-2.35's number
    (True, 0.95, False, False, None),            # we match: nothing to arbitrate
])
def test_a_miss_is_arbitrated_by_what_ns2_measured(aq, ns, ns_ok, with_aqmlab, kind):
    row = _row(aq, 0.97 if aq is False else 0.3)
    e = {"ours": f"{ns}", "value": ns, "ok": ns_ok, "agreement": "", "with_aqmlab": with_aqmlab, "band": "±25 %"}
    arbitrate(row, "ns-2.35", e, "value")
    if kind is None:
        assert row["reason"] == "unexplained: why"
        return
    assert row["reason"].startswith(kind), row["reason"]
    assert f"ns-2.35 {ns}" in row["reason"] and row["reason_before"] == "unexplained: why"
    if kind == "unexplained":
        assert "agrees with neither" in row["reason"]


@pytest.mark.parametrize("entry, ours, theirs, who", [
    ({"value": 0.3}, 0.97, 0.60, "aqmlab"),      # x0.62 of ours, x2.0 of the paper's
    ({"value": 0.3}, 0.97, 0.40, "the paper"),   # x0.41 of ours, x1.33 of the paper's
    ({"value": 0.3}, 0.0, 0.40, None),           # a zero: no ratio to go by
    # a Jain index compared by its distance to 1: 0.90 is 0.10 away, against 0.02 (ours) and 0.40 (the paper)
    ({"value": 0.6, "complement": True, "col": "fairness.jain_throughput_tcp"}, 0.98, 0.90, "the paper"),
    ({"value": 0.6, "complement": True, "col": "fairness.jain_throughput_tcp"}, 0.98, 0.95, "aqmlab"),
])
def test_nearer_is_by_ratio_or_by_the_distance_to_a_bound(entry, ours, theirs, who):
    n = nearer(entry, ours, theirs)
    assert (n and n[0]) == who, n


def test_a_miss_ns2_agrees_with_neither_says_whose_number_is_nearer():
    row = _row(False, 0.0008)
    e = {"ours": "0.0185", "value": 0.0185, "ok": False, "agreement": "", "with_aqmlab": False, "band": "±25 %",
         "nearer": nearer({"value": 0.3}, 0.0008, 0.0185)}
    arbitrate(row, "ns-2.35", e, "value")
    assert "agrees with neither" in row["reason"] and "nearer the paper's by ratio" in row["reason"], row["reason"]
