"""RAQM stability analysis (spec models.md §4): R1-R4, Theorem 1 as a per-step property, and the
iteration's convergence below the bound and non-convergence well above it."""

import math

import numpy as np
import pytest

from aqmlab.models import (
    ParameterError,
    adaptive_map,
    alpha_hat,
    c_of_x,
    iterate_raqm,
    static_map,
    unstable_band,
)


def test_r1_design_constant():
    assert c_of_x(0.5) == pytest.approx(4 * math.log(3), rel=1e-14)
    assert c_of_x(1.5) == pytest.approx(c_of_x(0.5), rel=1e-14)
    assert c_of_x(1 - 1e-6) == pytest.approx(4, abs=1e-9)
    assert c_of_x(1 + 1e-6) == pytest.approx(4, abs=1e-9)
    assert c_of_x(1.0) == 4.0
    x = np.concatenate([np.linspace(0.001, 0.999, 500), np.linspace(1.001, 1.999, 500)])
    c = c_of_x(x)
    assert np.all(c > 4)
    np.testing.assert_allclose(c_of_x(2 - x), c, rtol=1e-12)  # symmetric about 1
    # near 1 the series branch and the closed form meet smoothly
    d = np.array([0.99e-4, 1.01e-4])
    np.testing.assert_allclose(c_of_x(1 - d), 2 * np.log((1 + d) / (1 - d)) / d, rtol=1e-12)
    assert c_of_x(1e-6) > 25 and c_of_x(1e-12) > 50 and c_of_x(2 - 1e-12) > 50  # unbounded at the ends
    with pytest.raises(ParameterError):
        c_of_x(2.0)


def test_alpha_hat_is_equation_11():
    r0 = 1.25e6  # bytes/s, 10 Mb/s
    for x in (0.2, 0.7, 1.3, 1.9):
        rk = x * r0
        eq11 = (math.log(2 * r0 - rk) - math.log(rk)) / (0.5 * (r0 - rk))
        assert alpha_hat(rk, r0) == pytest.approx(eq11, rel=1e-12)
        assert alpha_hat(rk, r0) == pytest.approx(c_of_x(x) / r0, rel=1e-12)
        # alpha_hat is the gain for which the next rate is exactly 2 r0 - r_k
        nxt = static_map(x, alpha_hat(rk, r0) * r0)
        assert nxt == pytest.approx(2 - x, rel=1e-12)


@pytest.mark.parametrize("m", [0.5, 1, 2, 3, 3.9])
@pytest.mark.parametrize("x0", [0.1, 0.5, 1.5, 1.9])
def test_r2_static_gain_below_four_converges(m, x0):
    t = iterate_raqm(x0, m=m, steps=1500)
    assert t.converged, t.message
    assert abs(t.steps["x"].iloc[-1] - 1) < 1e-6


@pytest.mark.parametrize("x0", [0.5, 1.5])
def test_r2_static_gain_above_four_does_not_converge(x0):
    t = iterate_raqm(x0, m=4.5, steps=1500)
    assert not t.converged and t.outcome == "oscillating"
    with pytest.raises(Exception, match="did not converge"):
        t.require()
    # it settles on the 2-cycle x <-> 2 - x whose ends are where alpha = alpha_hat
    lo, hi = unstable_band(4.5)
    tail = np.sort(t.steps["x"].iloc[-2:].to_numpy())
    np.testing.assert_allclose(tail, [lo, hi], rtol=1e-6)
    assert c_of_x(lo) == pytest.approx(4.5, rel=1e-10)


def test_converges_below_alpha_hat_and_not_well_above_it():
    """The brief's property: with alpha < alpha_hat at every visited rate the loop converges; with
    alpha well above alpha_hat (at the start and near r0) it does not."""
    x0 = 1.5
    ah = float(c_of_x(x0))  # alpha_hat * r0 at the start
    below = iterate_raqm(x0, m=0.85 * ah, steps=2000)  # 3.74 < 4 <= alpha_hat everywhere
    assert below.converged
    st = below.steps.dropna(subset=["alpha_hat"])
    assert (st["alpha"] < st["alpha_hat"]).all()
    for factor in (1.5, 2.0, 3.0):
        above = iterate_raqm(x0, m=factor * ah, steps=2000)
        assert not above.converged, factor
    for eps in (0.3, 0.6, 0.9, 0.99):
        assert iterate_raqm(x0, epsilon=eps, steps=3000).converged, eps
    for eps in (1.0, 1.5, 2.0):
        assert not iterate_raqm(x0, epsilon=eps, steps=3000).converged, eps


def test_theorem1_sign_of_the_lyapunov_step_follows_alpha_versus_alpha_hat():
    rng = np.random.default_rng(7)
    for _ in range(400):
        x = rng.uniform(0.02, 1.98)
        if abs(x - 1) < 1e-3:
            continue
        m = rng.uniform(0.1, 12)
        nxt = static_map(x, m)
        dV = (nxt - 1) ** 2 - (x - 1) ** 2
        ah = c_of_x(x)
        if m < ah * (1 - 1e-9):
            assert dV < 0, (x, m)
        elif m > ah * (1 + 1e-9):
            assert dV > 0, (x, m)
    # beyond x = 2 every positive gain shrinks V (derived in the spec)
    for x in (2.0, 2.5, 4.0):
        for m in (0.1, 1, 5, 20):
            assert (static_map(x, m) - 1) ** 2 < (x - 1) ** 2


def test_r3_literal_iteration_reproduces_the_closed_form_maps():
    r0, eta_h = 1.25e6, 3.7e4  # arbitrary: they cancel out of x
    for m in (1.0, 3.0, 4.5):
        t = iterate_raqm(0.3, m=m, steps=30, r0=r0, eta_h=eta_h)
        x = [0.3]
        for _ in range(29):
            x.append(float(static_map(x[-1], m)))
        np.testing.assert_allclose(t.steps["x"], x, rtol=1e-9)
    for eps in (0.5, 0.9):
        t = iterate_raqm(1.7, epsilon=eps, steps=30, r0=r0, eta_h=eta_h)
        x = [1.7]
        for _ in range(29):
            x.append(float(adaptive_map(x[-1], eps)))
        np.testing.assert_allclose(t.steps["x"], x, rtol=1e-9)


@pytest.mark.parametrize("eps", [0.2, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("x0", [0.05, 0.5, 1.2, 1.95])
def test_r4_adaptive_gain_below_one_decreases_v_at_every_step(eps, x0):
    st = iterate_raqm(x0, epsilon=eps, steps=400).steps
    live = st[st["V"] > 1e-24]  # once V reaches rounding level, it can only jitter
    assert (live["dV"].dropna() < 0).all()


@pytest.mark.parametrize("eps", [1.05, 1.5])
@pytest.mark.parametrize("x0", [0.3, 1.5])
def test_r4_adaptive_gain_above_one_increases_v_at_the_first_step(eps, x0):
    st = iterate_raqm(x0, epsilon=eps, steps=5).steps
    assert st["dV"].iloc[0] > 0


def test_monotone_or_oscillatory_convergence():
    for x0 in (0.5, 1.5):
        e = iterate_raqm(x0, m=1.0, steps=200).steps["x"].to_numpy() - 1
        e = e[np.abs(e) > 1e-12]
        assert np.all(np.sign(e) == np.sign(e[0]))  # no overshoot
        e = iterate_raqm(x0, m=3.0, steps=200).steps["x"].to_numpy()[5:] - 1
        e = e[np.abs(e) > 1e-12]
        assert np.all(np.sign(e[1:]) != np.sign(e[:-1]))  # alternates around r0
    # linearised factor 1 - m/2: the error shrinks by |1 - m/2| per period near r0
    e = np.abs(iterate_raqm(1.01, m=3.5, steps=40).steps["x"].to_numpy() - 1)
    assert e[30] / e[29] == pytest.approx(0.75, rel=1e-3)


def test_interval_zero_two_is_invariant_for_static_gains_below_four():
    x = np.linspace(0.001, 1.999, 999)
    for m in (0.5, 2, 3.5, 3.99):
        y = x.copy()
        for _ in range(50):
            y = static_map(y, m)
            assert np.all((y > 0) & (y < 2))


def test_measurement_filter_still_converges():
    assert iterate_raqm(1.5, epsilon=0.9, f_prime=0.1, steps=500).converged
    assert iterate_raqm(0.4, m=2.0, f_prime=0.5, steps=500).converged


def test_unstable_band():
    assert unstable_band(3.9) is None and unstable_band(4.0) is None
    lo, hi = unstable_band(6.0)
    assert lo + hi == pytest.approx(2.0)
    assert c_of_x(lo) == pytest.approx(6.0, rel=1e-10)


def test_bad_arguments():
    with pytest.raises(ParameterError, match="exactly one"):
        iterate_raqm(1.5, m=1, epsilon=0.5)
    with pytest.raises(ParameterError, match="exactly one"):
        iterate_raqm(1.5)
    with pytest.raises(ParameterError, match="^x_start"):
        iterate_raqm(0, m=1)
    with pytest.raises(ParameterError, match="^f_prime"):
        iterate_raqm(1.5, m=1, f_prime=1.0)
