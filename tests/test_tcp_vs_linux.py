"""The simulated TCPs against Linux's (docs/tcp-vs-linux.md): the bounded CI slice.

* The per-flow series (`simulation.flow_series_interval`) carries the congestion window, pacing
  rate, smoothed RTT and retransmissions in the simulator, and, from TCP_INFO sampled in the
  sender's namespace, in emulation (same columns; Linux's delivery rate besides).
* One short run of each of Reno (+ SACK), CUBIC and BBR alone, simulated and emulated through real
  namespaces, with the relations docs/tcp-vs-linux.md states as tolerances (about 40 s of wall time;
  skipped without root, like tests/test_emulate.py).
* The mapping of the scenario's bbr/dctcp/prague variants onto the kernel's modules (no privileges
  needed).
"""

import subprocess
import sys

import pytest

import aqmlab
from aqmlab.base.errors import PlanError
from aqmlab.emulate import privilege_problem
from aqmlab.emulate import plan as emuplan

NO_ROOT = privilege_problem()
needs_root = pytest.mark.skipif(NO_ROOT is not None, reason=f"emulation needs privileges: {NO_ROOT}")

# docs/tcp-vs-linux/alone.toml, shortened: one flow, 10 Mb/s, 44 ms RTT, 1000-packet DropTail
# buffer (27 BDPs; one BDP = 36.7 packets of 1500 bytes); 12 s, measured over the last 8 s
ALONE = """
name = "alone"
[simulation]
duration = "12s"
warmup = "4s"
flow_series_interval = "20ms"
[bottleneck]
rate = "10Mb/s"
delay = "20ms"
limit = 1000
aqm = {{ type = "droptail" }}
[access]
rate = "100Mb/s"
delay = "1ms"
[tcp]
preset = "modern"
mss = 1500
[[flows]]
name = "f"
transport = "tcp"
count = 1
tcp = {{ variant = "{variant}" }}
"""
BDP = 10e6 * 0.044 / (8 * 1500)  # packets
SERIES = ["time_s", "flow_id", "group", "transport", "throughput_bps", "goodput_bps", "cwnd", "pacing_rate_bps",
          "srtt_s", "retx_pkts"]


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "aqmlab.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


# ---------------------------------------------------------------------------- the simulator's series


def test_the_simulated_series_has_cwnd_pacing_rate_srtt_and_retransmissions():
    res = aqmlab.run(ALONE.format(variant="bbr"))
    fs = res.flow_series
    assert list(fs.columns) == SERIES
    assert len(fs) == 599  # samples at 20 ms, 40 ms, ... before 12 s
    late = fs[fs["time_s"] > 4]
    # BBR paces near the link rate and keeps the RTT near the base RTT
    assert 0.8 * 10e6 < late["pacing_rate_bps"].median() < 1.3 * 10e6
    assert 0.044 <= late["srtt_s"].median() < 0.044 + 2 * 0.044
    assert (fs["retx_pkts"].diff().dropna() >= 0).all()  # a running count
    assert fs["retx_pkts"].iloc[-1] >= res.flows["retx_pkts"].iloc[0]  # the window's count is part of it


def test_an_unpaced_sender_has_no_pacing_rate():
    fs = aqmlab.run(ALONE.format(variant="sack")).flow_series
    assert fs["pacing_rate_bps"].isna().all() and fs["cwnd"].notna().all()
    assert fs["srtt_s"].iloc[-1] > 0.3  # Reno fills the 1000-packet buffer


# ------------------------------------------------------------------------------ real namespaces


@pytest.fixture(scope="module")
def twins():
    """Each variant alone, simulated and emulated (seed 1): {variant: (sim, linux)}."""
    if NO_ROOT is not None:
        pytest.skip(f"emulation needs privileges: {NO_ROOT}")
    from aqmlab.emulate import emulate

    return {v: (aqmlab.run(ALONE.format(variant=v)), emulate(ALONE.format(variant=v)))
            for v in ("sack", "cubic", "bbr")}


@needs_root
def test_the_emulated_series_comes_from_tcp_info(twins):
    sim, emu = twins["bbr"]
    fs = emu.flow_series
    assert list(fs.columns) == SERIES + ["delivery_rate_bps"]
    assert 500 <= len(fs) <= 600  # every 20 ms from the connection on
    late = fs[fs["time_s"] > 4]
    assert late["cwnd"].min() > 4 and late["srtt_s"].min() >= 0.044
    assert 0.8 * 10e6 < late["pacing_rate_bps"].median() < 1.5 * 10e6  # BBR paces near the link rate
    assert 0.7 * 10e6 < late["delivery_rate_bps"].median() < 1.2 * 10e6
    assert late["goodput_bps"].mean() == pytest.approx(emu.flows["goodput_bps"].iloc[0], rel=0.1)


@needs_root
@pytest.mark.parametrize("variant", ["sack", "cubic", "bbr"])
def test_each_variant_fills_the_link_in_both(twins, variant):
    for res in twins[variant]:
        assert res.summary["bottleneck"]["utilisation"] > 0.9


@needs_root
def test_bbr_keeps_the_queue_under_two_bdps_in_both_cubic_and_reno_do_not(twins):
    for res in twins["bbr"]:
        assert res.summary["bottleneck"]["queue_mean_pkts"] < 2 * BDP
        assert res.summary["bottleneck"]["queue_max_pkts"] < 4 * BDP
    for v in ("sack", "cubic"):
        for res in twins[v]:
            assert res.summary["bottleneck"]["queue_mean_pkts"] > 5 * BDP


@needs_root
def test_reno_and_cubic_queues_agree_within_a_stated_factor(twins):
    """docs/tcp-vs-linux.md: Reno + SACK's and CUBIC's mean queue within 25 % of Linux's (the
    full-length runs agree within 1 % and 5 %; 8 s windows hold only a sawtooth or two)."""
    for v in ("sack", "cubic"):
        sim, emu = (r.summary["bottleneck"]["queue_mean_pkts"] for r in twins[v])
        assert sim == pytest.approx(emu, rel=0.25), v
        s, e = (r.flow_series for r in twins[v])
        assert s["cwnd"][s["time_s"] > 4].mean() == pytest.approx(e["cwnd"][e["time_s"] > 4].mean(), rel=0.25), v


# ----------------------------------------------------------------- the mapping of the variants


def _plan(variant: str) -> dict:
    import json

    from aqmlab import _core

    return json.loads(_core.emulation_plan(ALONE.format(variant=variant), "alone", [], None))


@pytest.mark.parametrize("variant, linux, sack", [("sack", "reno", True), ("reno", "reno", False),
                                                  ("newreno", "reno", False), ("cubic", "cubic", True),
                                                  ("bbr", "bbr", True)])
def test_each_variant_runs_as_the_kernels_module(monkeypatch, variant, linux, sack):
    monkeypatch.setattr(emuplan, "available_cc", lambda: ["reno", "cubic", "bbr"])
    g = emuplan.prepare(_plan(variant)).groups[0]
    assert (g.cc, g.sack) == (linux, sack)


@pytest.mark.parametrize("variant, why", [
    ("dctcp", "runs as Linux's 'dctcp', which is not offered by this kernel (available: reno cubic bbr; "
              "try `modprobe tcp_dctcp`)"),
    ("prague", "runs as Linux's 'prague', which is not offered by this kernel (available: reno cubic bbr; "
               "tcp_prague is an out-of-tree module"),
])
def test_a_variant_the_kernel_lacks_is_a_plan_error(monkeypatch, variant, why):
    monkeypatch.setattr(emuplan, "available_cc", lambda: ["reno", "cubic", "bbr"])
    with pytest.raises(PlanError) as e:
        emuplan.prepare(_plan(variant))
    assert str(e.value).startswith(f"flows[0].tcp.variant: '{variant}' {why}")
    monkeypatch.setattr(emuplan, "available_cc", lambda: ["reno", "cubic", "bbr", variant])
    assert emuplan.prepare(_plan(variant)).groups[0].cc == variant


@pytest.mark.parametrize("variant", ["dctcp", "prague"])
def test_the_command_line_says_so_in_one_line_and_exits_with_2(tmp_path, variant):
    if variant in emuplan.available_cc():
        pytest.skip(f"this kernel offers {variant}")
    p = tmp_path / "s.toml"
    p.write_text(ALONE.format(variant=variant))
    r = cli("emulate", p)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {p}: flows[0].tcp.variant: '{variant}' runs as Linux's '{variant}', "
                               "which is not offered by this kernel"), lines[0]
