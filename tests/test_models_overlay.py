"""Reading simulation results for the model overlays: run directories, the M10 spatial distribution
from queue snapshots (synthetic files: the AQM library's snapshot option is pending), and figures."""

import json

import numpy as np
import pandas as pd
import pytest

from aqmlab.models import (
    ChokeParams,
    RunDataError,
    read_run,
    run_point,
    solve_choke,
    spatial_distribution,
    sweep_points,
)
from aqmlab.models.plots import plot_choke_profile, plot_choke_sweep, save_figure


def write_run(d, *, x0_pps, udp_share, N=32, c_bps=1e6, queue_mean=120.0, rtt=0.1, window=100.0,
              pkt=1000, snapshots=None, aqm='type = "choke"\nmin_th = 20.0\nmax_th = 520.0\nmax_p = 0.5',
              limit=1000):
    """A minimal run directory in the format of `aqmlab run` (docs/metrics.md); ``aqm=None`` leaves
    out scenario.toml (a folder written by hand or by an older aqmlab)."""
    d.mkdir(parents=True)
    if aqm is not None:
        (d / "scenario.toml").write_text(f'[bottleneck]\nrate = {c_bps!r}\nlimit = {limit}\nqueue_unit = "packets"\n'
                                         f'\n[bottleneck.aqm]\n{aqm}\n')
    c_pps = c_bps / (8 * pkt)
    summary = {
        "scenario": {"name": d.name, "seed": 1, "duration_s": window, "warmup_s": 0.0, "window_s": window,
                     "flows": N + 1},
        "bottleneck": {"aqm": "choke", "capacity_bps": c_bps, "queue_mean_pkts": queue_mean,
                       "delay_mean_s": queue_mean / c_pps, "limit": 1000},
    }
    (d / "summary.json").write_text(json.dumps(summary))
    tcp_share = (1 - udp_share) / N
    rows = [{"flow_id": i, "group": "tcp", "transport": "tcp", "app": "bulk", "priority": 1 + i % 2,
             "rtt_prop_s": rtt, "share": tcp_share, "throughput_bps": tcp_share * c_bps,
             "sent_pkts": tcp_share * c_pps * window * 1.1, "sent_bytes": tcp_share * c_pps * window * 1.1 * pkt,
             "drops_total": 5.0, "bneck_arrivals": 100.0} for i in range(N)]
    rows.append({"flow_id": N, "group": "udp", "transport": "udp", "app": "cbr", "priority": 2,
                 "rtt_prop_s": rtt, "share": udp_share, "throughput_bps": udp_share * c_bps,
                 "sent_pkts": x0_pps * window, "sent_bytes": x0_pps * window * pkt,
                 "drops_total": x0_pps * window * (1 - udp_share * c_pps / x0_pps),
                 "bneck_arrivals": x0_pps * window})
    pd.DataFrame(rows).to_csv(d / "flows.csv", index=False)
    pd.DataFrame({"time_s": [0.0, 1.0], "queue_pkts": [0.0, queue_mean]}).to_csv(d / "timeseries.csv", index=False)
    if snapshots is not None:
        snapshots.to_csv(d / "queue_snapshots.csv", index=False)
    return d


def snapshots_from(rows):
    """rows: list of (t, [transport of the packet at position 0 (tail), 1, ...])."""
    out = []
    for t, pkts in rows:
        if not pkts:
            out.append({"time_s": t, "position_from_tail": None, "flow_id": None, "transport": None})
        for i, tr in enumerate(pkts):
            out.append({"time_s": t, "position_from_tail": i, "flow_id": 0 if tr == "udp" else 1, "transport": tr})
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- M10


def test_spatial_distribution_of_a_known_queue():
    # every snapshot: 10 packets, the 4 nearest the tail are UDP
    snaps = snapshots_from([(t, ["udp"] * 4 + ["tcp"] * 6) for t in (0.1, 0.2, 0.3)])
    rho = spatial_distribution(snaps, n_grid=101)
    assert rho.attrs["b_avg"] == 10 and rho.attrs["snapshots"] == 3
    y, r = rho["y"].to_numpy(), rho["rho_udp"].to_numpy()
    assert np.all(r[y < 4 - 1e-9] == 1) and np.all(r[y >= 4] == 0)


def test_spatial_distribution_rescales_snapshot_lengths_and_counts_empty_ones():
    # lengths 4, 8 and 0 (an empty queue): b_avg = 4; y is rescaled by b^j / b_avg per snapshot
    snaps = snapshots_from([(1.0, ["udp", "tcp", "tcp", "tcp"]),
                            (2.0, ["udp", "udp", "tcp", "tcp", "tcp", "tcp", "tcp", "tcp"]),
                            (3.0, [])])
    rho = spatial_distribution(snaps, n_grid=5)
    assert rho.attrs["b_avg"] == 4 and rho.attrs["snapshots"] == 3
    # y = 0: both non-empty snapshots have UDP at the tail -> 2/3; y = 1: index 1 of the first
    # (tcp) and index 2 of the second (tcp) -> 0; y = 4 (the head end, clamped) -> 0
    np.testing.assert_allclose(rho["rho_udp"], [2 / 3, 0, 0, 0, 0])
    # 1-based positions give the same answer
    one = snaps.copy()
    one["position_from_tail"] = one["position_from_tail"] + 1
    np.testing.assert_allclose(spatial_distribution(one, n_grid=5)["rho_udp"], rho["rho_udp"])


def test_spatial_distribution_recovers_a_model_profile_from_sampled_snapshots():
    sol = solve_choke(5 * 125.0, ChokeParams()).require()
    rng = np.random.default_rng(3)
    rows = []
    for j in range(400):
        n = int(round(sol.b + rng.integers(-10, 11)))
        y = (np.arange(n) + 0.5) * sol.b / n
        p = sol.profile_y(np.minimum(y, sol.b))["rho0"].to_numpy()
        rows.append((0.1 * j, ["udp" if u < q else "tcp" for u, q in zip(rng.random(n), p)]))
    rho = spatial_distribution(snapshots_from(rows), n_grid=50)
    model = sol.profile_y(np.minimum(rho["y"] * sol.b / rho.attrs["b_avg"], sol.b))["rho0"]
    assert np.max(np.abs(rho["rho_udp"].to_numpy() - model.to_numpy())) < 0.1
    assert rho["rho_udp"].iloc[:5].mean() > rho["rho_udp"].iloc[-5:].mean() + 0.3  # decreasing, x0 > x1


def test_bad_snapshot_files_are_reported():
    with pytest.raises(RunDataError, match="missing column"):
        spatial_distribution(pd.DataFrame({"t_s": [0.0], "transport": ["udp"]}))
    bad = snapshots_from([(0.1, ["udp", "tcp"])])
    bad["position_from_tail"] = ["x", "y"]
    with pytest.raises(RunDataError, match="integer"):
        spatial_distribution(bad)
    with pytest.raises(RunDataError, match="empty"):
        spatial_distribution(snapshots_from([(0.1, []), (0.2, [])]))


# ----------------------------------------------------------------------------- run directories


def test_run_point_reads_what_the_models_predict(tmp_path):
    d = write_run(tmp_path / "r1", x0_pps=250.0, udp_share=0.2, N=32)
    pt = run_point(read_run(d))
    assert pt["c_pps"] == pytest.approx(125.0) and pt["x0_pps"] == pytest.approx(250.0)
    assert pt["s"] == pytest.approx(2.0) and pt["udp_share"] == pytest.approx(0.2)
    assert pt["N"] == 32 and pt["tcp_share"] == pytest.approx(0.8) and pt["d"] == pytest.approx(0.1)
    assert pt["queue_mean"] == 120.0


def test_sweep_points_are_sorted_and_need_udp(tmp_path):
    ds = [write_run(tmp_path / f"r{i}", x0_pps=x, udp_share=0.1) for i, x in enumerate([500.0, 50.0, 125.0])]
    pts = sweep_points(ds)
    assert pts["x0_pps"].tolist() == [50.0, 125.0, 500.0]
    d = tmp_path / "noudp"
    write_run(d, x0_pps=10.0, udp_share=0.1)
    f = pd.read_csv(d / "flows.csv")
    f[f["transport"] == "tcp"].to_csv(d / "flows.csv", index=False)
    with pytest.raises(RunDataError, match="no UDP flow"):
        sweep_points([d])


def test_missing_or_incomplete_run_directories(tmp_path):
    with pytest.raises(RunDataError, match="no such run directory"):
        read_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDataError, match="summary.json is missing"):
        read_run(tmp_path / "empty")
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(RunDataError, match="not a directory"):
        read_run(f)


# ----------------------------------------------------------------------------- figures


def test_figures_with_simulation_overlay(tmp_path):
    from aqmlab.models import choke_sweep

    P = ChokeParams()
    dense = choke_sweep(np.geomspace(0.1, 10, 15) * P.c, P, perfect=True)
    ds = [write_run(tmp_path / f"r{i}", x0_pps=s * 125.0, udp_share=m, queue_mean=b)
          for i, (s, m, b) in enumerate([(0.5, 0.2, 110.0), (2.0, 0.22, 135.0), (10.0, 0.03, 140.0)])]
    fig = plot_choke_sweep(dense, sweep_points(ds))
    labels = [ln.get_label() for ln in fig.axes[1].get_lines()]
    assert "simulation" in labels and "CHOKe model" in labels
    out = save_figure(fig, tmp_path / "sweep.svg")
    assert out.read_text().lstrip().startswith("<?xml")
    sol = solve_choke(5 * P.c, P).require()
    snaps = snapshots_from([(0.1 * j, ["udp"] * 30 + ["tcp"] * 110) for j in range(5)])
    fig = plot_choke_profile([sol], {sol.x0: spatial_distribution(snaps)})
    assert any("simulation" in ln.get_label() for ln in fig.axes[0].get_lines())
    png = save_figure(fig, tmp_path / "profile.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(Exception, match="unknown file type"):
        save_figure(fig, tmp_path / "profile.bmp")
