"""Latency under load (issue 26 item 6): a VoIP-like probe next to bulk TCP and UDP, its one-way
delay and RTT distributions, probes left out of the fairness aggregates, and `aqmlab plot --kind
latency` drawing the distributions as Flent does."""

import math

import pytest

from conftest import EXAMPLES

SHORT = ["simulation.duration=40s", "simulation.warmup=10s"]
FQ = 'bottleneck.aqm={type="fq_codel"}'
CODEL = 'bottleneck.aqm={type="codel"}'


@pytest.fixture(scope="module")
def runs():
    """examples/voip-latency.toml (500-packet buffer: 400 ms at 10 Mb/s) under DropTail, CoDel and
    FQ-CoDel, shortened."""
    import aqmlab

    ex = EXAMPLES / "voip-latency.toml"
    return {name: aqmlab.run(ex, overrides=SHORT + extra)
            for name, extra in (("droptail", []), ("codel", [CODEL]), ("fq_codel", [FQ]))}


def _voip(res):
    return next(g for g in res.summary["groups"] if g["name"] == "voip")


def test_codel_and_fq_codel_keep_the_calls_delay_far_below_a_full_fifo(runs):
    """RFC 8289 §§1, 3: CoDel keeps the standing queue's delay near its 5 ms target whatever the
    buffer; a DropTail buffer of 500 packets kept full by TCP holds ~400 ms. FQ-CoDel also serves
    the sparse call ahead of the bulk queues (RFC 8290 §4.2)."""
    dt, co, fq = (_voip(runs[k]) for k in ("droptail", "codel", "fq_codel"))
    for g in (dt, co, fq):
        assert 1400 <= g["owd_samples"] <= 1501  # 50 probes a second over the 30 s window
        assert g["rtt_samples"] >= 1300  # echoed
    assert dt["owd_p99_s"] > 0.25, dt
    assert co["owd_p99_s"] < dt["owd_p99_s"] / 3, (co, dt)
    assert fq["owd_p99_s"] < dt["owd_p99_s"] / 5, (fq, dt)
    assert fq["owd_p99_s"] < 0.05
    # one-way delay is at least propagation + transmission (1 + 10 + 1 ms, 200 B at 10 Mb/s)
    assert fq["owd_p50_s"] >= 0.012
    assert dt["rtt_p99_s"] >= dt["owd_p99_s"]


def test_every_flow_recorded_and_probes_out_of_the_aggregates(runs):
    from aqmlab.run.metrics import run_row

    res = runs["droptail"]
    f = res.flows
    # simulation.latency = true in the example: TCP and UDP flows have one-way delays too
    assert f["owd_p50_s"].notna().all()
    assert f.loc[f["app"] == "bulk", "rtt_p99_s"].notna().all()
    assert f.loc[f["app"] == "cbr", "rtt_p99_s"].isna().all()
    lat = res.latency
    assert set(lat["metric"]) == {"owd", "rtt"} and set(lat["group"]) == {"tcp", "udp", "voip"}
    one = lat[(lat["flow_id"] == 5) & (lat["metric"] == "owd")]
    assert one["cdf"].is_monotonic_increasing and one["cdf"].iloc[-1] == 1.0
    assert one["count"].sum() == f.loc[5, "owd_samples"]
    # the probe is not bulk traffic: Jain over "all" flows and the udp aggregates leave it out
    row = run_row(res)
    bulk = f[f["app"] != "probe"]
    from aqmlab.base.metrics import jain

    assert math.isclose(row["all.jain_throughput"], jain(bulk["throughput_bps"]))
    assert math.isclose(res.summary["fairness"]["jain_throughput_all"], jain(bulk["throughput_bps"]))
    assert row["udp.flows"] == 1 and row["app.probe.flows"] == 1
    assert row["group.voip.owd_p99_s"] == _voip(res)["owd_p99_s"]
    assert math.isclose(res.jain(), jain(bulk["throughput_bps"]))


def test_cli_run_prints_percentiles_and_plot_draws_the_cdf(tmp_path, run_cli):
    a, b = tmp_path / "dt", tmp_path / "fq"
    for out, extra in ((a, []), (b, ["--set", FQ])):
        r = run_cli("run", EXAMPLES / "voip-latency.toml", *sum((["--set", s] for s in SHORT), []), *extra,
                    "--out", out)
        assert r.returncode == 0, r.stderr
        assert (out / "latency.csv").is_file() and (out / "latency.parquet").is_file()
    assert "one-way p50" in r.stdout and "voip" in r.stdout and "but the 1 probe " in r.stdout
    plots = tmp_path / "plots"
    r = run_cli("plot", a, b, "--kind", "latency", "--where", "group=voip", "--out", plots)
    assert r.returncode == 0, r.stderr
    assert "99th percentile" in r.stdout
    for ext in ("pdf", "svg", "png", "csv"):
        assert (plots / f"latency-owd.{ext}").stat().st_size > 200
    import pandas as pd

    data = pd.read_csv(plots / "latency-owd.csv")
    assert "one-way delay (ms)" in data.columns and set(data["series"]) == {"dt", "fq"}
    # the tail: fraction of packets slower, on a log axis; the round trips
    r = run_cli("plot", a, b, "--kind", "latency", "--y", "rtt", "--tail", "--where", "group=voip", "--out", plots,
                "--style", "draft")
    assert r.returncode == 0, r.stderr
    svg = (plots / "latency-rtt.svg").read_text()
    assert "round-trip time (ms)" in svg and "fraction of packets slower" in svg
    # one-line errors
    r = run_cli("plot", a, "--kind", "latency", "--y", "jitter", "--out", plots)
    assert r.returncode == 2 and r.stderr.startswith("error: --y jitter") and r.stderr.count("\n") == 1
    r = run_cli("plot", a, "--kind", "cdf", "--tail", "--out", plots)
    assert r.returncode == 2 and "--tail" in r.stderr


def test_probe_keys_are_checked(tmp_path, run_cli):
    ex = EXAMPLES / "voip-latency.toml"
    for setting, path in (("flows[2].rate=1Mb/s", "flows[2].rate"), ("flows[2].interval=0s", "flows[2].interval"),
                          ("flows[2].interval=20", "flows[2].interval"), ("flows[0].echo=true", "flows[0].echo")):
        r = run_cli("validate", ex, "--set", setting)
        assert r.returncode == 2, (setting, r.stdout)
        # the override is named (not the file), with the key it set
        assert r.stderr.startswith(f"error: --set {setting}: ") and r.stderr.count("\n") == 1, r.stderr
