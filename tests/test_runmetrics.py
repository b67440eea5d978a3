"""Run metrics added for the [CHOKeD] scorecard: the largest and smallest flow's throughput, the
users' Jain index (a web session's connections make one user) and the AQM state's spread."""

import math
from pathlib import Path

import aqmlab
from aqmlab.run import metrics as runmetrics

WEB = Path(__file__).resolve().parents[1] / "python" / "aqmlab" / "experiments" / "choked-4.7-web" / "scenario.toml"


def test_max_min_per_flow_users_and_state_spread():
    res = aqmlab.run(WEB, overrides=['simulation.duration="20s"'])
    row = runmetrics.run_row(res)
    f = res.flows
    tcp = f[f["transport"] == "tcp"]["throughput_bps"]
    assert row["tcp.throughput_max_per_flow_bps"] == tcp.max()
    assert row["tcp.throughput_min_per_flow_bps"] == tcp.min()
    # users: every non-web flow, and one per web session with its connections' throughputs summed
    key = f["session"].where(f["session"] >= 0, -1 - f["flow_id"])
    users = f.groupby(key)["throughput_bps"].sum()
    assert row["users.count"] == len(users) == 31
    assert math.isclose(row["users.jain_throughput"], users.sum() ** 2 / (len(users) * (users**2).sum()))
    tcp_users = f[f["transport"] == "tcp"].groupby(key)["throughput_bps"].sum()
    assert row["users.count_tcp"] == len(tcp_users) == 30
    assert math.isclose(row["users.jain_throughput_tcp"],
                        tcp_users.sum() ** 2 / (len(tcp_users) * (tcp_users**2).sum()))
    ts = res.timeseries
    assert math.isclose(row["aqm.avg_std"], ts["aqm_avg"].std())
