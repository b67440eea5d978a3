"""``bottleneck.queue_target_pkts``, ``queue_rms_err_pkts`` and ``queue_excess_mean_pkts``: how far
the queue stays from a controller's target ([RAQM] §3 compares RAQM, PI and REM by how they hold the
queue at q0). The target comes from the run's overrides, by the discipline's type."""

import math
from types import SimpleNamespace

import pandas as pd

from aqmlab.run.metrics import run_row


def _result(aqm, overrides, queue):
    flows = pd.DataFrame({"flow_id": [0], "group": ["tcp"], "transport": ["tcp"], "app": ["bulk"],
                          "priority": [1], "start_s": [0.0], "goodput_bps": [1e6], "throughput_bps": [1e6],
                          "drops_total": [0.0], "drops_link_loss": [0.0]})
    ts = pd.DataFrame({"time_s": [0.5 * i for i in range(len(queue))], "queue_pkts": [float(q) for q in queue]})
    summary = {"bottleneck": {"aqm": aqm, "capacity_bps": 1e7, "utilisation": 1.0},
               "scenario": {"duration_s": 0.5 * len(queue), "overrides": overrides},
               "groups": [{"name": "tcp"}]}
    return SimpleNamespace(summary=summary, flows=flows, timeseries=ts)


def test_target_from_the_overrides_and_the_distance_of_the_queue_from_it():
    q = [0, 80, 70, 50, 40, 60]
    row = run_row(_result("pi", ['flows[0].count=40', 'bottleneck.aqm={ type = "pi", a = 1.8e-5, q_ref = 50 }'], q))
    assert row["bottleneck.queue_target_pkts"] == 50.0
    err = [v - 50 for v in q]
    assert math.isclose(row["bottleneck.queue_rms_err_pkts"], math.sqrt(sum(e * e for e in err) / len(q)))
    assert math.isclose(row["bottleneck.queue_excess_mean_pkts"], (30 + 20 + 10) / len(q))


def test_each_discipline_has_its_own_key_and_the_last_override_wins():
    q = [10, 30]
    row = run_row(_result("raqm", ['bottleneck.aqm={ type = "raqm", q0 = 50 }', "bottleneck.aqm.q0=20"], q))
    assert row["bottleneck.queue_target_pkts"] == 20.0
    assert math.isclose(row["bottleneck.queue_excess_mean_pkts"], 5.0)
    # REM's target is b0; a q0 key does not count for it
    row = run_row(_result("rem", ['bottleneck.aqm={ type = "rem", q0 = 50, b0 = 30 }'], q))
    assert row["bottleneck.queue_target_pkts"] == 30.0


def test_no_target_no_values():
    for aqm, ov in (("raqm", []), ("pi", ['bottleneck.aqm={ type = "raqm", q0 = 50 }'])):
        row = run_row(_result(aqm, ov, [10, 30]))
        assert math.isnan(row["bottleneck.queue_target_pkts"])
        assert math.isnan(row["bottleneck.queue_rms_err_pkts"]) and math.isnan(row["bottleneck.queue_excess_mean_pkts"])
    # disciplines without a queue target have no such columns
    row = run_row(_result("red", ['bottleneck.aqm={ type = "red", min_th = 5 }'], [10, 30]))
    assert not any(k.startswith(("bottleneck.queue_target", "bottleneck.queue_rms", "bottleneck.queue_excess"))
                   for k in row)
