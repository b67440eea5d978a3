"""`aqmlab reproduce` and the experiment definitions under experiments/."""

import re

import pandas as pd
import pytest

from conftest import ROOT
from conftest import aqmlab as cli

from aqmlab.reproduce import ExperimentError, list_experiments, load_experiment
from aqmlab.sweep import SweepError

EXPERIMENTS = ROOT / "experiments"
ERROR_LINE = re.compile(r"^error: [^\n]+$")

# the ids of the specification (spec README, experiments.md §4) and the two optional reconstructions
SPEC_IDS = """chokew-4.1-rcf chokew-4.1-goodput-vs-n chokew-4.2-weight-ratio chokew-4.3-three-levels
chokew-4.3-four-levels chokew-4.4-tcp-protection chokew-4.5-fairness chokew-4.6-vs-chokew-red
choke-model-udp-sweep choke-model-queue-trace choke-perfect choked-3.1-rear-choke choked-model1 choked-model2
choked-4.4-reno-vegas choked-4.5-rtt choked-4.7-web raqm-case1 raqm-case2 raqm-case3 raqm-case4
ward-3.2-per-flow ward-3.2-udp-compare ward-3.2-udp-rate-sweep ward-3.2-pareto-load ward-3.4-vegas-reno
ward-3.4-aqm-fairness ward-3.5-rtt ward-3.6-web""".split()
OPTIONAL_IDS = ["chokew-x-reno", "chokew-x-avg"]
# experiments of the papers that the specification's list does not have (issue 10)
NEW_IDS = ["choke-model-n-sweep", "ward-3.3-buffer", "ward-3.3-multi-udp", "choked-4.6-buffer"]
# experiments of aqmlab's own, beyond the papers
BEYOND_IDS = ["multihop-parking-lot", "fair-aqm-league", "l4s-coexistence", "bbr-vs-fair-aqm"]

TINY_SCENARIO = """
name = "tiny"
[simulation]
duration = "8s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 60
[[flows]]
name = "udp"
transport = "udp"
rate = "2Mb/s"
[[flows]]
name = "tcp"
transport = "tcp"
count = 4
"""

TINY_EXPERIMENT = """
id = "tiny"
paper = "TEST"
source = "Fig. 1, Table 1"
title = "A tiny experiment"
description = "RED vs CHOKe with one UDP flow and 2 or 4 TCP flows"

[runs]
seeds = 3
[[runs.variants]]
label = "RED"
set = ['bottleneck.aqm={ type = "red", min_th = 10, max_th = 30, w_q = 0.02 }']
[[runs.variants]]
label = "CHOKe"
set = ['bottleneck.aqm={ type = "choke", min_th = 10, max_th = 30, w_q = 0.02 }']
[[runs.axes]]
name = "N"
label = "number of TCP flows"
values = [2, 4, 6]
set = ["flows[1].count=${N}"]

[quick]
seeds = 2
set = ['simulation.duration="5s"']
axes = { N = [2, 4] }

[[figures]]
name = "fig1-udp-share"
title = "Fig. 1: UDP share"
kind = "xy"
x = "N"
y = "udp.share"

[[figures]]
name = "per-flow"
title = "Per-flow throughput"
kind = "flows_bar"
where = { N = 4 }

[[figures]]
name = "queue"
title = "Queue"
kind = "timeseries"
panels = "N"
y = { col = "queue_pkts", label = "queue", unit = "packets" }

[[tables]]
name = "table1"
title = "Table 1: summary"
rows = ["scheme"]
where = { N = 4 }
columns = [{ col = "tcp.goodput_bps", unit = "kb/s" }, "fairness.jain_throughput_all"]
"""

TINY_REFERENCE = """
[[reference]]
label = "UDP share, RED"
source = "a made-up value"
col = "udp.share"
where = { scheme = "RED", N = 4 }
value = 0.001   # deliberately wrong: the UDP flow takes most of the link

[[claim]]
text = "the UDP flow takes more than half of the link under RED"
source = "a made-up claim"
col = "udp.share"
where = { scheme = "RED" }
min = 0.5
"""


@pytest.fixture
def tiny(tmp_path):
    root = tmp_path / "exps"
    d = root / "tiny"
    d.mkdir(parents=True)
    (d / "scenario.toml").write_text(TINY_SCENARIO)
    (d / "experiment.toml").write_text(TINY_EXPERIMENT)
    (d / "reference.toml").write_text(TINY_REFERENCE)
    return root


def test_every_spec_experiment_is_listed_with_a_description():
    r = cli("list", "experiments", "--experiments", EXPERIMENTS)
    assert r.returncode == 0, r.stderr
    listed = {line.split()[0]: line.split(None, 1)[1] for line in r.stdout.splitlines()}
    assert set(listed) == set(SPEC_IDS + OPTIONAL_IDS + NEW_IDS + BEYOND_IDS)
    assert all(len(d) > 20 for d in listed.values())


def test_every_experiment_file_is_well_formed():
    exps = list_experiments(EXPERIMENTS)
    assert len(exps) == len(SPEC_IDS) + len(OPTIONAL_IDS) + len(NEW_IDS + BEYOND_IDS)
    for e in exps:
        assert e.figures or e.tables, e.id
        assert e.seeds == 5, e.id  # spec §1.2: 5 replications
        assert e.seeds_for(quick=True) <= 2, e.id


@pytest.mark.parametrize("exp_id", SPEC_IDS + OPTIONAL_IDS + NEW_IDS + BEYOND_IDS)
def test_every_experiment_validates(exp_id):
    """Every run point of the full and quick settings of every experiment is a valid scenario."""
    e = load_experiment(EXPERIMENTS / exp_id)
    for quick in (False, True):
        assert e.sweep(quick).tasks(), (exp_id, quick)


def test_reproduce_one_small_experiment(tiny, tmp_path):
    out = tmp_path / "out"
    r = cli("reproduce", "tiny", "--quick", "--experiments", tiny, "--out", out, "--cache", tmp_path / "cache")
    assert r.returncode == 0, r.stderr
    d = out / "tiny"
    for name in ["fig1-udp-share", "per-flow", "queue"]:
        assert (d / f"{name}.png").stat().st_size > 5000 and (d / f"{name}.svg").is_file(), name
    assert (d / "table1.csv").is_file() and (d / "table1.md").read_text().startswith("| scheme |")
    tex = (d / "table1.tex").read_text()  # LaTeX beside CSV and Markdown (booktabs)
    assert r"\toprule" in tex and r"\bottomrule" in tex and "scheme &" in tex and r"\caption{" in tex
    runs = pd.read_csv(d / "runs.csv")
    assert len(runs) == 2 * 2 * 2 and set(runs["scheme"]) == {"RED", "CHOKe"} and set(runs["N"]) == {2, 4}
    assert (d / "flows.parquet").is_file() and (d / "scenario.toml").is_file()
    report = (out / "report.md").read_text()
    assert "## tiny" in report and "![Fig. 1: UDP share](tiny/fig1-udp-share.png)" in report
    assert "| RED |" in report  # the table
    assert "UDP share, RED" in report and "a made-up value" in report  # the reference value
    # the scorecard opens the report: the wrong value is a miss without a reason, the claim holds
    card = report.split("## Scorecard", 1)[1].split("## Contents", 1)[0]
    assert "| [tiny](#tiny) | 0 / 1 | 1 / 1 | 1 |" in card, card
    assert "value \u201cUDP share, RED\u201d: published 0.001, ours 0.9" in card and "— *unexplained*" in card, card
    assert report.index("## Scorecard") < report.index("## Contents") < report.index("## tiny")
    summary = report.split("## Summary of the experiments", 1)[1].split("## tiny", 1)[0]
    row = next(l for l in summary.splitlines() if l.startswith("| [tiny](#tiny)"))
    # runs, how many came from the cache (none: it was empty), and the state, never "ok"
    assert [c.strip() for c in row.split("|")[3:6]] == ["8", "0", "ran"], row
    assert "Runs: 8, of which 0 came from the cache" in report
    assert "| ok |" not in summary
    assert "is highest at" in report  # the automatic comparison
    assert "Quick mode" in report and "simulation.duration=\"5s\"" in report  # the set-up as run
    html = (out / "report.html").read_text()
    assert "<img src='tiny/fig1-udp-share.png'" in html and "<table>" in html

    again = cli("reproduce", "tiny", "--quick", "--experiments", tiny, "--out", out, "--cache", tmp_path / "cache")
    assert again.returncode == 0 and "8 runs, all in the cache" in again.stderr
    report = (out / "report.md").read_text()  # the report says which results came from the cache
    assert "Runs: 8, of which 8 came from the cache" in report
    row = next(l for l in report.splitlines() if l.startswith("| [tiny](#tiny) | A tiny"))
    assert [c.strip() for c in row.split("|")[3:6]] == ["8", "8", "ran"], row


def test_reproduce_runs_the_full_settings_without_quick(tiny, tmp_path):
    out = tmp_path / "out"
    r = cli("reproduce", "tiny", "--experiments", tiny, "--out", out, "--no-cache", "-q")
    assert r.returncode == 0, r.stderr
    runs = pd.read_csv(out / "tiny" / "runs.csv")
    assert len(runs) == 2 * 3 * 3 and runs["bottleneck.utilisation"].notna().all()


@pytest.mark.parametrize("args, message", [
    (["nope"], "nope: unknown experiment"),
    ([], "give experiment ids or --all"),
    (["tiny", "--all"], "give experiment ids or --all, not both"),
    (["tiny", "--set", "flows[0].bogus=1"], "--set flows[0].bogus=1: unknown field"),
    (["tiny", "--jobs", "0"], "--jobs: must be a positive integer"),
])
def test_bad_reproduce_input_is_a_one_line_error(tiny, tmp_path, args, message):
    r = cli("reproduce", *args, "--experiments", tiny, "--out", tmp_path / "out", "--cache", tmp_path / "c")
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and ERROR_LINE.match(lines[0]) and message in lines[0], r.stderr


@pytest.mark.parametrize("edit, message", [
    (("kind = \"xy\"", "kind = \"pie\""), "figures[0].kind: 'pie'"),
    (("x = \"N\"", "x = \"M\"\nlogx = true"), ""),  # a metric x is allowed; caught when drawn (see below)
    (("axes = { N = [2, 4] }", "axes = { N = [2, 5] }"), "quick.axes.N: 5 is not one of the axis values"),
    (("seeds = 3", "seeds = 3\ncolour = 1"), "runs.colour: unknown key"),
    (("set = [\"flows[1].count=${N}\"]", "set = [\"flows[1].count=${M}\"]"), "unknown name 'M'"),
])
def test_bad_experiment_files_are_one_line_errors(tiny, tmp_path, edit, message):
    f = tiny / "tiny" / "experiment.toml"
    f.write_text(f.read_text().replace(*edit, 1))
    r = cli("reproduce", "tiny", "--quick", "--experiments", tiny, "--out", tmp_path / "out", "--cache",
            tmp_path / "c")
    if not message:
        assert r.returncode == 1 and "figure fig1-udp-share" in r.stderr  # reported, the rest is made
        assert (tmp_path / "out" / "tiny" / "table1.md").is_file()
        return
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and ERROR_LINE.match(lines[0]) and message in lines[0], r.stderr


def test_figures_of_per_flow_series(tiny, tmp_path):
    """The per-flow time series (flow_series, an engine feature of issue 3) feeds two figure kinds.
    Runs carrying a synthetic series are put in the cache, and reproduce draws from them."""
    import numpy as np

    import aqmlab
    from aqmlab.run import Source
    from aqmlab.sweep import Cache

    f = tiny / "tiny" / "experiment.toml"
    f.write_text(f.read_text() + """
[[figures]]
name = "udp-over-time"
title = "UDP throughput over time"
kind = "flow_timeseries"
flows = { transport = "udp" }
y = { col = "throughput_bps", label = "UDP throughput", unit = "kb/s" }

[[figures]]
name = "windowed-jain"
title = "Jain's index in 2 s windows"
kind = "windowed_jain"
window = 2
panels = "N"
sessions = { tcp = 3 }
""")
    exp = load_experiment(tiny / "tiny")
    cache = Cache(tmp_path / "cache")
    for t in exp.sweep(quick=True).tasks():
        res = aqmlab.run(Source(t.text, t.label, t.name), seed=t.seed, overrides=list(t.overrides))
        fl = res.flows
        times = np.arange(0.0, res.summary["scenario"]["duration_s"], 1.0)
        res.flow_series = pd.DataFrame([
            {"time_s": s, "flow_id": r.flow_id, "group": r.group, "throughput_bps": r.throughput_bps * (1 + 0.1 * np.sin(s)),
             "goodput_bps": r.goodput_bps, "cwnd": 1.0} for s in times for r in fl.itertuples()])
        cache.store(t.key, res, {})
    out = tmp_path / "out"
    r = cli("reproduce", "tiny", "--quick", "--experiments", tiny, "--out", out, "--cache", tmp_path / "cache")
    assert r.returncode == 0, r.stderr
    assert "all in the cache" in r.stderr
    for name in ["udp-over-time", "windowed-jain"]:
        assert (out / "tiny" / f"{name}.png").stat().st_size > 5000, name
    report = (out / "report.md").read_text()
    assert "time-average windowed Jain's index" in report and "time average of UDP throughput" in report


RED_FAMILY = re.compile(r'type = "(red|rio|choke|gchoke|choked|perfect_choke)"|red = \{')


@pytest.mark.parametrize("exp_id", SPEC_IDS + OPTIONAL_IDS + NEW_IDS)
def test_every_experiment_names_its_ns2_release_preset_and_red_variant(exp_id):
    """Each experiment runs the TCP preset of its paper's ns-2 release (in every scenario file) and
    ns-2's RED (`variant = "ns2"`) in every RED-based scheme it runs."""
    import tomllib

    e = load_experiment(EXPERIMENTS / exp_id)
    ns2 = e.raw["ns2"]
    assert ns2["tcp_preset"].startswith("ns2-") and ns2["release"] in ns2["tcp_preset"] or "/" in ns2["release"]
    assert len(ns2["why"]) > 40 and ns2["red"]
    for f in e.path.glob("*.toml"):
        if f.name in ("experiment.toml", "reference.toml"):
            continue
        sc = tomllib.loads(f.read_text())
        assert sc["tcp"]["preset"] == ns2["tcp_preset"], f
    texts = [f.read_text() for f in e.path.glob("*.toml") if f.name != "reference.toml"]
    for t in texts:
        for line in t.splitlines():
            if RED_FAMILY.search(line) and not line.lstrip().startswith("#"):
                assert 'variant = "ns2"' in line, (exp_id, line)


def test_the_new_experiments_run_quick_and_reach_the_report(tmp_path):
    """The experiments added for issue 10 run end to end (--quick) and appear in the report's
    scorecard and sections."""
    out = tmp_path / "out"
    r = cli("reproduce", *NEW_IDS, "--quick", "--experiments", EXPERIMENTS, "--out", out, "--cache",
            tmp_path / "cache", "-q")
    assert r.returncode == 0, r.stderr
    report = (out / "report.md").read_text()
    card = report.split("## Scorecard", 1)[1].split("## Experiments", 1)[0]
    for i in NEW_IDS:
        assert f"| [{i}](#" in card and f"## {i}" in report, i
        assert any((out / i).glob("*.png")) and (out / i / "runs.csv").is_file(), i
    assert "| ran |" in report


def test_setup_text_shows_scenario_values_not_python_reprs():
    """The report's set-up lines of every experiment write values as scenario files do (`true`,
    `{uniform = ["0s", "1s"]}`), never as Python (`False`, `{'uniform': ...}`)."""
    import re

    from aqmlab.reproduce import list_experiments
    from aqmlab.reproduce.runner import as_toml, setup_lines

    assert as_toml({"uniform": ["0s", "1s"]}) == '{uniform = ["0s", "1s"]}' and as_toml(False) == "false"
    seen_table = False
    for exp in list_experiments(EXPERIMENTS):
        sw = exp.sweep(quick=True)
        text = "\n".join(setup_lines(exp, sw, sw.tasks(validate=False), True, []))
        assert not re.search(r"\{'|\['|\bFalse\b|\bTrue\b|\bNone\b", text), (exp.id, text)
        seen_table |= "{uniform" in text or "{exponential" in text
    assert seen_table  # at least one experiment has a table-valued setting (start times)


def test_time_estimate_parts(monkeypatch):
    """The expected time: the cores the machine can spare (all of them idle, a fair share under
    load), and durations written in seconds or minutes."""
    import os

    from aqmlab.reproduce import runner

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert runner.effective_cores(2) == 2.0
    monkeypatch.setattr(os, "getloadavg", lambda: (5.0, 5.0, 5.0))
    assert runner.effective_cores(2) == pytest.approx(2 * 2 / (2 + 4.0))
    assert runner.fmt_duration(12) == "about 10 s" and runner.fmt_duration(150) == "about 2.5 min"
    assert runner.fmt_duration(3600) == "about 60 min"
