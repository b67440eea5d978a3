"""ns-2.35 as a second engine (aqmlab.ns2; docs/crosscheck.md): the translator's mappings and
refusals (no ns needed), the trace reader's accounting on a synthetic trace, and end-to-end runs
and the ``aqmlab crosscheck ns2`` command (with ns-2.35 installed: skipped without it locally, a
failure on CI, where .ci/run installs it)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aqmlab.base.errors import ScenarioError, SimulationError
from aqmlab.ns2 import available, make_plan, write_script
from aqmlab.ns2.plan import CANNOT, ns2_seed
from aqmlab.ns2.trace import read_trace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "dumbbell-red.toml"

HAVE_NS = available()
if not HAVE_NS and os.environ.get("CI") == "true":
    # CI installs ns2 (.ci/run): a missing `ns` there is a failure, not a reason to skip
    pytest.fail("CI=true but ns-2.35's `ns` is not installed (apt-get install ns2)", pytrace=False)
needs_ns = pytest.mark.skipif(not HAVE_NS, reason="ns-2.35 (`ns`) is not installed: apt-get install ns2")

BASE = """
name = "t"
[simulation]
duration = "20s"
warmup = "5s"
seed = 3
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 60
aqm = { type = "red", min_th = 10, max_th = 30, w_q = 0.002, max_p = 0.1, gentle = true, variant = "ns2" }
[[flows]]
name = "tcp"
transport = "tcp"
count = 3
tcp = { variant = "reno" }
[[flows]]
name = "udp"
transport = "udp"
rate = "300kb/s"
"""


def plan(*overrides, text=BASE, seed=None):
    return make_plan(text, seed, list(overrides))


def settings(obj) -> dict:
    return dict(obj)


# ----------------------------------------------------------------------------- mappings


def test_droptail_holds_the_same_waiting_packets():
    # ns-2's DropTail refuses when length + 1 >= limit_ (drop-tail.cc): limit_ = L + 1 for L waiting
    p = plan('bottleneck.aqm={ type = "droptail" }')
    q = p.links[0].queue
    assert (q.kind, q.limit) == ("DropTail", 61)
    b = plan('bottleneck.aqm={ type = "droptail" }', "bottleneck.queue_unit=bytes", "bottleneck.limit=60000")
    assert b.links[0].queue.limit == 60001 and ("mean_pktsize_", "1") in b.links[0].queue.settings
    # access links: DropTail of [access].limit waiting packets
    assert {l.queue.limit for l in p.links if l.name == "access"} == {10001}


def test_red_maps_every_knob_of_the_ns2_variant():
    p = plan('bottleneck.aqm={ type = "red", min_th = 12, max_th = 36, w_q = 0.02, max_p = 0.25, gentle = false, '
             'variant = "ns2", mean_pkt_size = 700 }')
    q = p.links[0].queue
    s = settings(q.settings)
    assert (q.kind, q.limit) == ("RED", 60)  # RED refuses when the queue is at limit_: L
    assert (s["thresh_"], s["maxthresh_"], s["q_weight_"], s["linterm_"]) == ("12", "36", "0.02", "4")
    assert (s["gentle_"], s["wait_"], s["queue_in_bytes_"], s["bytes_"], s["mean_pktsize_"]) == \
        ("false", "true", "false", "false", "700")
    assert q.state == (("aqm_avg", "ave_"),)


def test_red_in_bytes_counts_thresholds_and_limit_in_mean_size_packets():
    p = plan('bottleneck.aqm={ type = "red", min_th = 10000, max_th = 30000, variant = "ns2", mode = "byte", '
             'max_pkt_size = 1000, mean_pkt_size = 1000 }', "bottleneck.queue_unit=bytes", "bottleneck.limit=60000",
             'flows[1].packet_size=1000')
    q = p.links[0].queue
    s = settings(q.settings)
    assert (q.limit, s["thresh_"], s["maxthresh_"], s["queue_in_bytes_"], s["bytes_"]) == (60, "10", "30", "true",
                                                                                          "true")


def test_pi_and_rem():
    pi = plan('bottleneck.aqm={ type = "pi", q_ref = 20, a = 0.0001, b = 0.00009, w = 100 }').links[0].queue
    s = settings(pi.settings)
    assert (pi.kind, pi.limit, s["qref_"], s["a_"], s["b_"], s["w_"]) == ("PI", 60, "20", "0.0001", "9e-05", "100")
    rem = plan('bottleneck.aqm={ type = "rem", b0 = 25, gamma = 0.002, phi = 1.002, t_upd = "4ms", inw = 0.5, '
               'mean_pkt_size = 1000 }').links[0].queue
    s = settings(rem.settings)
    # REM enqueues, then drops when the queue is at limit_: L + 1
    assert (rem.kind, rem.limit, s["pbo_"], s["gamma_"], s["phi_"], s["pupdtime_"], s["inw_"],
            s["mean_pktsize_"]) == ("REM", 61, "25", "0.002", "1.002", "0.004", "0.5", "1000")


@pytest.mark.parametrize("variant, agent, sink", [
    ("reno", "Agent/TCP/Reno", "Agent/TCPSink"), ("newreno", "Agent/TCP/Newreno", "Agent/TCPSink"),
    ("sack", "Agent/TCP/Sack1", "Agent/TCPSink/Sack1"), ("vegas", "Agent/TCP/Vegas", "Agent/TCPSink")])
def test_tcp_agents_get_the_preset_values_explicitly(variant, agent, sink):
    p = plan(f'flows[0].tcp={{ variant = "{variant}", min_rto = "1s", initial_rto = "6s", max_rto = "100000s" }}')
    f = p.flows[0]
    s = settings(f.settings)
    assert (f.agent, f.sink) == (agent, sink)
    # (ns-2.1b9's values: minimum RTO 1 s, initial 6 s, maximum 100000 s; tcp/presets.rs)
    assert (s["minrto_"], s["rtxcur_init_"], s["maxrto_"], s["tcpTick_"]) == ("1", "6", "100000", "0.01")
    assert (s["windowInit_"], s["window_"], s["packetSize_"], s["maxburst_"], s["syn_"], s["useHeaders_"]) == \
        ("2", "1000", "1000", "0", "false", "false")
    assert s["singledup_"] == ("0" if variant == "vegas" else "1")
    assert settings(f.sink_settings)["packetSize_"] == "40"
    if variant == "vegas":
        assert (s["v_alpha_"], s["v_beta_"], s["v_gamma_"]) == ("1", "3", "1")


def test_newreno_partial_ack_options_are_written_explicitly():
    # ns-2.35's defaults (1, 1) and the ns-2 releases before 2003/05/06 (0, 0; tcp/presets.rs)
    s = settings(plan('flows[0].tcp={ variant = "newreno" }').flows[0].settings)
    assert (s["newreno_changes1_"], s["partial_window_deflation_"]) == ("1", "1")
    old = 'flows[0].tcp={ variant = "newreno", newreno_impatient = false, partial_window_deflation = false }'
    s = settings(plan(old).flows[0].settings)
    assert (s["newreno_changes1_"], s["partial_window_deflation_"]) == ("0", "0")
    assert "newreno_changes1_" not in settings(plan('flows[0].tcp={ variant = "reno" }').flows[0].settings)


def test_delayed_acks_use_the_delack_sink():
    f = plan('flows[0].tcp={ variant = "newreno", delayed_ack = true, delack_timeout = "200ms" }').flows[0]
    assert f.sink == "Agent/TCPSink/DelAck" and settings(f.sink_settings)["interval_"] == "0.2"


def test_udp_sources_and_starts_and_seed():
    p = plan("flows[1].count=2", 'flows[1].start={ uniform = ["0s", "2s"] }')
    u = [f for f in p.flows if f.transport == "udp"]
    assert u[0].source == "Application/Traffic/CBR" and settings(u[0].source_settings)["rate_"] == "300000"
    # the start times are aqmlab's own draws
    import aqmlab

    res = aqmlab.run(BASE, overrides=["flows[1].count=2", 'flows[1].start={ uniform = ["0s", "2s"] }'])
    assert [f.start_ns / 1e9 for f in p.flows] == pytest.approx(list(res.flows["start_s"]), abs=1e-9)
    assert p.ns2_seed == ns2_seed(3) == 4 and ns2_seed(0) == 1 and ns2_seed((1 << 31) - 2) == 1
    on = plan('flows[1]={ name = "udp", transport = "udp", app = "onoff", rate = "1Mb/s", on_time = "1s", '
              'off_time = "2s", distribution = "pareto", shape = 1.4 }')
    f = on.flows[-1]
    assert f.source == "Application/Traffic/Pareto"
    assert settings(f.source_settings)["shape_"] == "1.4" and on.notes and "ON/OFF" in on.notes[0]


def test_the_script_sets_every_value_and_traces_only_what_is_read():
    p = plan()
    s = write_script(p)
    assert "$defaultRNG seed 4" in s
    assert "$a set minrto_ 0.2" in s and "$a set syn_ false" in s
    assert "$q set thresh_ 10" in s and "$ns queue-limit $n(0) $n(1) 60" in s
    assert "aq_trace $n(0) $n(1) {+ - d}" in s  # the measured bottleneck
    assert "aq_trace $n(1) $n(0) {d}" in s  # the reverse link (DropTail): its drops only
    assert s.count("new Agent/TCP/Reno") == 1 and s.count("[aq_tcp_0]") == 3


def test_paths_and_hosts():
    p = plan()
    f = p.flows[0]
    assert [p.links[i].name for i in f.path] == ["access", "bottleneck", "access"]
    assert [p.links[i].name for i in f.ack_path] == ["access", "reverse", "access"]
    assert f.rtt_prop_ns == 24_000_000
    par = make_plan(ROOT / "examples" / "parking-lot.toml", None, ['topology.link.aqm={ type = "droptail" }'])
    assert [l.name for l in par.links[:6]] == ["r0-r1", "r1-r0", "r1-r2", "r2-r1", "r2-r3", "r3-r2"]
    long = par.flows[0]
    assert [par.links[i].name for i in long.path] == ["access", "r0-r1", "r1-r2", "r2-r3", "access"]
    assert [par.links[i].measured for i in long.path] == [False, True, True, True, False]


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("override, key", [
    ('bottleneck.aqm={ type = "red", min_th = 10, max_th = 30 }', "bottleneck.aqm.variant"),
    ('bottleneck.aqm={ type = "red", min_th = 10, max_th = 30, variant = "ns2", uniformise = false }',
     "bottleneck.aqm.uniformise"),
    ('bottleneck.aqm={ type = "red", min_th = 10, max_th = 30, variant = "ns2", idle_rule = "queue_empty" }',
     "bottleneck.aqm.idle_rule"),
    ('bottleneck.aqm={ type = "choke", min_th = 10, max_th = 30 }', "bottleneck.aqm.type"),
    ('bottleneck.aqm={ type = "rem", alpha = 0.2 }', "bottleneck.aqm.alpha"),
    ('flows[0].tcp={ variant = "cubic" }', "flows[0].tcp.variant"),
    ('flows[0].tcp={ variant = "reno", recovery = "sack" }', "flows[0].tcp.recovery"),
    ('flows[0].tcp={ variant = "reno", initial_window = 2.5 }', "flows[0].tcp.initial_window"),
    ('flows[0].tcp={ variant = "reno", max_backoff = 64 }', "flows[0].tcp.max_backoff"),
    ('flows[0].tcp={ variant = "reno", preset = "ns2-2.1b9" }', "flows[0].tcp.max_backoff"),
    ('flows[0].tcp={ variant = "reno", byte_counting = true }', "flows[0].tcp.byte_counting"),
    ('flows[0].tcp={ variant = "reno", rto_restart_on_retransmit = false }', "flows[0].tcp.rto_restart_on_retransmit"),
    ('flows[0].tcp={ variant = "reno", delayed_ack = true, delack_count = 3 }', "flows[0].tcp.delack_count"),
    ('flows[0].tcp={ variant = "vegas", limited_transmit = true }', "flows[0].tcp.limited_transmit"),
    ('flows[1]={ name = "p", transport = "udp", app = "probe" }', "flows[1].app"),
])
def test_what_ns2_cannot_express_is_refused_in_one_line_naming_the_key(override, key):
    with pytest.raises(ScenarioError) as e:
        plan(override)
    msg = str(e.value)
    assert msg.startswith(f"{key}: {CANNOT}") and "\n" not in msg, msg


def test_a_network_too_large_for_ns2s_routing_tables_is_refused_naming_the_group():
    """ns-2.35 keeps a route per pair of nodes (about 125 bytes each, measured): a dumbbell of 10 000
    flows was killed for its memory past 23 GB; the translator refuses past NS2_MAX_NODES instead."""
    from aqmlab.ns2.plan import CANNOT_SIZE, NS2_MAX_NODES

    fits = NS2_MAX_NODES // 2 - 1 - 1  # the routers, the UDP group's one flow
    plan(f"flows[0].count={fits}")  # the largest that fits is translated
    with pytest.raises(ScenarioError) as e:
        plan(f"flows[0].count={fits + 1}")
    msg = str(e.value)
    assert msg.startswith(f"flows[1].count: {CANNOT_SIZE} {NS2_MAX_NODES + 2} nodes") and "\n" not in msg, msg


def test_a_byte_buffer_with_mixed_sizes_is_refused():
    with pytest.raises(ScenarioError) as e:
        plan('bottleneck.aqm={ type = "red", min_th = 10000, max_th = 30000, variant = "ns2" }',
             "bottleneck.queue_unit=bytes", "bottleneck.limit=60000", "flows[1].packet_size=500")
    assert str(e.value).startswith(f"bottleneck.queue_unit: {CANNOT}")


@pytest.mark.parametrize("override, key", [("simulation.queue_snapshots=true", "simulation.queue_snapshots"),
                                           ("simulation.latency=true", "simulation.latency"),
                                           ("bottleneck.loss_rate=0.01", "bottleneck.loss_rate")])
def test_measurements_and_keys_not_translated_are_refused_too(override, key):
    with pytest.raises(ScenarioError) as e:
        plan(override)
    assert str(e.value).startswith(f"{key}: ")


# ----------------------------------------------------------------------------- the trace reader


def _trace(tmp_path, lines):
    t = tmp_path / "trace.tr"
    t.write_text("\n".join(lines) + "\n")
    return str(t)


def test_trace_reader_counts_and_checks_conservation(tmp_path):
    # one UDP flow through a 2-packet DropTail bottleneck: node 0 = r1, 1 = r2, 2 = s0, 3 = d0
    text = BASE.replace("limit = 60", "limit = 2").replace('aqm = { type = "red", min_th = 10, max_th = 30, '
                                                           'w_q = 0.002, max_p = 0.1, gentle = true, variant = "ns2" }',
                                                           "")
    text = text[:text.index("[[flows]]")] + '[[flows]]\nname = "udp"\ntransport = "udp"\nrate = "300kb/s"\n'
    p = make_plan(text, None, ["simulation.warmup=0s"])
    up, bn, down = p.flows[0].path

    def line(ev, t, link, uid, seq):
        l = p.links[link]
        return f"{ev} {t} {l.src} {l.dst} cbr 1000 ------- 0 {l.src}.0 {l.dst}.0 {seq} {uid}"

    lines = []
    for uid in range(5):  # five packets sent at once: 1 in service, 2 waiting, 2 overflow
        lines.append(line("+", 1.0, up, uid, uid))
    for uid in range(5):
        lines.append(line("+", 1.001, bn, uid, uid))
        if uid == 0:
            lines.append(line("-", 1.001, bn, uid, uid))
        if uid >= 3:
            lines.append(line("d", 1.001, bn, uid, uid))
    lines += [line("-", 1.009, bn, 1, 1), line("r", 1.02, down, 0, 0)]
    c = read_trace(p, _trace(tmp_path, lines))
    lc = c.links[bn]
    assert (lc.arrivals, lc.transmitted, lc.drops["overflow"], lc.q_end, lc.q_max) == (5, 2, 2, 1, 2)
    assert lc.arrivals + lc.q_start == lc.transmitted + sum(lc.drops.values()) + lc.q_end
    f = c.flows[0]
    # sent = delivered + dropped + still in the network
    assert (f.total_sent, f.total_delivered, f.total_dropped, c.in_flight) == (5, 1, 2, 2)
    assert f.hop_drops[1]["overflow"] == 2 and lc.delays == [0.0, 0.008]
    with pytest.raises(SimulationError, match="delivered but never sent"):
        read_trace(p, _trace(tmp_path, lines + [line("r", 1.03, down, 9, 9)]))


# ----------------------------------------------------------------------------- with ns-2.35


@needs_ns
def test_a_run_is_conserved_and_agrees_with_its_own_counts():
    import aqmlab.ns2 as ns2

    res = ns2.run(BASE)
    s = res.summary
    b = s["bottleneck"]
    assert s["engine"]["conservation"] == "ok" and s["engine"]["name"] == "ns-2.35"
    assert b["arrivals"] + b["queue_pkts_start"] == b["transmitted"] + b["drops_total"] + b["queue_pkts_end"]
    f = res.flows
    assert list(f["group"]) == ["tcp"] * 3 + ["udp"]
    # per flow: what crossed the measured link adds up to the link's per-group counts and throughput
    assert f["throughput_bps"].sum() == pytest.approx(b["throughput_bps"], rel=1e-9)
    assert f["bneck_arrivals"].sum() == b["arrivals"]
    assert f["drops_total"].sum() == b["drops_total"]
    assert (f["goodput_bps"] <= f["delivered_bps"] + 1e-9).all()
    assert 0 < b["utilisation"] <= 1.0001 and b["queue_max_pkts"] <= 60
    assert set(res.timeseries["link"]) == {"bottleneck"} and "aqm_avg" in res.timeseries.columns
    assert s["groups"][0]["timeouts"] is not None and math.isfinite(f["rtt_mean_s"].iloc[0])


@needs_ns
def test_crosscheck_prints_both_engines_side_by_side(tmp_path):
    r = subprocess.run([sys.executable, "-m", "aqmlab.cli", "crosscheck", "ns2", str(EXAMPLE), "--set",
                        "simulation.duration=20s", "--set", "simulation.warmup=5s", "--out", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "ns-2.35" in r.stdout and "ns-2/aqmlab" in r.stdout and "bottleneck: utilisation" in r.stdout
    assert 'note: bottleneck.aqm.variant: RED variant "fj93" has no ns-2.35 form' in r.stderr
    assert (tmp_path / "x" / "ns2-seed1" / "ns2.tcl").is_file()
    assert (tmp_path / "x" / "crosscheck.csv").read_text().startswith("metric,key,aqmlab_mean")
    d = subprocess.run([sys.executable, "-m", "aqmlab.cli", "diff", str(tmp_path / "x" / "aqmlab-seed1"),
                        str(tmp_path / "x" / "ns2-seed1")], capture_output=True, text=True, timeout=120)
    assert d.returncode == 0 and "summary" in d.stdout, d.stderr


@needs_ns
def test_crosscheck_refuses_an_unsupported_key_in_one_line():
    r = subprocess.run([sys.executable, "-m", "aqmlab.cli", "crosscheck", "ns2", str(EXAMPLE), "--set",
                        'bottleneck.aqm={ type = "choke", min_th = 40, max_th = 80 }'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"error: {EXAMPLE}: bottleneck.aqm.type: {CANNOT}")


def test_a_missing_ns_is_one_friendly_line(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path), "PYTHONWARNINGS": "ignore"}
    env.pop("AQMLAB_NS", None)
    r = subprocess.run([sys.executable, "-m", "aqmlab.cli", "crosscheck", "ns2", str(EXAMPLE)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "apt-get install ns2" in r.stderr
