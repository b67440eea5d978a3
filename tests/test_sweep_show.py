"""What ``aqmlab sweep`` prints (issue 40, item 3): columns chosen by the scenario's groups (two TCP
groups: each one's share, so "who wins, BBR or CUBIC" is answered; on a network, the share at the
group's bottleneck), ``--show COL,...`` to choose them, refused before any run when a name is no
column; every cell with its unit, and an interval clipped to the metric's range printed as its
bounds."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from aqmlab.analysis.stats import Interval
from aqmlab.cli.output import fmt_cell
from conftest import EXAMPLES, ROOT, aqmlab as cli

BBR_CUBIC = ROOT / "tests" / "data" / "bbr-cubic.toml"
NET = ROOT / "tests" / "data" / "net-hosts.toml"


def rows_of(stdout: str) -> list[str]:
    """The table's rows (up to the legend)."""
    out = []
    for l in stdout.splitlines()[2:]:
        if not l or l.startswith(("±", "(a", "columns:")):
            break
        out.append(l)
    return out


def test_two_tcp_groups_show_each_groups_share(tmp_path):
    r = cli("sweep", BBR_CUBIC, "--vary", "bottleneck.limit=50,200", "--seeds", "3", "--no-cache", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0].split("  ")
    head = [h.strip() for h in head if h.strip()]
    assert "bbr share" in head and "cubic share" in head and "TCP goodput" not in head, head
    runs = pd.read_csv(tmp_path / "o" / "runs.csv")
    for limit, row in zip((50, 200), rows_of(r.stdout)):
        sel = runs[runs["bottleneck.limit"] == limit]
        for g in ("bbr", "cubic"):
            m = sel[f"group.{g}.share"].mean()
            assert f"{m * 100:.1f}%" in row, (g, row)
    assert "bbr share = group.bbr.share" in r.stdout


def test_show_chooses_the_columns_and_a_pattern_or_plus_adds(tmp_path):
    base = ["sweep", EXAMPLES / "voip-latency.toml", "--vary", 'bottleneck.aqm={type="droptail"},{type="fq_codel"}',
            "--set", 'simulation.duration="20s"', "--set", 'simulation.warmup="5s"', "--no-cache",
            "--out", tmp_path / "o"]
    r = cli(*base, "--show", "group.voip.rtt_p99_s,group.*.loss")
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0].split()
    assert head[2:] == ["group.voip.rtt_p99_s", "group.tcp.loss", "group.udp.loss", "group.voip.loss"], head
    assert all(" ms" in row for row in rows_of(r.stdout))
    plus = cli(*base, "--show", "+group.voip.rtt_p99_s")
    assert plus.returncode == 0, plus.stderr
    h = plus.stdout.splitlines()[0]
    assert "voip loss" in h and h.rstrip().endswith("group.voip.rtt_p99_s")


@pytest.mark.parametrize("show, near", [("group.voip.los", "group.voip.loss"),
                                        ("bottleneck.utilization", "bottleneck.utilisation")])
def test_a_show_that_names_no_column_is_refused_before_any_run(tmp_path, show, near):
    out = tmp_path / "o"
    r = cli("sweep", EXAMPLES / "voip-latency.toml", "--vary", "flows[0].count=1,2", "--no-cache", "--out", out,
            "--show", show)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"error: --show {show}: ") and near in r.stderr and "list metrics" in r.stderr
    assert not (out / "runs.csv").exists(), "refused before anything ran"


def test_a_network_group_share_is_at_its_bottleneck(tmp_path):
    """A network written out: the flows' measured link is the receiver's fast last link; the table gives
    the share at the congested core, named, as aqmlab run's `at` column does."""
    net = NET
    r = cli("run", net, "--out", tmp_path / "run")
    assert r.returncode == 0, r.stderr
    import json

    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    core = s["links"]["core"]["groups"]
    lines = r.stdout.splitlines()
    head = next(l for l in lines if l.startswith("group "))
    assert head.split()[5] == "at"
    for g in ("tcp", "udp"):
        cells = next(l for l in lines if l.startswith(g + " ")).split()
        assert cells[cells.index("core") - 1] == f"{core[g]['share'] * 100:.1f}%", cells
        summary_share = next(x for x in s["groups"] if x["name"] == g)["share"]
        assert summary_share < core[g]["share"] / 5, "the summary's share is at the receivers' 10 Mb/s links"
    sw = cli("sweep", net, "--vary", "flows[0].count=2,4", "--no-cache", "--out", tmp_path / "sw")
    assert sw.returncode == 0, sw.stderr
    assert "tcp share at core" in sw.stdout and "links.core.groups.tcp.share" in sw.stdout


def test_cells_carry_units_on_both_sides_and_clipped_intervals_show_their_bounds():
    iv = Interval(0.995, 0.985, 1.0, 5, "t95", clipped=True)
    assert fmt_cell("udp.share", iv) == "99.5% [98.5%, 100.0%]"
    assert fmt_cell("udp.share", Interval(0.41, 0.40, 0.42, 5, "t95")) == "41.0% ± 1.0%"
    assert fmt_cell("bottleneck.delay_mean_s", Interval(0.0543, 0.0528, 0.0558, 3, "t95")) == "54.3 ms ± 1.5 ms"
    assert fmt_cell("tcp.goodput_bps", Interval(5.7e6, 5.65e6, 5.75e6, 3, "t95")) == "5.70 Mb/s ± 0.05 Mb/s"
    assert fmt_cell("group.voip.loss", Interval(0.0, 0.0, 0.0, 2, "range")) == "0.0% (0.0%–0.0%)"
    assert fmt_cell("fairness.jain_throughput_all", Interval(math.nan, math.nan, math.nan, 0, "none")) == "-"
    assert fmt_cell("tcp.goodput_bps", Interval(-0.0, -0.0, -0.0, 1, "none")) == "0.00 b/s"




def test_a_tables_interval_is_the_figures_clipped_to_the_same_range(tmp_path):
    """A share near 100 %: the t interval would pass 1; the sweep's table prints it clipped, as its
    bounds, and the figure of the same DataFrame draws the same bounds."""
    from aqmlab.cli.output import SweepTable
    from aqmlab.plot import plot

    runs = pd.DataFrame({"flows[0].count": [2, 2, 2, 4, 4, 4], "seed": [1, 2, 3] * 2,
                         "tcp.share": [0.999, 0.98, 1.0, 0.5, 0.52, 0.51]})
    t = SweepTable(runs, ["flows[0].count"], show="tcp.share")
    near, mid = t.data
    assert near["tcp.share high"] == 1.0 and near["tcp.share low"] < near["tcp.share"]
    assert t.rows[0][-1] == f"99.3% [{near['tcp.share low'] * 100:.1f}%, 100.0%]"
    assert t.rows[1][-1].startswith("51.0% ± ") and any("clipped to the metric's range" in x for x in t.legend)
    o = plot(runs, y="tcp.share", out=tmp_path)
    data = pd.read_csv(next(p for p in o.files if p.suffix == ".csv")).sort_values("flows[0].count")
    assert data["hi"].max() <= 1.0
    for rec, (_, d) in zip((near, mid), data.iterrows()):
        assert (d["lo"], d["y"], d["hi"]) == pytest.approx((rec["tcp.share low"], rec["tcp.share"],
                                                             rec["tcp.share high"]))
