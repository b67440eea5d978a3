"""End-to-end tests of the `aqmlab` command: what a user types, what they get back."""

import json
import re

import pandas as pd
import pytest

from conftest import EXAMPLES, aqmlab

ERROR_LINE = re.compile(r"^error: [^\n]+: [^\n]+$")


def test_run_example_writes_all_results(tmp_path, example):
    out = tmp_path / "out"
    r = aqmlab("run", example, "--out", out)
    assert r.returncode == 0, r.stderr
    for f in ["summary.json", "flows.csv", "flows.parquet", "timeseries.csv", "timeseries.parquet"]:
        assert (out / f).is_file(), f
    s = json.loads((out / "summary.json").read_text())
    assert s["engine"]["conservation"] == "ok"
    assert s["scenario"]["flows"] == 34
    flows = pd.read_parquet(out / "flows.parquet")
    assert len(flows) == 34 and {"throughput_bps", "goodput_bps", "drops_early"} <= set(flows.columns)
    assert flows.equals(pd.read_csv(out / "flows.csv"))
    ts = pd.read_csv(out / "timeseries.csv")
    assert {"time_s", "queue_pkts", "utilisation", "aqm_avg"} <= set(ts.columns)
    # the printed table names every group and the bottleneck
    assert "bottleneck: red" in r.stdout and "udp/cbr" in r.stdout and "tcp/bulk" in r.stdout


def test_same_seed_same_summary_other_seed_differs(tmp_path, small):
    outs = []
    for i, seed in enumerate([7, 7, 8]):
        out = tmp_path / f"o{i}"
        r = aqmlab("run", small, "--seed", seed, "--out", out, "-q")
        assert r.returncode == 0, r.stderr
        outs.append((out / "summary.json").read_text())
    assert outs[0] == outs[1]
    assert outs[0] != outs[2]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_validates_and_runs(tmp_path, path):
    r = aqmlab("validate", path)
    assert r.returncode == 0 and r.stdout.startswith("ok: "), r.stderr
    r = aqmlab("run", path, "--out", tmp_path / "o", "-q")
    assert r.returncode == 0, r.stderr


def test_set_overrides_values(tmp_path, small):
    out = tmp_path / "o"
    r = aqmlab("run", small, "--set", "flows[0].count=6", "--set", "simulation.duration=5s", "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["scenario"]["flows"] == 7 and s["scenario"]["duration_s"] == 5.0
    assert s["scenario"]["overrides"] == ["flows[0].count=6", "simulation.duration=5s"]


def test_list_prints_names_one_per_line():
    r = aqmlab("list", "aqm")
    assert r.returncode == 0
    names = r.stdout.split()
    assert "red" in names and "droptail" in names
    assert len(r.stdout.strip().splitlines()) == len(names)
    assert aqmlab("list", "tcp").stdout.split() == ["newreno"]
    assert set(aqmlab("list", "traffic").stdout.split()) >= {"bulk", "cbr"}


BAD = [
    # (replacement in the small scenario, expected key path in the message)
    (("limit = 50", "limit = 0"), "bottleneck.limit"),
    (("min_th = 10, max_th = 30", "min_th = 30, max_th = 10"), "bottleneck.aqm.max_th"),
    (('rate = "1Mb/s"', "rate = -1"), "bottleneck.rate"),
    (('rate = "1Mb/s"', 'rate = "fast"'), "bottleneck.rate"),
    (("count = 4", "count = 4\nspeed = 9"), "flows[0].speed"),
    (("count = 4", 'count = "four"'), "flows[0].count"),
    (('type = "red"', 'type = "blue-ish"'), "bottleneck.aqm.type"),
    (('rate = "500kb/s"', ""), "flows[1].rate"),
    (('warmup = "2s"', 'warmup = "30s"'), "simulation.warmup"),
    (("[simulation]", "[simulation]\ncolour = 1"), "simulation.colour"),
    (("max_th = 30 }", "max_th = 30, max_p = 1.5 }"), "bottleneck.aqm.max_p"),
    (('transport = "udp"', 'transport = "sctp"'), "flows[1].transport"),
]


@pytest.mark.parametrize("change,path", BAD, ids=[b[1] for b in BAD])
def test_bad_scenario_gives_one_line_error_and_exit_2(tmp_path, change, path):
    from conftest import SMALL

    bad = tmp_path / "bad.toml"
    assert change[0] in SMALL
    bad.write_text(SMALL.replace(change[0], change[1], 1))
    for cmd in ("validate", "run"):
        r = aqmlab(cmd, bad, "--out", tmp_path / "o") if cmd == "run" else aqmlab(cmd, bad)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        err = r.stderr.strip()
        assert "Traceback" not in r.stderr
        assert ERROR_LINE.match(err), err
        assert err.startswith(f"error: {bad}: {path}: "), err


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["run", "/no/such/file.toml"], "no such file"),
        (["run", "{small}", "--set", "nonsense"], "--set nonsense: expected key.path=value"),
        (["run", "{small}", "--set", "flows[9].count=1"], "out of range"),
        (["run", "{small}", "--seed", "-3"], "--seed"),
        (["validate", "{syntax}"], "line 2"),
        (["run", "{small}", "--out", "{file}"], "not a directory"),
    ],
)
def test_other_user_errors(tmp_path, small, args, fragment):
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("[simulation]\nduration = = 3\n")
    file = tmp_path / "afile"
    file.write_text("x")
    args = [a.format(small=small, syntax=syntax, file=file) for a in args]
    r = aqmlab(*args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert fragment in r.stderr, r.stderr


def test_usage_error_exit_2():
    r = aqmlab("frobnicate")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_bench_paper_point_reports_figures():
    r = aqmlab("bench", "--point", "paper", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    for k in ["wall_s", "events_per_s", "data_pkts_per_s", "all_pkts_per_s", "peak_rss_mib"]:
        assert row[k] > 0, k
    assert row["flows"] == 34
