"""CHOKe fluid model [TWL] (spec models.md §2): the theorems as properties of the numerical
solution over grids of N and x0, the closed forms, and failures that must be reported."""

import math

import numpy as np
import pytest
from scipy import optimize

from aqmlab.models import (
    ChokeParams,
    NotConvergedError,
    ParameterError,
    choke_min_flows,
    choke_sweep,
    equal_rate_x0,
    large_n_share,
    large_n_share_parametric,
    ode_profile,
    solve_choke,
    solve_perfect_choke,
)

C = 125.0
NS = [16, 32, 64, 128]
X0_REL = np.geomspace(0.01, 100, 13)  # 0.01c ... 100c


@pytest.fixture(scope="module")
def sweeps():
    """One continuation sweep per N over 0.01c..100c (the paper's c, d and RED otherwise)."""
    return {N: choke_sweep(X0_REL * C, ChokeParams(N=N)) for N in NS}


@pytest.fixture(scope="module")
def solutions():
    out = []
    for N in (16, 32, 128):
        P = ChokeParams(N=N)
        for s in (0.03, 0.3, 1.0, 3.0, 30.0):
            out.append(solve_choke(s * C, P).require())
    return out


def test_every_point_of_the_grid_is_solved_to_tight_residuals(sweeps):
    for N, df in sweeps.items():
        assert df["converged"].all(), (N, df.loc[~df["converged"], "message"].tolist())
        assert (df["residual"] < 1e-9).all()
        P = ChokeParams(N=N)
        assert ((df["b"] > P.min_th) & (df["b"] < P.max_th)).all()
        np.testing.assert_allclose(df["r"], P.k * (df["b"] - P.min_th), rtol=1e-12)
        np.testing.assert_allclose(df["tcp_share"] + df["mu0"], 1.0, rtol=1e-12)


# ----------------------------------------------------------------------------- Theorem 1


def test_theorem1_udp_holds_at_most_half_the_queue_for_every_x0(sweeps):
    for N, df in sweeps.items():
        assert (df["b0"] < df["b"] / 2).all(), N
        assert (df["h0"] <= (1 - df["r"]) / (2 - df["r"]) + 1e-12).all(), N  # the corrected bound
        assert (df["b1"] < df["b"] / 2).all(), N


def test_theorem1_udp_share_vanishes_as_x0_grows(sweeps):
    for N, df in sweeps.items():
        mu = df["mu0"].to_numpy()
        peak = int(np.argmax(mu))
        assert 0 < peak < len(mu) - 1, N  # rises, then falls
        assert np.all(np.diff(mu[peak:]) < 0), N
        assert mu[-1] < 1e-6, N
    # and further out the share keeps shrinking towards 0
    big = choke_sweep([100 * C, 300 * C, 1000 * C], ChokeParams())
    assert big["converged"].all() and np.all(np.diff(big["mu0"]) < 0) and big["mu0"].iloc[-1] < 1e-100


# ----------------------------------------------------------------------------- Theorem 2


def _slopes(x, y):
    return np.diff(y) / np.diff(x)


def test_theorem2_velocity_is_convex_and_decreasing_with_the_right_boundaries(solutions):
    for s in solutions:
        pr = s.profile(401)
        y, v = pr["y"].to_numpy(), pr["v"].to_numpy()
        k = _slopes(y, v)
        assert np.all(k < 0)
        scale = np.max(np.abs(k))
        assert np.all(np.diff(k) >= -1e-9 * scale)  # slopes increase: convex
        P = s.params
        v0 = (s.x0 * (1 - s.h0) + P.N * s.x1 * (1 - s.h1)) * (1 - s.r)
        assert v[0] == pytest.approx(v0, rel=1e-12)
        assert v[-1] == pytest.approx(P.c, rel=1e-9)
        assert y[-1] == pytest.approx(s.b, rel=1e-9)


def test_theorem2_remaining_delay_is_concave_and_decreasing(solutions):
    for s in solutions:
        pr = s.profile(401)
        y, tau = pr["y"].to_numpy(), pr["remaining_delay_s"].to_numpy()
        k = _slopes(y, tau)
        assert np.all(k < 0)
        assert np.all(np.diff(k) <= 1e-9 * np.max(np.abs(k)))  # slopes decrease: concave
        assert tau[0] == pytest.approx(s.tau, rel=1e-12) and tau[-1] == 0


def test_theorem2_rho0_increases_is_flat_or_decreases_as_x0_is_below_at_or_above_x1(sweeps):
    seen = {"below": 0, "above": 0}
    for N, df in sweeps.items():
        P = ChokeParams(N=N)
        for _, row in df.iterrows():
            s = solve_choke(row["x0"], P, guess=(row["b"], row["b0"], row["x1"], row["tau"])).require()
            d = np.diff(s.profile(201)["rho0"].to_numpy())
            if s.x0 < s.x1:
                assert np.all(d > 0), (N, s.x0)
                seen["below"] += 1
            else:
                assert np.all(d < 0), (N, s.x0)
                seen["above"] += 1
    assert seen["below"] >= 4 and seen["above"] >= 4  # the grid covers both cases
    for N in (16, 32, 128):
        s = equal_rate_x0(ChokeParams(N=N))
        assert s.x0 == pytest.approx(s.x1, rel=1e-10)
        rho = s.profile(201)["rho0"].to_numpy()
        assert np.ptp(rho) < 1e-9
        # linear velocity in this case (Theorem 2.1: v is linear iff x0 = x1)
        pr = s.profile(201)
        k = _slopes(pr["y"].to_numpy(), pr["v"].to_numpy())
        assert np.ptp(k) < 1e-7 * np.max(np.abs(k))


# ----------------------------------------------------------------------------- closed forms and cross-checks


@pytest.mark.parametrize("x0_rel", [0.1, 1.0, 10.0])
def test_closed_form_agrees_with_integrating_the_odes(x0_rel):
    s = solve_choke(x0_rel * C, ChokeParams()).require()
    o = ode_profile(s, rtol=1e-11, atol=1e-13)
    assert o["ok"]
    assert o["v_head"] == pytest.approx(C, rel=1e-8)
    assert o["rho0_head"] == pytest.approx(s.mu0, rel=1e-7, abs=1e-12)
    assert o["tau"] == pytest.approx(s.tau, rel=1e-8)
    assert o["b0"] == pytest.approx(s.b0, rel=1e-8)
    # and along the queue
    y = np.linspace(0, s.b, 9)
    o = ode_profile(s, rtol=1e-11, atol=1e-13, y_eval=y)
    closed = s.profile_y(y)
    np.testing.assert_allclose(o["profile"]["rho0"], closed["rho0"], rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(o["profile"]["v"], closed["v"], rtol=1e-8)


def test_profile_on_positions_inverts_the_time_parametrisation():
    s = solve_choke(2 * C, ChokeParams()).require()
    y = np.linspace(0, s.b, 17)
    np.testing.assert_allclose(s.profile_y(y)["y"], y, rtol=0, atol=1e-9 * s.b)
    with pytest.raises(ParameterError):
        s.profile_y([s.b * 1.1])


def test_first_order_beta_makes_the_throughput_balance_exact():
    for x0_rel in (0.1, 1.0, 10.0, 100.0):
        s = solve_choke(x0_rel * C, ChokeParams(beta_mode="first_order")).require()
        assert abs(s.D0) < 1e-9 * s.x0
        assert abs(s.D1) < 1e-9 * s.x1


def test_exact_beta_balance_error_is_of_order_one_over_b(sweeps):
    df = sweeps[32]
    assert (df["D0"].abs() <= df["x0"] / df["b"]).all()
    assert (df["D1"].abs() <= df["x1"] / df["b"]).all()


def test_large_n_limit_reproduces_the_solver():
    """§2.9: scale N, c and the thresholds by K = 100; the one-equation limit with the solver's r
    gives the solver's UDP share to about 1e-4."""
    K = 100
    P = ChokeParams(N=32 * K, c=C * K, min_th=20 * K, max_th=520 * K)
    for s_ in (0.3, 1.0, 3.0):
        sol = solve_choke(s_ * P.c, P).require()
        assert sol.mu0 == pytest.approx(large_n_share(s_, sol.r), abs=1e-4)


def test_large_n_limit_without_red_peaks_at_one_over_e_plus_one():
    res = optimize.minimize_scalar(lambda s: -large_n_share(s, 0.0), bounds=(0.5, 3.0), method="bounded",
                                   options={"xatol": 1e-10})
    assert -res.fun == pytest.approx(1 / (math.e + 1), abs=1e-12)
    assert res.x == pytest.approx((2 * math.e - 1) / (math.e + 1), abs=1e-4)
    z = np.array([1.1, 2.0, math.e, 5.0, 20.0])
    s, mu = large_n_share_parametric(z)
    np.testing.assert_allclose([large_n_share(v, 0.0) for v in s], mu, rtol=1e-10)
    assert large_n_share(1000.0, 0.0) < 1e-200  # and the share vanishes


def test_smallest_n_for_which_choke_stays_active():
    n = choke_min_flows(125, 0.1, 20)
    assert n == pytest.approx(8.43, abs=0.005)
    assert n ** 3 - n ** 2 == pytest.approx((125 * 0.1 + 20) ** 2 / 2)


def test_perfect_choke_udp_share_tends_to_one_half():
    P = ChokeParams()
    shares = [solve_perfect_choke(s * C, P).require().mu0 for s in (0.1, 1, 10, 100, 1000)]
    assert np.all(np.diff(shares) > 0)
    assert 0.49 < shares[-1] < 0.5
    # the leaky buffer matters: real CHOKe gives UDP much less at high rates
    assert solve_choke(10 * C, P).require().mu0 < shares[2] / 10


def test_continuation_does_not_change_the_answer():
    xs = [0.05 * C, 0.7 * C, 4 * C, 40 * C]
    a = choke_sweep(xs, ChokeParams())
    b = choke_sweep(xs[::-1], ChokeParams()).iloc[::-1].reset_index(drop=True)
    np.testing.assert_allclose(a["mu0"], b["mu0"], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(a["b"], b["b"], rtol=1e-10)
    for x, row in zip(xs, a.itertuples()):
        assert solve_choke(x, ChokeParams()).b == pytest.approx(row.b, rel=1e-10)


# ----------------------------------------------------------------------------- failures


def test_too_few_flows_is_reported_as_no_equilibrium():
    s = solve_choke(C, ChokeParams(N=2))
    assert not s.converged
    assert math.isnan(s.b) and math.isnan(s.mu0)
    assert "not permanently active" in s.message and "8.43" in s.message
    with pytest.raises(NotConvergedError, match="not permanently active"):
        s.require()


def test_backlog_beyond_max_th_is_reported():
    s = solve_choke(C, ChokeParams(N=1000))
    assert not s.converged and "max_th" in s.message


def test_sweep_keeps_failed_rates_as_empty_rows():
    df = choke_sweep([0.01 * C, C], ChokeParams(N=10))
    assert df["converged"].tolist() == [False, True]
    assert math.isnan(df.loc[0, "mu0"]) and "min_th" in df.loc[0, "message"]


@pytest.mark.parametrize("kw", [{"N": 0}, {"N": 2.5}, {"c": 0}, {"d": -1}, {"max_th": 10},
                                {"max_p": 1.5}, {"max_p": 0}, {"beta_mode": "other"}])
def test_bad_parameters_are_rejected_by_name(kw):
    name = next(iter(kw))
    with pytest.raises(ParameterError, match=f"^{name}:"):
        ChokeParams(**kw)


def test_bad_rates_are_rejected():
    with pytest.raises(ParameterError, match="^x0:"):
        solve_choke(0.0)
    with pytest.raises(ParameterError, match="^x0:"):
        choke_sweep([1.0, -2.0])
