"""The frictions of a researcher's first study (issue 40, item 5), each with a test: figures and
tables that number flows alike, take a sweep's DataFrame, draw per-flow series, rename categories
holding '=' and warn about a label that renames nothing; examples that run outside the checkout;
the TCP-against-Linux cases from an installed package; no progress frames in a log; no -0 or Jain
index of nothing; delays in ms; LaTeX tables; the emulator's limits in one command, with the load."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import aqmlab
from aqmlab.analysis.latex import tex_escape, tex_table
from aqmlab.base.units import fmt_delay, fmt_pct, fmt_rate, fmt_seconds
from aqmlab.plot import plot
from conftest import EXAMPLES, ROOT, SMALL, aqmlab as cli

PACKAGE = ROOT / "python" / "aqmlab"
#: the package as imported: the repository's python/aqmlab when installed editable, site-packages when
#: installed from a wheel (as CI does); its data files are copies of the repository's
INSTALLED = Path(aqmlab.__file__).resolve().parent

#: BBR against CUBIC, with each flow's series every 200 ms
SERIES = ["--set", 'simulation.flow_series_interval="200ms"', "--set", 'simulation.duration="12s"',
          "--set", 'simulation.warmup="2s"']


@pytest.fixture(scope="module")
def series_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("series")
    r = cli("run", ROOT / "tests" / "data" / "bbr-cubic.toml", *SERIES, "--out", d / "run", "-q")
    assert r.returncode == 0, r.stderr
    return d


# ----------------------------------------------------------------------------- figures


def test_per_flow_series_plot_draws_each_flows_cwnd(series_run, tmp_path):
    r = cli("plot", series_run / "run", "--kind", "flow_series", "--out", tmp_path, "--where", "transport=tcp")
    assert r.returncode == 0, r.stderr
    data = pd.read_csv(tmp_path / "flow_series-cwnd.csv")
    fs = pd.read_csv(series_run / "run" / "flow_series.csv")
    tcp = fs[fs["transport"] == "tcp"]
    # one line per TCP flow, named by its flow_id and group, with its own cwnd samples
    assert sorted(data["series"].unique()) == [f"flow_id {i} ({g})" for i, g in
                                               sorted(tcp.groupby("flow_id")["group"].first().items())]
    f0 = data[data["series"] == "flow_id 0 (bbr)"]
    mine = tcp[tcp["flow_id"] == 0]
    assert list(f0["y"]) == pytest.approx(list(mine["cwnd"]))
    assert "congestion window (segments)" in set(data["metric"])
    for y, unit in (("srtt_s", "ms"), ("pacing_rate_bps", "Mb/s")):
        r = cli("plot", series_run / "run", "--kind", "flow_series", "--y", y, "--where", "group=bbr",
                "--out", tmp_path)
        assert r.returncode == 0, r.stderr
        assert f"{unit}." in r.stdout.splitlines()[1]


def test_per_flow_series_needs_the_series_and_a_readable_number_of_flows(tmp_path, small):
    run = tmp_path / "run"
    assert cli("run", small, "--out", run, "-q").returncode == 0
    r = cli("plot", run, "--kind", "flow_series", "--out", tmp_path / "p")
    assert r.returncode == 2 and "flow_series_interval" in r.stderr and r.stderr.count("\n") == 1
    many = tmp_path / "many.toml"
    many.write_text(SMALL.replace("count = 4", "count = 14").replace('warmup = "2s"',
                                                                      'warmup = "2s"\nflow_series_interval = "1s"'))
    assert cli("run", many, "--out", tmp_path / "m", "-q").returncode == 0
    r = cli("plot", tmp_path / "m", "--kind", "flow_series", "--out", tmp_path / "p")
    assert r.returncode == 2 and "15 flows" in r.stderr and "--where flow_id=" in r.stderr


def test_flows_are_numbered_by_flow_id_in_figures_data_and_notes(series_run, tmp_path):
    r = cli("plot", series_run / "run", "--kind", "flows", "--out", tmp_path)
    assert r.returncode == 0, r.stderr
    data = pd.read_csv(tmp_path / "flows-throughput.csv")
    flows = pd.read_csv(series_run / "run" / "flows.csv")
    x = [c for c in data.columns if c not in ("panel", "series", "metric", "y", "lo", "hi", "n")][0]
    assert sorted(data[x].astype(int)) == sorted(flows["flow_id"])  # 0, 1, ..., as flows.csv numbers them
    top = flows.loc[flows["throughput_bps"].idxmax()]
    assert f"flow_id {int(top['flow_id'])} ({top['transport']})" in r.stdout


def test_plot_takes_the_dataframe_aqmlab_sweep_returns_and_a_sweep_result(tmp_path):
    s = tmp_path / "s.toml"
    s.write_text(SMALL)
    df = aqmlab.sweep(s, vary={"flows[1].rate": ["250kb/s", "1Mb/s"]}, seeds=2, cache=tmp_path / "c")
    o = plot(df, y="udp.share", out=tmp_path / "p")
    data = pd.read_csv(next(p for p in o.files if p.suffix == ".csv"))
    assert len(data) == 2 and data["y"].tolist() == pytest.approx(df.groupby("flows[1].rate", sort=False)["udp.share"]
                                                                  .mean().tolist())
    from aqmlab.sweep import Sweep

    res = Sweep(s, ["flows[1].rate=250kb/s,1Mb/s"], 1).run(cache=tmp_path / "c")
    o = plot(res, kind="cdf", out=tmp_path / "p")  # a per-flow figure: the SweepResult's tables
    assert any(p.suffix == ".png" for p in o.files)
    with pytest.raises(aqmlab.base.errors.PlotError, match="no seed column"):
        plot(df.drop(columns=["seed"]), y="udp.share", out=tmp_path / "p")


def test_label_renames_a_category_holding_an_equals_sign_and_warns_about_one_that_matches_nothing(tmp_path):
    s = tmp_path / "s.toml"
    s.write_text(SMALL)
    out = tmp_path / "sw"
    r = cli("sweep", s, "--vary", 'bottleneck.aqm={type="red", min_th=10, max_th=30},{type="red", min_th=5, max_th=30}',
            "--no-cache", "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    # the two disciplines are shown as "red (min_th=10)" and "red (min_th=5)"
    r = cli("plot", out, "--kind", "bar", "--y", "udp.share", "--out", tmp_path / "p",
            "--label", "red (min_th=10)=RED 10", "--label", "red (min_th=5)=RED 5", "--label", "choke=CHOKe")
    assert r.returncode == 0, r.stderr
    data = pd.read_csv(tmp_path / "p" / "bar-udp.share.csv")
    shown = set(data.iloc[:, list(data.columns).index("y") - 1].astype(str)) | set(data["series"].astype(str))
    assert {"RED 10", "RED 5"} <= shown, data
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: --label choke=CHOKe: 'choke' is no series")
    # from Python: a warning too
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        plot([out], kind="bar", y="udp.share", out=tmp_path / "p", labels={"nope": "x"})
    assert any("'nope' is no series" in str(x.message) for x in w)


# ----------------------------------------------------------------------------- examples and packaged data


def test_the_examples_are_package_data_and_run_from_any_folder(tmp_path):
    assert (ROOT / "examples").resolve() == (PACKAGE / "examples").resolve()
    assert aqmlab.example("voip-latency") == INSTALLED / "examples" / "voip-latency.toml"
    assert aqmlab.example("voip-latency").read_bytes() == (PACKAGE / "examples" / "voip-latency.toml").read_bytes()
    assert {n for n, _ in aqmlab.examples()} == {p.stem for p in EXAMPLES.glob("*.toml")}
    r = cli("run", "--example", "dumbbell-red", "--set", 'simulation.duration="20s"', cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert any(p.name.startswith("dumbbell-red") for p in (tmp_path / "results").iterdir())
    listed = cli("list", "examples", cwd=tmp_path)
    assert listed.returncode == 0 and "voip-latency" in listed.stdout and "--example NAME" in listed.stdout
    text = cli("list", "examples", "voip-latency", cwd=tmp_path)
    assert text.stdout == aqmlab.example("voip-latency").read_text()
    bad = cli("run", "--example", "voip-latncy", cwd=tmp_path)
    assert bad.returncode == 2 and 'did you mean "voip-latency"?' in bad.stderr
    both = cli("validate", EXAMPLES / "red-ecn.toml", "--example", "red-ecn")
    assert both.returncode == 2 and "not both" in both.stderr
    none = cli("run")
    assert none.returncode == 2 and "--example NAME" in none.stderr
    sw = cli("sweep", "--example", "red-ecn", "--vary", "flows[0].count=2,4", "--set", 'simulation.duration="30s"',
             "--no-cache", "--out", tmp_path / "sw", "-q", cwd=tmp_path)
    assert sw.returncode == 0, sw.stderr


def test_packaged_data_is_listed_for_the_source_distribution():
    include = (ROOT / "pyproject.toml").read_text()
    for path in ("python/aqmlab/examples/*", "python/aqmlab/examples/tcp-vs-linux/*.toml", "python/aqmlab/run/columns.toml"):
        assert f'"{path}"' in include, path


def test_the_tcp_against_linux_cases_are_found_from_any_folder(tmp_path):
    from aqmlab.emulate import vslinux

    assert vslinux.HERE.parent == INSTALLED / "examples"
    assert {p.name for p in vslinux.HERE.glob("*.toml")} == {p.name for p in (PACKAGE / "examples" / "tcp-vs-linux").glob("*.toml")}
    for case in vslinux.CASES:
        assert vslinux.scenario_path(case).is_file(), case
    r = subprocess.run([sys.executable, "-m", "aqmlab.emulate.vslinux", "--sim-only", "--cases", "reno",
                        "--seeds", "1", "--duration", "4", "--interval", "100ms", "--out", "out"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "table.md").is_file() and (tmp_path / "out" / "reno" / "sim-s1" / "summary.json").is_file()


# ----------------------------------------------------------------------------- printed forms


def test_no_progress_frames_when_stderr_is_not_a_terminal(tmp_path, small):
    from aqmlab.base.io import progress_bar

    with open(os.devnull, "w") as devnull:
        old = sys.stderr
        sys.stderr = devnull
        try:
            assert progress_bar(total=3).disable is True          # a file: no bar
            assert progress_bar(total=3, always=True).disable is False  # asked for from the API
        finally:
            sys.stderr = old
    r = cli("sweep", small, "--vary", "flows[0].count=1,2,3", "--no-cache", "--out", tmp_path / "o", "--jobs", "2")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    # every tqdm bar of the package is drawn through progress_bar or only on a terminal
    for f in PACKAGE.rglob("*.py"):
        text = f.read_text(encoding="utf-8")
        if "tqdm(" in text and f.name != "io.py":
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tqdm":
                    before = "\n".join(text.splitlines()[max(0, node.lineno - 8):node.lineno])
                    assert "isatty" in before, f"{f.relative_to(ROOT)}:{node.lineno}: tqdm on a file (use progress_bar)"


EMPTY = """
name = "empty"
[simulation]
duration = "10s"
warmup = "2s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 50
[[flows]]
name = "tcp"
transport = "tcp"
count = 2
[[flows]]
name = "late"
transport = "tcp"
app = "short"
arrival_rate = 1.0
size = { exponential = "10KB" }
start = "50s"
[[flows]]
name = "silent"
transport = "udp"
rate = "100kb/s"
start = "20s"
"""


def test_empty_groups_print_zero_and_jain_of_nothing_is_undefined(tmp_path):
    s = tmp_path / "e.toml"
    s.write_text(EMPTY)
    r = cli("run", s, "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "-0" not in r.stdout
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    g = {x["name"]: x for x in summary["groups"]}
    assert g["late"]["flows"] == 0 and math.copysign(1, g["late"]["throughput_bps"]) == 1.0  # 0.0, not -0.0
    assert g["silent"]["flows"] == 1 and g["silent"]["jain_throughput"] is None  # every flow 0: undefined
    late = next(l for l in r.stdout.splitlines() if l.startswith("late "))
    assert "0 b/s" in late and "0.0%" in late and late.split()[-1] == "-"
    silent = next(l for l in r.stdout.splitlines() if l.startswith("silent "))
    assert silent.split()[-1] == "-" and "undefined for silent" in r.stdout
    assert aqmlab.base.metrics.jain([0.0, 0.0]) != aqmlab.base.metrics.jain([0.0, 0.0])  # NaN
    assert fmt_rate(-0.0) == "0 b/s" and fmt_pct(-0.0) == "0.0%"


def test_delays_are_printed_in_ms_whatever_their_size(tmp_path):
    assert fmt_delay(1.2045) == "1204.5 ms" and fmt_delay(4.2e-5) == "0.042 ms" and fmt_delay(0.0537) == "53.7 ms"
    assert fmt_seconds("delay_p99_s", 2.0) == "2000.0 ms" and fmt_seconds("duration_s", 2.0) == "2.00 s"
    assert fmt_pct(0.00042) == "0.042%" and fmt_pct(0.094) == "9.4%"
    # aqmlab run (a queue of over a second) and aqmlab diff
    a, b = tmp_path / "a", tmp_path / "b"
    slow = ["--set", "bottleneck.limit=400", "--set", 'simulation.duration="40s"']
    assert cli("run", EXAMPLES / "dumbbell-red.toml", *slow, "--out", a, "-q").returncode == 0
    r = cli("run", EXAMPLES / "dumbbell-red.toml", *slow, "--set", "bottleneck.aqm.max_th=300", "--out", b)
    assert r.returncode == 0, r.stderr
    head = next(l for l in r.stdout.splitlines() if l.startswith("bottleneck: "))
    delay = head.split("queueing delay mean ")[1]
    assert delay.count(" ms") == 2 and " s " not in delay + " ", head
    d = cli("diff", a, b)
    assert d.returncode == 0
    row = next(l for l in d.stdout.splitlines() if "delay_mean_s" in l)
    assert row.count(" ms") == 3 and " s " not in row.replace("delay_mean_s", ""), row  # A, B and the change


# ----------------------------------------------------------------------------- LaTeX tables


def test_latex_tables_are_booktabs_with_escapes():
    t = tex_table(["scheme", "UDP share", "delay"], [["fq_codel", "13.6% ± 0.3%", "53.0 ms (52.9 ms–53.1 ms)"]],
                  caption="shares & 50% of it", label="x y")
    assert t.count(r"\toprule") == t.count(r"\midrule") == t.count(r"\bottomrule") == 1 and "|" not in t
    assert r"\begin{tabular}{lrr}" in t and r"fq\_codel & 13.6\% $\pm$ 0.3\% & 53.0 ms (52.9 ms--53.1 ms) \\" in t
    assert r"\caption{shares \& 50\% of it}" in t and r"\label{tab:x-y}" in t
    assert tex_escape("a_b{c}~^\\") == r"a\_b\{c\}\textasciitilde{}\textasciicircum{}\textbackslash{}"


def test_a_sweep_writes_its_table_as_csv_markdown_and_latex(tmp_path, small):
    out = tmp_path / "o"
    r = cli("sweep", small, "--vary", "flows[0].count=2,4", "--seeds", "2", "--no-cache", "--out", out)
    assert r.returncode == 0, r.stderr
    tex = (out / "table.tex").read_text()
    md = (out / "table.md").read_text()
    csv = pd.read_csv(out / "table.csv")
    assert r"\toprule" in tex and "flows[0].count" in md.splitlines()[0] and len(csv) == 2
    # the same cells in the printed table, the Markdown and (escaped) the LaTeX
    first = r.stdout.splitlines()[2]
    cell = first.split("  ")[-1].strip()
    assert cell in md and tex_escape(cell) in tex
    runs = pd.read_csv(out / "runs.csv")
    assert csv["udp.share"].tolist() == pytest.approx(runs.groupby("flows[0].count")["udp.share"].mean().tolist())


# ----------------------------------------------------------------------------- the emulator's limits


def test_the_limits_are_one_command_that_states_the_load(tmp_path):
    out = tmp_path / "limits.md"
    r = subprocess.run([sys.executable, "-m", "aqmlab.emulate.limits", "--core-only", "--packets", "20000",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    first = text.splitlines()[0]
    assert first.startswith("machine: ") and "load average" in first and "(uptime)" in first
    load = float(first.split("load average ")[1].split(",")[0])
    assert ("BUSY" in first) == (load >= (os.cpu_count() or 1) / 2), first
    assert "| droptail |" in text and text.splitlines()[-1].startswith("after: ")
