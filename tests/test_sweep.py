"""Sweeps: the grid, the cache (resume, no stale hits), the tables, the command and its errors."""

import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

import importlib

import aqmlab
from aqmlab.base import version
from aqmlab.run import api as run_api

sw = importlib.import_module("aqmlab.sweep")  # the module (the attribute aqmlab.sweep is the function)
from conftest import aqmlab as cli

ERROR_LINE = re.compile(r"^error: [^\n]+$")

SCEN = """
name = "sweepme"
[simulation]
duration = "6s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 50
aqm = { type = "red", min_th = 10, max_th = 30 }
[[flows]]
name = "tcp"
transport = "tcp"
count = 3
[[flows]]
name = "udp"
transport = "udp"
rate = "500kb/s"
"""

VARY = ["flows[0].count=2,4", 'bottleneck.aqm={type="red",min_th=10,max_th=30},{type="choke",min_th=10,max_th=30}']


def stored(cache):
    """The entries of a cache directory."""
    return list((cache / sw.cache_layout()).glob("*/*.zip"))


@pytest.fixture
def scen(tmp_path):
    p = tmp_path / "sweepme.toml"
    p.write_text(SCEN)
    return p


@pytest.fixture
def count_runs(monkeypatch):
    """Count engine invocations (runs made in this process, i.e. with jobs=1)."""
    calls = []
    real = run_api.run

    def counting(*a, **k):
        calls.append(k.get("seed"))
        return real(*a, **k)

    monkeypatch.setattr(run_api, "run", counting)
    return calls


# ----------------------------------------------------------------------------- grid and values


def test_values_split_at_top_level_commas_only():
    assert sw.split_top_level('1, "a,b", [1, 2], {x = 1, y = "z,"}') == ['1', '"a,b"', "[1, 2]", '{x = 1, y = "z,"}']
    d = sw.parse_vary("bottleneck.aqm.max_p=0.1,0.25")
    assert d.name == "bottleneck.aqm.max_p" and [c.value for c in d.choices] == [0.1, 0.25]
    assert d.choices[1].set == ("bottleneck.aqm.max_p=0.25",)
    assert [c.value for c in sw.parse_vary("bottleneck.delay=10ms,20ms").choices] == ["10ms", "20ms"]


def test_templates_are_arithmetic_over_the_coordinates():
    assert sw.expand("flows[0].count=${N // 2}", {"N": 50}) == "flows[0].count=25"
    assert sw.expand('rate="${round(x * 1000)}kb/s"', {"x": 0.3}) == 'rate="300kb/s"'
    assert sw.expand("n=${ceil(L * 1e6 / 96000)}", {"L": 0.1}) == "n=2"
    for bad in ["${M}", "${__import__('os')}", "${N.real}", "${N"]:
        with pytest.raises(sw.SweepError):
            sw.expand(bad, {"N": 1})


def test_grid_is_the_cartesian_product_times_seeds(scen):
    s = sw.Sweep(scen, VARY, seeds=3)
    tasks = s.tasks()
    assert len(s.points()) == 4 and len(tasks) == 12
    assert [t.seed for t in tasks[:3]] == [1, 2, 3]  # seed i of K = the scenario's seed (1) + i
    assert len({t.key for t in tasks}) == 12
    assert sw.Sweep(scen, VARY, seeds=2, seed=10).tasks()[1].seed == 11


def test_ranges_in_vary():
    def vals(text):
        return [c.value for c in sw.parse_vary(text).choices]

    assert vals("flows[0].count=10:40:10") == [10, 20, 30, 40]
    assert vals("flows[0].count=10:45:10") == [10, 20, 30, 40]  # up to the stop, not past it
    assert vals("flows[0].count=40:10:-15") == [40, 25, 10]
    assert vals("bottleneck.aqm.max_p=0.1:0.3:0.1") == [0.1, 0.2, 0.3]  # no 0.30000000000000004
    assert vals("flows[1].rate=0.25Mb/s:8Mb/s:x2") == ["0.25Mb/s", "0.5Mb/s", "1Mb/s", "2Mb/s", "4Mb/s", "8Mb/s"]
    assert vals("bottleneck.delay=1ms:1000ms:log4") == ["1ms", "10ms", "100ms", "1000ms"]
    assert vals("flows[0].count=1:100:log3") == [1.0, 10.0, 100.0]
    assert vals("bottleneck.delay=10ms:30ms:10ms,100ms") == ["10ms", "20ms", "30ms", "100ms"]  # ranges and values mix
    d = sw.parse_vary("flows[0].count=2:6:2")
    assert d.choices[1].set == ("flows[0].count=4",)
    # the same from Python, as a string in the mapping
    assert [c.value for c in sw.vary_dimension("flows[0].count", "10:30:10").choices] == [10, 20, 30]
    for bad, why in [("1:10:0", "never goes"), ("10:1:1", "never goes"), ("1ms:1s:1ms", "one unit"),
                     ("0:8:x2", "above 0"), ("1:8:log1", "at least 2"), ("1:1e9:1", "more than")]:
        with pytest.raises(sw.SweepError, match=why):
            sw.parse_vary(f"flows[0].count={bad}")


def test_range_from_the_command_line(scen, tmp_path):
    r = cli("sweep", scen, "--vary", "flows[0].count=1:3:1", "--cache", tmp_path / "c", "--out", tmp_path / "o", "-q")
    assert r.returncode == 0, r.stderr
    assert list(pd.read_csv(tmp_path / "o" / "runs.csv")["flows[0].count"]) == [1, 2, 3]


def test_overrides_as_a_dict(scen, tmp_path):
    """overrides may be {key.path: Python value}; values are written as TOML (dicts as inline tables)."""
    res = aqmlab.run(scen, overrides={"simulation.duration": "2s", "flows[0].count": 2,
                                      "bottleneck.aqm": {"type": "choke", "min_th": 5, "max_th": 20}})
    assert res.summary["bottleneck"]["aqm"] == "choke" and len(res.flows) == 3
    assert res.summary["scenario"]["duration_s"] == 2.0
    as_strings = aqmlab.run(scen, overrides=['simulation.duration="2s"', "flows[0].count=2",
                                             'bottleneck.aqm={type="choke", min_th=5, max_th=20}'])
    assert as_strings.flows.equals(res.flows)
    df = aqmlab.sweep(scen, vary={"flows[0].count": [1, 2]}, overrides={"simulation.duration": "2s"}, jobs=1,
                      cache=tmp_path / "c")
    assert list(df["flows[0].count"]) == [1, 2]
    with pytest.raises(aqmlab.ScenarioError, match="flows.0..count: cannot write"):
        aqmlab.run(scen, overrides={"flows[0].count": object()})
    with pytest.raises(aqmlab.ScenarioError, match="expected a key path"):
        aqmlab.run(scen, overrides={"flows[0].count=3": 1})


NO_GUARD = """
import aqmlab
df = aqmlab.sweep({scen!r}, vary={{"flows[0].count": [1, 2, 3, 4]}}, jobs=2, cache={cache!r})
print("rows", len(df))
print("script body ran")
"""


@pytest.mark.parametrize("how", ["script", "stdin"])
def test_sweep_from_a_script_without_a_main_guard(scen, tmp_path, how):
    """A sweep on several processes from a plain script (no `if __name__ == "__main__":`) or from
    standard input (as a REPL or a notebook has no main file) returns its table; the workers never run
    the script, so its body runs once."""
    code = NO_GUARD.format(scen=str(scen), cache=str(tmp_path / f"cache-{how}"))
    if how == "script":
        (tmp_path / "study.py").write_text(code)
        r = subprocess.run([sys.executable, "study.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    else:
        r = subprocess.run([sys.executable, "-"], input=code, cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "rows 4" in r.stdout and r.stdout.count("script body ran") == 1, r.stdout
    assert "bootstrapping" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]


# ----------------------------------------------------------------------------- cache


def test_interrupted_sweep_resumes_without_redoing_runs(scen, tmp_path, count_runs):
    cache = tmp_path / "cache"
    sweep = sw.Sweep(scen, VARY, seeds=2)

    class Stop(Exception):
        pass

    done = []

    def stop_after_three(task):
        done.append(task.key)
        if len(done) == 3:
            raise Stop

    with pytest.raises(Stop):
        sweep.run(jobs=1, cache=cache, on_done=stop_after_three)
    assert len(count_runs) == 3
    entries = stored(cache)
    assert len(entries) == 3 and all(sw.Cache(cache).check(e.stem) is None for e in entries)
    assert not [p for p in (cache / "tmp").iterdir() if not p.name.startswith(".aqmlab-probe")]  # nothing half-written

    count_runs.clear()
    res = sweep.run(jobs=1, cache=cache)
    assert res.stats == {"total": 8, "cached": 3, "computed": 5}
    assert len(count_runs) == 5  # only the missing runs

    count_runs.clear()
    again = sweep.run(jobs=1, cache=cache)
    assert again.stats["computed"] == 0 and count_runs == []  # a repeated sweep is free

    fresh = sweep.run(jobs=1, cache=False)
    pd.testing.assert_frame_equal(res.runs, fresh.runs)
    pd.testing.assert_frame_equal(res.table("flows"), fresh.table("flows"))


def test_parallel_sweep_gives_the_same_table(scen, tmp_path):
    a = sw.Sweep(scen, VARY, seeds=2).run(jobs=2, cache=tmp_path / "c1")
    b = sw.Sweep(scen, VARY, seeds=2).run(jobs=1, cache=tmp_path / "c2")
    pd.testing.assert_frame_equal(a.runs, b.runs)
    assert a.stats["computed"] == 8


def test_cache_key_changes_with_everything_that_changes_the_result(scen, monkeypatch):
    text = scen.read_text()
    base = sw.run_key(text, "sweepme", ["flows[0].count=2"], 1)
    same_layout = "# a comment\n" + text.replace('limit = 50', 'limit  =  50')
    assert sw.run_key(same_layout, "sweepme", ["flows[0].count=2"], 1) == base  # comments and spacing do not count
    assert sw.run_key(text.replace("limit = 50", "limit = 51"), "sweepme", ["flows[0].count=2"], 1) != base
    assert sw.run_key(text, "sweepme", ["flows[0].count=3"], 1) != base
    assert sw.run_key(text, "sweepme", ["flows[0].count=2", "simulation.seed=1"], 1) != base
    assert sw.run_key(text, "sweepme", ["flows[0].count=2"], 2) != base
    assert sw.run_key(text, "other", ["flows[0].count=2"], 1) != base  # the default name is in the summary
    monkeypatch.setattr(sw.keys, "__version__", "99.0.0")
    assert sw.run_key(text, "sweepme", ["flows[0].count=2"], 1) != base
    monkeypatch.undo()
    monkeypatch.setattr(version, "_BUILD_ID", "another-engine")
    assert sw.run_key(text, "sweepme", ["flows[0].count=2"], 1) != base


def test_cache_never_serves_a_changed_scenario(scen, tmp_path, count_runs):
    cache = tmp_path / "cache"
    first = sw.Sweep(scen, ["flows[0].count=2,4"], seeds=1).run(jobs=1, cache=cache)
    assert first.stats["computed"] == 2
    scen.write_text(SCEN.replace('rate = "500kb/s"', 'rate = "800kb/s"'))
    count_runs.clear()
    second = sw.Sweep(scen, ["flows[0].count=2,4"], seeds=1).run(jobs=1, cache=cache)
    assert second.stats == {"total": 2, "cached": 0, "computed": 2} and len(count_runs) == 2
    assert (second.runs["udp.throughput_bps"] > first.runs["udp.throughput_bps"]).all()
    # a changed override is a different run too
    third = sw.Sweep(scen, ["flows[0].count=2,5"], seeds=1).run(jobs=1, cache=cache)
    assert third.stats == {"total": 2, "cached": 1, "computed": 1}


def test_cached_results_equal_a_direct_run(scen, tmp_path):
    res = sw.Sweep(scen, ["flows[0].count=2"], seeds=1).run(jobs=1, cache=tmp_path / "c")
    direct = aqmlab.run(scen, seed=1, overrides=["flows[0].count=2"])
    stored = res.result(0)
    assert stored.summary == direct.summary
    pd.testing.assert_frame_equal(stored.flows, direct.flows)
    pd.testing.assert_frame_equal(stored.timeseries, direct.timeseries)


# ----------------------------------------------------------------------------- tables and the API


def test_python_sweep_returns_one_row_per_run(scen, tmp_path):
    df = aqmlab.sweep(scen, vary={"flows[0].count": [2, 4], "bottleneck.aqm.max_p": [0.1, 0.2]}, seeds=2,
                      jobs=1, cache=tmp_path / "c")
    assert isinstance(df, pd.DataFrame) and len(df) == 8
    assert list(df.columns[:4]) == ["flows[0].count", "bottleneck.aqm.max_p", "seed", "run"]
    for col in ["bottleneck.utilisation", "bottleneck.queue_mean_pkts", "bottleneck.delay_mean_s",
                "bottleneck.drop_ratio", "fairness.jain_throughput_all", "group.tcp.goodput_bps",
                "tcp.goodput_bps", "udp.share", "udp.drop_pct", "aqm.avg_mean"]:
        assert col in df.columns, col
    assert df.groupby("flows[0].count")["all.flows"].first().to_dict() == {2: 3.0, 4: 5.0}


def test_sweep_command_writes_runs_and_flows(scen, tmp_path):
    out = tmp_path / "out"
    r = cli("sweep", scen, "--vary", VARY[0], "--vary", VARY[1], "--seeds", "2", "--out", out,
            "--cache", tmp_path / "c", "--jobs", "2")
    assert r.returncode == 0, r.stderr
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 8 and pd.read_csv(out / "runs.csv").shape == runs.shape
    flows = pd.read_parquet(out / "flows.parquet")
    assert len(flows) == (3 + 5) * 2 * 2  # (3 or 5 flows) x 2 schemes x 2 seeds
    assert {"flows[0].count", "bottleneck.aqm", "seed", "run", "flow_id", "throughput_bps"} <= set(flows.columns)
    assert "8 runs (0 from the cache, 8 run now)" in r.stdout
    r = cli("sweep", scen, "--vary", VARY[0], "--vary", VARY[1], "--seeds", "2", "--out", out,
            "--cache", tmp_path / "c", "-q")
    assert r.returncode == 0 and r.stdout == ""


def test_sweep_interrupted_by_ctrl_c_resumes(scen, tmp_path):
    """A real interruption: SIGINT to a running `aqmlab sweep`, then the same command again."""
    scen.write_text(SCEN.replace('duration = "6s"', 'duration = "200s"'))
    cache, out = tmp_path / "cache", tmp_path / "out"
    args = [sys.executable, "-m", "aqmlab.cli", "sweep", str(scen), "--vary", "flows[0].count=1,2,3,4,5,6,7,8",
            "--seeds", "3", "--jobs", "1", "--cache", str(cache), "--out", str(out), "-q"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and len(stored(cache)) < 2:
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    n_before = len(stored(cache))
    assert p.returncode == 130, p.returncode
    assert 2 <= n_before < 24  # really interrupted
    assert not [d for d in (cache / "tmp").iterdir()] if (cache / "tmp").exists() else True
    r = subprocess.run(args[:-1], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"24 runs ({n_before} from the cache, {24 - n_before} run now)" in r.stdout
    resumed = pd.read_csv(out / "runs.csv")
    r = subprocess.run(args[:-5] + ["--no-cache", "--out", str(tmp_path / "fresh"), "-q"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    pd.testing.assert_frame_equal(resumed, pd.read_csv(tmp_path / "fresh" / "runs.csv"))


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("args, message", [
    (["--vary", "flows[0].count"], "--vary flows[0].count: expected key.path=value1,value2,..."),
    (["--vary", "flows[0].count=1,,2"], "empty value"),
    (["--vary", "flows[0].bogus=1,2"], "--vary flows[0].bogus=1: unknown field"),
    (["--vary", "flows[9].count=1"], "index [9] is out of range"),
    (["--vary", "flows[0].count=1", "--vary", "flows[0].count=2"], "varied twice"),
    (["--seeds", "0"], "--seeds: must be a positive integer"),
    (["--jobs", "0"], "--jobs: must be a positive integer"),
    (["--tables", "nope"], "--tables nope: unknown table"),
])
def test_bad_sweeps_are_one_line_errors(scen, tmp_path, args, message):
    r = cli("sweep", scen, *args, "--cache", tmp_path / "c", "--out", tmp_path / "o")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and ERROR_LINE.match(lines[0]) and message in lines[0], r.stderr
    assert not stored(tmp_path / "c")  # nothing ran


def test_missing_scenario_file(tmp_path):
    r = cli("sweep", tmp_path / "nope.toml", "--vary", "flows[0].count=1,2")
    assert r.returncode == 2 and r.stderr.strip() == f"error: {tmp_path / 'nope.toml'}: no such file"


def test_experiments_drawn_in_parallel_workers(tmp_path):
    """`reproduce` of several experiments: each is gathered and drawn in a worker process, the
    report is the same as when everything is drawn in this process (--jobs 1)."""
    from test_reproduce import TINY_EXPERIMENT, TINY_REFERENCE, TINY_SCENARIO

    for i in ("tiny", "tiny2"):
        d = tmp_path / "exps" / i
        d.mkdir(parents=True)
        (d / "scenario.toml").write_text(TINY_SCENARIO)
        (d / "experiment.toml").write_text(TINY_EXPERIMENT.replace('id = "tiny"', f'id = "{i}"'))
        (d / "reference.toml").write_text(TINY_REFERENCE)
    outs = {}
    for jobs in ("2", "1"):
        out = tmp_path / f"out{jobs}"
        # a cache each: both invocations run everything (the report counts what came from the cache)
        r = cli("reproduce", "--all", "--quick", "--experiments", tmp_path / "exps", "--out", out, "--cache",
                tmp_path / f"c{jobs}", "--jobs", jobs)
        assert r.returncode == 0, r.stderr
        assert "tiny: 8 runs, 3 figures, 2 tables" in r.stderr and "tiny2: 8 runs, 3 figures, 2 tables" in r.stderr
        outs[jobs] = out
    for i in ("tiny", "tiny2"):
        assert (outs["2"] / i / "fig1-udp-share.png").stat().st_size > 5000
        pd.testing.assert_frame_equal(pd.read_csv(outs["2"] / i / "runs.csv"), pd.read_csv(outs["1"] / i / "runs.csv"))
        assert (outs["2"] / i / "table1.md").read_text() == (outs["1"] / i / "table1.md").read_text()
    strip = lambda t: re.sub(r"in \d+\.\d min", "", t)  # noqa: E731 (the run time differs)
    assert strip((outs["2"] / "report.md").read_text()) == strip((outs["1"] / "report.md").read_text())
