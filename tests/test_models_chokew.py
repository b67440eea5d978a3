"""CHOKeW steady-state model (spec models.md §3): properties P1, P4-P8 on the numerical solution."""

import math

import numpy as np
import pytest

from aqmlab.models import (
    ChokewParams,
    FlowClass,
    ParameterError,
    chokew_p0_sweep,
    eta_of,
    q_of,
    solve_chokew,
    starvation_bound,
)


def tcp(name, n, w, rtt=0.006):
    return FlowClass(name, n, w, rtt=rtt)


def row(sol, name):
    return sol.classes.set_index("class").loc[name]


# ----------------------------------------------------------------------------- element formulas


def test_starvation_bound_worked_value_and_choke_case():
    assert starvation_bound(0.01) == pytest.approx(68.97, abs=0.005)  # (9): up to 69 draws
    assert starvation_bound(0.5) == pytest.approx(1.0)  # CHOKe (p = 1): a flow must hold < 1/2
    for r in (0.01, 0.1, 0.3):
        p = starvation_bound(r)
        assert q_of(r, p) == pytest.approx(1.0)
        assert q_of(r, 0.99 * p) < 1 < q_of(r, 1.01 * p)


def test_drop_probability_forms():
    r, p = 0.2, 3.7
    assert q_of(r, p) == pytest.approx(2 - 2 * (1 - r) ** p, rel=1e-14)
    assert eta_of(r, 3.0, "exact") == pytest.approx(eta_of(r, 3.0), rel=1e-14)  # integer p: identical
    assert eta_of(r, 0.4, "exact") == pytest.approx(1 - 0.4 * r)  # p < 1: one draw with probability f
    # P8, (25): dq/dr = 2 p (1 - r)^(p - 1)
    h = 1e-7
    fd = (q_of(r + h, p) - q_of(r - h, p)) / (2 * h)
    assert fd == pytest.approx(2 * p * (1 - r) ** (p - 1), rel=1e-7)
    # (24): dq/du at u = p, i.e. dq/dp = -2 (1 - r)^p ln(1 - r)
    fd = (q_of(r, p + h) - q_of(r, p - h)) / (2 * h)
    assert fd == pytest.approx(-2 * (1 - r) ** p * math.log(1 - r), rel=1e-7)


@pytest.mark.parametrize("r,p", [(0.05, 0.3), (0.2, 1.0), (0.1, 2.5), (0.02, 17.3)])
def test_p1_entry_probability_matches_monte_carlo_draws(r, p):
    """P1: with a fraction r of the buffer belonging to the flow and draws with replacement, the
    probability that an arrival is not matched is (1 - r)^m (1 - f r)."""
    rng = np.random.default_rng(12345)
    trials = 400_000
    m, f = math.floor(p), p - math.floor(p)
    draws = m + (rng.random(trials) < f)
    unmatched = rng.random(trials) < (1 - r) ** draws  # all of the draws miss the flow
    est = unmatched.mean()
    exact = eta_of(r, p, "exact")
    sigma = math.sqrt(exact * (1 - exact) / trials)
    assert abs(est - exact) < 4 * sigma


# ----------------------------------------------------------------------------- steady state


def test_link_is_saturated_and_the_solution_is_self_consistent():
    cls = [tcp("a", 100, 1), tcp("b", 100, 2)]
    sol = solve_chokew(cls).require()
    assert sol.in_domain and sol.utilisation == pytest.approx(1.0, rel=1e-9)
    df = sol.classes
    assert (df["n"] * df["r"]).sum() == pytest.approx(1.0, rel=1e-10)  # (16a) summed
    np.testing.assert_allclose(df["r"], df["mu_pps"] / sol.M, rtol=1e-9)  # (16a)
    np.testing.assert_allclose(df["q"], 2 - 2 * (1 - df["r"]) ** df["p"], rtol=1e-10)  # (16b)
    np.testing.assert_allclose(df["mu_pps"], df["lambda_pps"] * (1 - df["r"]) ** df["p"], rtol=1e-10)  # (16c)
    np.testing.assert_allclose(df["throughput_pps"], df["lambda_pps"] * (1 - df["q"]), rtol=1e-10)  # (16d)
    D = sol.D
    np.testing.assert_allclose(df["lambda_pps"], np.sqrt(1.5 / df["q"]) / (0.006 + D), rtol=1e-10)  # Floyd-Fall
    # a given p0 reproduces the saturating solution
    again = solve_chokew(cls, p0=sol.p0).require()
    np.testing.assert_allclose(again.classes["throughput_pps"], df["throughput_pps"], rtol=1e-8)


@pytest.mark.parametrize("n,queue", [(10, 150.0), (100, 150.0), (60, 20.0)])
def test_p4_equal_flows_get_equal_shares(n, queue):
    P = ChokewParams(queue=queue)
    sol = solve_chokew([tcp("a", n, 1.5), tcp("b", n, 1.5), tcp("c", n, 3.0)], P).require()
    a, b = row(sol, "a"), row(sol, "b")
    for col in ("r", "q", "throughput_pps"):
        assert a[col] == pytest.approx(b[col], rel=1e-9)
    # splitting a class into two identical halves changes nothing per flow
    merged = solve_chokew([tcp("ab", 2 * n, 1.5), tcp("c", n, 3.0)], P).require()
    assert row(merged, "ab")["throughput_pps"] == pytest.approx(a["throughput_pps"], rel=1e-8)
    assert merged.p0 == pytest.approx(sol.p0, rel=1e-8)


@pytest.mark.parametrize("n1,n2", [(50, 50), (25, 75), (100, 100)])
@pytest.mark.parametrize("w2", [1.5, 2.0, 4.0])
def test_p6_larger_weight_gives_larger_per_flow_share(n1, n2, w2):
    sol = solve_chokew([tcp("lo", n1, 1.0), tcp("hi", n2, w2)]).require()
    assert row(sol, "hi")["throughput_share"] > row(sol, "lo")["throughput_share"]
    # raising the weight further raises that class's share and lowers the other's
    more = solve_chokew([tcp("lo", n1, 1.0), tcp("hi", n2, w2 * 1.25)]).require()
    assert row(more, "hi")["throughput_share"] > row(sol, "hi")["throughput_share"]
    assert row(more, "lo")["throughput_share"] < row(sol, "lo")["throughput_share"]


def test_weight_order_holds_across_many_levels():
    sol = solve_chokew([tcp(f"w{w}", 25, w) for w in (1.0, 1.5, 2.0, 2.5)]).require()
    shares = sol.classes["throughput_share"].to_numpy()
    assert np.all(np.diff(shares) > 0)


@pytest.mark.parametrize("capacity", [12_500.0, 125_000.0])
@pytest.mark.parametrize("rtts", [(0.01, 0.2), (0.006, 0.15), (0.05, 0.1)])
def test_p5_shorter_rtt_gains_less_than_its_rate_factor(rtts, capacity):
    """Equal weights, alpha_i > alpha_j: 1 < (lambda'_i / lambda'_j) < alpha_i / alpha_j, in the regime
    the model is made for (drop probabilities well below 1: windows of several packets)."""
    P = ChokewParams(capacity=capacity, queue=10.0)
    sol = solve_chokew([tcp("short", 50, 1, rtts[0]), tcp("long", 50, 1, rtts[1])], P).require()
    assert sol.classes["q"].max() < 0.5
    ratio = row(sol, "short")["throughput_pps"] / row(sol, "long")["throughput_pps"]
    alpha_ratio = (rtts[1] + P.D) / (rtts[0] + P.D)
    assert 1 < ratio < alpha_ratio


def test_p5_order_reverses_when_drops_are_heavy():
    """Documented limit of (16a)-(16d) with the Floyd-Fall law: when q approaches 1 (windows below
    one packet, e.g. 100 flows on 1 Mb/s), the factor (1 - q) dominates and the short-RTT flows end
    up with *less* throughput than the long-RTT ones. Not a solver artefact: the equations hold."""
    P = ChokewParams(capacity=125.0, queue=10.0)
    sol = solve_chokew([tcp("short", 50, 1, 0.01), tcp("long", 50, 1, 0.2)], P).require()
    assert row(sol, "short")["q"] > 0.9
    assert row(sol, "short")["throughput_pps"] < row(sol, "long")["throughput_pps"]


def test_throughput_falls_as_p0_grows():
    sweep = chokew_p0_sweep([tcp("a", 50, 1), tcp("b", 50, 2)], np.geomspace(0.1, 200, 12))
    util = sweep.drop_duplicates("p0")["utilisation"].to_numpy()
    assert np.all(np.diff(util) < 0)
    for _, g in sweep.groupby("class"):
        assert np.all(np.diff(g["q"].to_numpy()) > 0)


def test_exact_entry_probability_keeps_the_properties():
    P = ChokewParams(eta="exact")
    sol = solve_chokew([tcp("a", 50, 1), tcp("b", 50, 1), tcp("c", 50, 2)], P).require()
    assert sol.utilisation == pytest.approx(1.0, rel=1e-9)
    assert row(sol, "a")["throughput_pps"] == pytest.approx(row(sol, "b")["throughput_pps"], rel=1e-9)
    assert row(sol, "c")["throughput_pps"] > row(sol, "a")["throughput_pps"]


# ----------------------------------------------------------------------------- domain and errors


def test_high_rate_unresponsive_flow_is_reported_as_starved():
    cls = [tcp("a", 50, 1), tcp("b", 50, 2), FlowClass("udp", 2, 2, rate=1250.0)]
    sol = solve_chokew(cls).require()
    assert not sol.in_domain and sol.starved == ["udp"]
    u = row(sol, "udp")
    assert u["starved"] and u["q"] >= 1 and u["throughput_pps"] == 0
    assert u["r"] >= u["r_starve"] and u["p"] >= u["p_bound"]
    for name in ("a", "b"):
        t = row(sol, name)
        assert not t["starved"] and t["r"] < t["r_starve"]
    assert "udp" in sol.message and "starved" in sol.message


def test_moderate_unresponsive_flow_is_in_domain():
    sol = solve_chokew([tcp("a", 20, 1), FlowClass("udp", 1, 1, rate=5.0)], ChokewParams(queue=20)).require()
    assert sol.in_domain
    assert 0 < row(sol, "udp")["throughput_pps"] < 5.0


def test_too_little_traffic_to_saturate_is_reported():
    sol = solve_chokew([FlowClass("u1", 1, 1, rate=10.0), FlowClass("u2", 1, 1, rate=10.0)])
    assert not sol.converged and "saturate" in sol.message
    with pytest.raises(Exception, match="saturate"):
        sol.require()


def test_bad_inputs():
    with pytest.raises(ParameterError, match="two flows"):
        solve_chokew([tcp("a", 1, 1)])
    with pytest.raises(ParameterError, match="unique"):
        solve_chokew([tcp("a", 5, 1), tcp("a", 5, 2)])
    with pytest.raises(ParameterError, match="exactly one of rtt"):
        FlowClass("x", 3, 1, rtt=0.1, rate=10)
    with pytest.raises(ParameterError, match="weight"):
        FlowClass("x", 3, 0, rtt=0.1)
    with pytest.raises(ParameterError, match="^eta"):
        ChokewParams(eta="taylor")
    with pytest.raises(ParameterError, match="^p0"):
        solve_chokew([tcp("a", 5, 1), tcp("b", 5, 1)], p0=0)
