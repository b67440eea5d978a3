"""Intervals that cannot leave a metric's range, and model agreement that cannot blow up."""

import math

import numpy as np
import pandas as pd
import pytest

from aqmlab.analysis.figures import agreement
from aqmlab.analysis.stats import bounds, interval, interval_for, metric, summarise


@pytest.mark.parametrize("col, lo, hi", [
    ("fairness.jain_throughput_all", 0, 1),
    ("tcp.jain_goodput", 0, 1),
    ("udp.share", 0, 1),
    ("bottleneck.utilisation", 0, 1),
    ("bottleneck.drop_ratio", 0, 1),
    ("udp.drop_pct", 0, 100),
    ("udp.throughput_bps", 0, math.inf),
    ("bottleneck.delay_mean_s", 0, math.inf),
    ("bottleneck.queue_mean_pkts", 0, math.inf),
])
def test_bounds_of_common_metrics(col, lo, hi):
    assert bounds(col) == (lo, hi)


def test_jain_with_two_seeds_is_a_min_max_range_inside_zero_one():
    # two seeds: a Student-t interval would be 0.975 ± 12.7 · 0.025 = 0.975 ± 0.32, beyond 1
    iv = interval_for("fairness.jain_throughput_all", [0.95, 1.0])
    assert iv.method == "range" and iv.n == 2
    assert (iv.lo, iv.hi) == (0.95, 1.0)
    assert 0.0 <= iv.lo <= iv.mean <= iv.hi <= 1.0


def test_a_t_interval_is_clipped_to_the_metric_range():
    vals = [0.2, 0.99, 1.0]
    raw = interval(vals)  # unbounded
    assert raw.method == "t95" and raw.hi > 1.0 and raw.lo < 0.0
    iv = interval_for("fairness.jain_throughput_tcp", vals)
    assert iv.method == "t95" and iv.clipped and iv.lo == 0.0 and iv.hi == 1.0
    # throughputs never below zero
    iv = interval_for("udp.throughput_bps", [0.0, 0.0, 9e5])
    assert iv.lo == 0.0 and iv.hi > iv.mean


def test_one_seed_has_no_interval():
    iv = interval_for("udp.share", [0.3])
    assert iv.method == "none" and iv.lo == iv.hi == iv.mean == 0.3


def test_summarise_and_table_cells_state_the_interval():
    df = pd.DataFrame({"scheme": ["A", "A", "B", "B", "B"],
                       "fairness.jain_throughput_all": [0.8, 0.99, 0.1, 0.95, 1.0]})
    t = summarise(df, ["scheme"], ["fairness.jain_throughput_all"])
    a, b = t.iloc[0], t.iloc[1]
    assert a["fairness.jain_throughput_all_method"] == "range"
    assert b["fairness.jain_throughput_all_method"] == "t95"
    assert 0.0 <= b["fairness.jain_throughput_all_lo"] and b["fairness.jain_throughput_all_hi"] <= 1.0
    m = metric("fairness.jain_throughput_all")
    cell = m.fmt_iv(a["fairness.jain_throughput_all"], a["fairness.jain_throughput_all_lo"],
                    a["fairness.jain_throughput_all_hi"], "range")
    assert cell == "0.895 [0.800, 0.990]"
    assert m.fmt_iv(0.5, 0.4, 0.6, "t95") == "0.500 ± 0.100"


def test_model_agreement_is_bounded_near_zero():
    # a model value of 1e-9 against a simulated 0.18: a relative difference would be 1.8e8
    mad, frac, n = agreement(np.array([0.18, 0.10, 0.02]), np.array([0.17, 0.11, 1e-9]))
    assert n == 3 and 0.0 <= frac <= 1.0
    assert math.isclose(mad, (0.01 + 0.01 + 0.02) / 3, rel_tol=1e-6)
    assert agreement(np.array([0.0]), np.array([0.0])) is None
    assert agreement(np.array([np.nan]), np.array([1.0])) is None
