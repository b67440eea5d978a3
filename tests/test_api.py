"""The Python API: aqmlab.run / validate / Result."""

import math

import pandas as pd
import numpy as np
import pytest

import aqmlab
from conftest import SMALL


def test_run_returns_summary_and_dataframes(small):
    res = aqmlab.run(small, seed=3)
    assert isinstance(res.summary, dict)
    assert isinstance(res.flows, pd.DataFrame) and isinstance(res.timeseries, pd.DataFrame)
    assert len(res.flows) == 5
    assert res.summary["scenario"]["seed"] == 3
    assert res.summary["engine"]["conservation"] == "ok"
    # group throughput in the summary is the sum over its flows in the table
    g = {x["name"]: x for x in res.summary["groups"]}
    tcp = res.flows[res.flows.group == "tcp"]
    assert math.isclose(g["tcp"]["throughput_bps"], tcp.throughput_bps.sum(), rel_tol=1e-12)


def test_a_table_read_as_a_dataframe_views_the_engine_columns(small):
    """Reading a table does not copy its numeric columns (docs/scenarios.md, "Resources"): the
    DataFrame's columns are the engine's arrays, with their values and types."""
    res = aqmlab.run(small, seed=3)
    cols = res.columns("flows")
    arrays = {name: v for name, v in cols if not isinstance(v, list)}
    assert arrays and all(v.typecode in "dq" for v in arrays.values())
    df = res.flows
    for name, v in arrays.items():
        col = df[name].to_numpy()
        assert col.dtype == ("float64" if v.typecode == "d" else "int64")
        assert np.shares_memory(col, np.frombuffer(v, dtype=col.dtype)), name
        assert np.array_equal(col, np.array(v), equal_nan=v.typecode == "d")
    for name, v in cols:
        if isinstance(v, list):
            assert df[name].tolist() == v


def test_accepts_a_toml_string_and_a_dict(small):
    a = aqmlab.run(SMALL, seed=1).summary
    b = aqmlab.run(small, seed=1).summary
    assert a["bottleneck"] == b["bottleneck"]
    d = {
        "simulation": {"duration": "5s"},
        "bottleneck": {"rate": "1Mb/s", "delay": "10ms", "limit": 20},
        "flows": [{"transport": "tcp", "count": 2}],
    }
    r = aqmlab.run(d)
    assert r.summary["scenario"]["flows"] == 2 and r.summary["bottleneck"]["aqm"] == "droptail"


def test_jain_over_chosen_flows(small):
    res = aqmlab.run(small, seed=2)
    x = res.flows.throughput_bps.to_numpy()
    want = x.sum() ** 2 / (len(x) * (x**2).sum())
    assert math.isclose(res.jain(), want)
    assert math.isclose(res.jain(group="tcp"), res.summary["fairness"]["jain_throughput_tcp"])
    assert math.isclose(res.jain(flows=[4]), 1.0)
    assert math.isclose(res.jain(flows=res.flows.transport == "tcp"), res.jain(group="tcp"))
    with pytest.raises(ValueError):
        res.jain(group="nope")


def test_scenario_error_carries_the_key_path():
    with pytest.raises(aqmlab.ScenarioError, match=r"^bottleneck\.limit: "):
        aqmlab.validate(SMALL.replace("limit = 50", "limit = 0"))
    with pytest.raises(aqmlab.ScenarioError, match=r"^--set x: expected key.path=value"):
        aqmlab.run(SMALL, overrides=["x"])


def test_progress_callback_is_called_and_can_stop(small):
    seen = []
    aqmlab.run(small, overrides=["simulation.duration=200s"], progress=seen.append)
    assert seen and all(0 <= t <= 200 for t in seen) and seen == sorted(seen)

    class Stop(Exception):
        pass

    def stop(t):
        raise Stop

    with pytest.raises(Stop):
        aqmlab.run(small, overrides=["simulation.duration=200s"], progress=stop)


def test_names():
    assert ("red" in dict(aqmlab.names("aqm"))) and ("newreno" in dict(aqmlab.names("tcp")))
    with pytest.raises(ValueError):
        aqmlab.names("colours")


def test_queue_snapshots_give_the_spatial_distribution(small):
    res = aqmlab.run(small, overrides=["simulation.queue_snapshots=true", 'bottleneck.aqm={type="choke", min_th=5, max_th=30}'])
    snaps = res.snapshots
    assert snaps is not None and len(snaps) > 0
    count = res.summary["queue_snapshots"]["count"]
    # 20 s with 2 s warm-up: Poisson instants with a mean gap of 100 ms (180 expected, sd 13)
    assert res.summary["queue_snapshots"]["times"] == "poisson"
    assert 130 <= count <= 230
    t = np.array(sorted(set(snaps.time_s)))
    assert t.min() >= 2.0 and np.diff(t).std() > 0.03  # exponential gaps, not fixed steps
    periodic = aqmlab.run(small, overrides=["simulation.queue_snapshots=true", 'simulation.snapshot_times="periodic"'])
    assert periodic.summary["queue_snapshots"]["count"] == 180  # one per 100 ms sample
    # positions run 0 (tail) .. queue_len - 1 within each snapshot
    g = snaps.groupby("time_s")
    assert (g.position_from_tail.max() == g.queue_len.first() - 1).all()
    assert (g.position_from_tail.min() == 0).all()
    rho = aqmlab.spatial_distribution(res)
    assert list(rho.columns) == ["y", "rho_udp"] and rho.rho_udp.between(0, 1).all()
    assert rho.attrs["snapshots"] == count
    assert aqmlab.run(small).snapshots is None
