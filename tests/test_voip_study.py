"""Loss beside latency (issue 40, item 2): the study of issue 40 — 20 TCP flows against three UDP flows
on 10 Mb/s with a VoIP-like probe, under CHOKe, CHOKeW, AFD and FQ-CoDel — shows the call's loss in
``aqmlab run``, in the sweep's table and in the latency plot's notes, from the command line and
from a plain Python script, and every one of them agrees with the flows table it comes from."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from conftest import aqmlab as cli

STUDY = """
name = "voip-study"
description = "20 TCP flows and three 2 Mb/s UDP flows on 10 Mb/s, with a VoIP call (probe)"
[simulation]
duration = "25s"
warmup = "5s"
[bottleneck]
rate = "10Mb/s"
delay = "10ms"
limit = 300
aqm = { type = "choke", min_th = 50, max_th = 150 }
[[flows]]
name = "tcp"
transport = "tcp"
count = 20
[[flows]]
name = "udp"
transport = "udp"
count = 3
rate = "2Mb/s"
[[flows]]
name = "voip"
transport = "udp"
app = "probe"
"""
AQMS = ['{type="choke", min_th=50, max_th=150}', '{type="chokew"}', '{type="afd"}', '{type="fq_codel"}']


def flows_loss(flows: pd.DataFrame, group: str) -> float:
    """A group's loss from its flows' rows, as docs/metrics.md defines it."""
    f = flows[flows["group"] == group]
    lost = f["drops_total"].sum()
    return lost / (lost + f["delivered_pkts"].sum())


def pct(x: float) -> str:
    return f"{x * 100:.1f}%"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    d = tmp_path_factory.mktemp("voip")
    (d / "study.toml").write_text(STUDY)
    return d


def test_run_prints_the_calls_loss_beside_its_delay(study):
    out = study / "choke"
    r = cli("run", study / "study.toml", "--out", out)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    flows = pd.read_csv(out / "flows.csv")
    voip = next(g for g in s["groups"] if g["name"] == "voip")
    # the summary's loss is the fraction of the call's packets that never arrived
    assert math.isclose(voip["loss"], flows_loss(flows, "voip"))
    assert 0 < voip["loss"] < 1, "CHOKe drops some of the call's packets: the study's finding"
    for g in s["groups"]:
        assert math.isclose(g["loss"], flows_loss(flows, g["name"]))
    # the latency table has a loss column, and the call's row shows its loss next to its delays
    lines = r.stdout.splitlines()
    head = next(l for l in lines if l.startswith("latency "))
    assert head.split()[-1] == "loss"
    row = next(l for l in lines[lines.index(head):] if l.startswith("voip "))
    assert row.split()[-1] == pct(voip["loss"]) and " ms" in row
    # and every group's row of the main table has its loss
    ghead = next(l for l in lines if l.startswith("group "))
    col = ghead.split().index("loss")
    for g in s["groups"]:
        cells = next(l for l in lines if l.startswith(g["name"] + " ")).split()
        assert pct(g["loss"]) in cells, (g["name"], cells, col)


@pytest.fixture(scope="module")
def sweep_out(study):
    out = study / "sweep"
    r = cli("sweep", study / "study.toml", "--vary", "bottleneck.aqm=" + ",".join(AQMS), "--seeds", "2",
            "--no-cache", "--tables", "flows,latency", "--out", out)
    assert r.returncode == 0, r.stderr
    return out, r


def test_sweep_prints_the_calls_delay_and_loss_under_each_scheme(sweep_out):
    out, r = sweep_out
    runs = pd.read_csv(out / "runs.csv")
    flows = pd.read_csv(out / "flows.csv")
    lines = r.stdout.splitlines()
    head = lines[0]
    # a probe group gets its delay percentiles and its loss by default, as columns named in the legend
    assert "voip delay p50" in head and "voip p99" in head and "voip loss" in head
    assert "voip loss = group.voip.loss" in r.stdout
    assert "tqdm" not in r.stderr and "\r" not in r.stderr, "no progress frames when stderr is a pipe"
    for aqm, row_text in zip(AQMS, lines[2:2 + len(AQMS)]):
        sel = runs[runs["bottleneck.aqm"] == aqm]
        assert len(sel) == 2
        # each run's loss column is its flows' loss
        for _, run in sel.iterrows():
            mine = flows[flows["run"] == run["run"]]
            assert math.isclose(run["group.voip.loss"], flows_loss(mine, "voip"))
        m = sel["group.voip.loss"].mean()
        # two seeds: mean (lowest–highest), in percent
        lo, hi = sel["group.voip.loss"].min(), sel["group.voip.loss"].max()
        assert f"{pct(m)} ({pct(lo)}–{pct(hi)})" in row_text, row_text
        # delays in ms, with the unit on both numbers
        assert re.search(r"\d+\.\d ms \(\d+\.\d ms–\d+\.\d ms\)", row_text), row_text
    # FQ-CoDel protects the call, CHOKe does not: the point of the study, visible in the table
    loss = runs.groupby("bottleneck.aqm")["group.voip.loss"].mean()
    assert loss[AQMS[3]] < loss[AQMS[0]]


def test_latency_plot_notes_give_each_curves_loss(sweep_out, tmp_path):
    out, _ = sweep_out
    r = cli("plot", out, "--kind", "latency", "--where", "group=voip", "--out", tmp_path / "p")
    assert r.returncode == 0, r.stderr
    flows = pd.read_csv(out / "flows.csv")
    runs = pd.read_csv(out / "runs.csv")
    notes = [l.strip() for l in r.stdout.splitlines() if "one-way delay median" in l]
    assert len(notes) == len(AQMS), r.stdout
    for note in notes:
        # the curve's runs: the scheme its label names (a TOML table is shown by its type)
        kind = note.split(":")[0].split()[0]
        keys = runs[runs["bottleneck.aqm"].str.contains(f'type="{kind}"', regex=False)]["run"]
        mine = flows[flows["run"].isin(keys)]
        assert note.endswith(f"; loss {pct(flows_loss(mine, 'voip'))}."), note


def test_the_same_study_from_a_plain_python_script(study, tmp_path):
    script = textwrap.dedent(f"""
        import aqmlab
        from aqmlab.plot import plot
        schemes = [{{"type": "choke", "min_th": 50, "max_th": 150}}, {{"type": "chokew"}}, {{"type": "afd"}},
                   {{"type": "fq_codel"}}]
        df = aqmlab.sweep({str(study / 'study.toml')!r}, vary={{"bottleneck.aqm": schemes}}, seeds=1, cache=False)
        print("LOSS", dict(zip({AQMS!r}, df["group.voip.loss"])))
        res = aqmlab.run({str(study / 'study.toml')!r})
        print("RUN", [g["loss"] for g in res.summary["groups"] if g["name"] == "voip"][0])
        res.save({str(tmp_path / 'run')!r})
        o = plot([{str(tmp_path / 'run')!r}], kind="latency", out={str(tmp_path / 'fig')!r})
        print("NOTE", [n for n in o.notes if n.startswith("voip")][0])
    """)
    p = tmp_path / "study.py"
    p.write_text(script)
    r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    out = dict(l.split(" ", 1) for l in r.stdout.splitlines() if l[:4] in ("LOSS", "RUN ", "NOTE"))
    loss = eval(out["LOSS"])  # a dict printed by the script
    assert set(loss) == set(AQMS) and all(0 <= v < 1 for v in loss.values())
    assert loss[AQMS[3]] < loss[AQMS[0]]
    run_loss = float(out["RUN"])
    assert math.isclose(run_loss, loss[AQMS[0]])  # the scenario's own discipline is CHOKe: the same run
    assert out["NOTE"].endswith(f"; loss {pct(run_loss)}."), out["NOTE"]
