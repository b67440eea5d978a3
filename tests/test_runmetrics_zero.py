"""``tcp.zero_goodput`` / ``group.<g>.zero_goodput`` count flows with goodput exactly zero ([CHOKeW]
§4.1 reads its starved flows off the RCF at goodput zero), not flows below a threshold;
``*.goodput_min_bps`` is the lowest goodput of a started TCP flow."""

from types import SimpleNamespace

import pandas as pd

from aqmlab.run.metrics import run_row


def _result(goodputs, groups, transports=None, starts=None):
    n = len(goodputs)
    flows = pd.DataFrame({
        "flow_id": range(n),
        "group": groups,
        "transport": transports or ["tcp"] * n,
        "app": ["bulk"] * n,
        "priority": [1] * n,
        "start_s": starts or [0.5] * n,
        "goodput_bps": [float(g) for g in goodputs],
        "throughput_bps": [float(g) for g in goodputs],
        "drops_total": [0.0] * n,
        "drops_link_loss": [0.0] * n,
    })
    summary = {
        "bottleneck": {"capacity_bps": 1e6, "utilisation": 0.9},
        "scenario": {"duration_s": 500.0},
        "groups": [{"name": g} for g in dict.fromkeys(groups)],
    }
    return SimpleNamespace(summary=summary, flows=flows, timeseries=None)


def test_zero_goodput_counts_only_exact_zeros():
    # fair share 1e6 / 6 ≈ 166.7 kb/s; 10 % of it ≈ 16.7 kb/s: 1e-3 b/s and 16 b/s are below it
    res = _result([0.0, 1e-3, 16.0, 0.0, 2e5, 3e5], ["out", "out", "out", "in", "in", "in"])
    row = run_row(res)
    assert row["tcp.zero_goodput"] == 2.0
    assert row["group.out.zero_goodput"] == 1.0   # the flow at 0.001 b/s is not counted
    assert row["group.in.zero_goodput"] == 1.0
    # the threshold count is wider: every flow below 10 % of the fair share
    assert row["tcp.starved"] == 4.0
    assert row["group.out.starved"] == 3.0
    # the lowest goodput per group and over all TCP flows
    assert row["group.out.goodput_min_bps"] == 0.0 and row["group.in.goodput_min_bps"] == 0.0
    assert row["tcp.goodput_min_bps"] == 0.0


def test_goodput_min_is_the_lowest_started_flow():
    res = _result([3.0, 1e-3, 2e5], ["a", "a", "b"])
    row = run_row(res)
    assert row["group.a.goodput_min_bps"] == 1e-3 and row["group.b.goodput_min_bps"] == 2e5
    assert row["tcp.goodput_min_bps"] == 1e-3 and row["tcp.zero_goodput"] == 0.0


def test_zero_goodput_ignores_udp_and_flows_that_never_started():
    res = _result([0.0, 0.0, 0.0, 5e5], ["tcp", "tcp", "udp", "tcp"],
                  transports=["tcp", "tcp", "udp", "tcp"], starts=[0.5, 600.0, 0.0, 0.5])
    row = run_row(res)
    assert row["tcp.zero_goodput"] == 1.0          # the late flow (start 600 s > 500 s) did not start
    assert row["group.udp.zero_goodput"] == 0.0
    assert row["group.tcp.goodput_min_bps"] == 0.0   # the late flow is not in it
