"""`aqmlab emulate`: real Linux TCP and UDP through aqmlab's queues, end to end.

The end-to-end tests need root (network namespaces, TUN devices), as CI runs; elsewhere they are
skipped with the reason. Checks that need no privileges (scenario checks, argument errors, the
privilege message) always run. In total about 30 s of wall time: emulation runs in real time.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import aqmlab
from aqmlab import _core
from aqmlab.emulate import leftovers, privilege_problem
from aqmlab.run import metrics as runmetrics

NO_ROOT = privilege_problem()
needs_root = pytest.mark.skipif(NO_ROOT is not None, reason=f"emulation needs privileges: {NO_ROOT}")

# a 10 Mb/s bottleneck shared by 4 Linux TCP flows and one unresponsive UDP flow sending 12 Mb/s
# (from a 100 Mb/s access link); 6 s, measured over the last 4 s
SCENARIO = """
name = "emu"
[simulation]
duration = "6s"
warmup = "2s"
[bottleneck]
rate = "10Mb/s"
delay = "10ms"
limit = 100
aqm = { type = "red", min_th = 20, max_th = 60, max_p = 0.1, w_q = 0.002 }
[[flows]]
name = "tcp"
transport = "tcp"
count = 4
[[flows]]
name = "udp"
transport = "udp"
rate = "12Mb/s"
sender_rate = "100Mb/s"
"""
CHOKE = 'bottleneck.aqm={type="choke", min_th=20, max_th=60, max_p=0.1, w_q=0.002}'


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "aqmlab.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def no_traces(pid: int):
    """Nothing of process `pid`'s runs is left: namespaces (and with them their TUN devices and
    routes), agent processes."""
    assert leftovers(pid) == []
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert "emulate/agent.py" not in ps
    # the TUN devices only ever exist inside the run's namespaces; none may appear here
    assert not [d for d in os.listdir("/sys/class/net") if d.startswith("aqm")]


@pytest.fixture
def scenario(tmp_path):
    p = tmp_path / "emu.toml"
    p.write_text(SCENARIO)
    return p


@needs_root
def test_red_lets_udp_take_the_link_choke_does_not(tmp_path, scenario):
    from aqmlab.emulate import emulate

    res = {}
    for aqm, extra in (("red", []), ("choke", [CHOKE])):
        r = cli("emulate", scenario, "--out", tmp_path / aqm, *[a for x in extra for a in ("--set", x)])
        assert r.returncode == 0, r.stderr
        assert "emulated on Linux" in r.stdout and "results:" in r.stdout
        res[aqm] = json.loads((tmp_path / aqm / "summary.json").read_text())
    for aqm, s in res.items():
        b = s["bottleneck"]
        assert b["aqm"] == aqm
        assert b["utilisation"] > 0.9, f"{aqm}: link not fully used ({b['utilisation']:.3f})"
        e = s["engine"]
        assert e["conservation"] == "ok"
        assert e["packets_created"] == e["packets_delivered"] + e["packets_dropped"] + e["packets_in_flight"]
        assert s["emulation"]["agent_errors"] == []
    udp = {a: next(g for g in s["groups"] if g["name"] == "udp") for a, s in res.items()}
    tcp = {a: next(g for g in s["groups"] if g["name"] == "tcp") for a, s in res.items()}
    # RED drops every flow alike: the unresponsive flow keeps most of the link; CHOKe's matched drops
    # take it down by a wide margin and the TCP flows' goodput rises several-fold
    assert udp["red"]["share"] > 0.8, udp["red"]
    assert udp["choke"]["share"] < udp["red"]["share"] - 0.15, (udp["red"]["share"], udp["choke"]["share"])
    assert tcp["choke"]["goodput_bps"] > 3 * tcp["red"]["goodput_bps"]
    assert sum(res["choke"]["bottleneck"]["drops"][k] for k in ("matched_arrival", "matched_victim")) > 0
    assert res["red"]["bottleneck"]["drops"]["early"] > 0
    no_traces(os.getpid())
    # the same tables as a simulated run of the scenario, so readers and sweeps work unchanged
    import aqmlab
    import pandas as pd

    sim = aqmlab.run(scenario)
    emu_flows = pd.read_csv(tmp_path / "choke" / "flows.csv")
    assert list(emu_flows.columns[: len(sim.flows.columns)]) == list(sim.flows.columns)
    emu_ts = pd.read_csv(tmp_path / "choke" / "timeseries.csv")
    assert set(emu_ts.columns) >= {"time_s", "queue_pkts", "queue_bytes", "utilisation", "drops"}
    assert len(emu_ts) == 60
    assert set(emu_flows.group) == {"tcp", "udp"} and len(emu_flows) == 5
    # per flow: the forwarder's and the receivers' counts agree with each other. The receiver's
    # application counts its bytes and the forwarder its packets at different instants, so at the
    # window's start the receiver may count data the forwarder counted before it: at most what the
    # path beyond the bottleneck holds at once (its rate times its delay) and one more packet
    beyond = 10e6 / 8 * 0.010 + 1500
    for _, f in emu_flows.iterrows():
        assert f.bneck_tx_pkts <= f.bneck_arrivals + 100
        assert f.goodput_bytes <= f.delivered_bytes + beyond
        assert f.drops_total == f.drops_matched_arrival + f.drops_matched_victim + f.drops_early + f.drops_forced + \
            f.drops_overflow + f.drops_link_loss
    assert (emu_flows[emu_flows.transport == "tcp"].rtt_min_s >= 0.024).all()  # the propagation RTT
    row = runmetrics.run_row(aqmlab.Result(res["choke"], emu_flows, emu_ts))
    assert row["udp.share"] == pytest.approx(udp["choke"]["share"])
    del emulate


@needs_root
def test_sigterm_mid_run_leaves_nothing_behind(tmp_path, scenario):
    p = subprocess.Popen([sys.executable, "-m", "aqmlab.cli", "emulate", str(scenario), "--out", str(tmp_path / "o"),
                          "--set", "simulation.duration=60s", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    deadline = time.monotonic() + 30
    while len(leftovers(p.pid)) < 3 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.1)
    assert len(leftovers(p.pid)) == 3, "the run did not set up its namespaces"
    time.sleep(1.5)  # traffic flowing
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 143, err
    assert err.strip().splitlines()[-1] == "terminated"
    no_traces(p.pid)
    assert not (tmp_path / "o").exists()


@needs_root
def test_user_command_runs_in_a_sender_namespace(tmp_path):
    sc = tmp_path / "cmd.toml"
    sc.write_text(SCENARIO.replace('duration = "6s"', 'duration = "3s"').replace('warmup = "2s"', 'warmup = "1s"')
                  .replace('rate = "12Mb/s"', 'rate = "2Mb/s"'))
    client = ("import os, socket, time\n"
              "s = socket.create_connection((os.environ['AQMLAB_RECEIVER'], int(os.environ['AQMLAB_PORT'])))\n"
              "t = time.time()\n"
              "while time.time() - t < 1.5: s.send(b'x' * 65536)\n")
    r = cli("emulate", sc, "--out", tmp_path / "o", "--cc", "tcp=cubic", "--cmd-group", "udp", "--",
            sys.executable, "-c", client)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["emulation"]["cmd"]["exit_status"] == 0
    assert s["emulation"]["groups"][0]["linux_cc"] == "cubic"
    cmd = next(g for g in s["groups"] if g["name"] == "cmd")
    assert cmd["flows"] == 1 and cmd["transport"] == "tcp"
    assert cmd["throughput_bps"] > 5e5 and cmd["goodput_bps"] > 5e5
    assert "command `" in r.stdout and "exited with status 0" in r.stdout
    no_traces(os.getpid())


# ------------------------------------------------------------------------ no privileges needed


@pytest.mark.parametrize("change, fragment", [
    (('name = "tcp"', 'name = "tcp"\napp = "web"'), 'flows[0].app: "web" cannot be emulated'),
    (('count = 4', 'count = 4\npriority = 9'), "flows[0].priority: emulation carries priority levels 1-8"),
    (('count = 4', 'count = 4\ntcp = { mss = 40 }'), "flows[0].tcp.mss: emulation needs"),
    (('limit = 100', 'limit = 0'), "bottleneck.limit"),
])
def test_what_cannot_be_emulated_is_a_one_line_error(tmp_path, change, fragment):
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.replace(*change))
    r = cli("emulate", p)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {p}: ") and fragment in lines[0], r.stderr


@pytest.mark.parametrize("args, fragment", [
    (["--cc", "nosuchcc"], "--cc nosuchcc is not offered by this kernel"),
    (["--cc", "nogroup=reno"], "no flow group named 'nogroup'"),
    (["--cmd-group", "x", "--", "true"], "--cmd-group x: no flow group"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_options_are_one_line_errors(scenario, args, fragment):
    r = cli("emulate", scenario, *args)
    assert r.returncode == 2
    assert fragment in r.stderr.strip().splitlines()[-1], r.stderr


@pytest.mark.parametrize("after", [["-c", "echo hi"], ["--help"], ["--", "x"], ["iperf3", "-c", "$AQMLAB_RECEIVER"]])
def test_the_command_after_dashes_is_passed_whole(after):
    from aqmlab.cli import build_parser, split_emulate_command
    from aqmlab.cli.emulate import split_rest

    argv, cmd = split_emulate_command(["emulate", "s.toml", "--cc", "reno", "--", *after])
    assert argv == ["emulate", "s.toml", "--cc", "reno"] and cmd == after
    a = build_parser().parse_args(argv)
    a.command = cmd
    assert split_rest(a) == after and a.cc == ["reno"]
    late = build_parser().parse_args(["emulate", "s.toml", "--quiet"])  # options after the scenario
    assert split_rest(late) == [] and late.quiet
    assert split_emulate_command(["run", "s.toml", "--", "-x"]) == (["run", "s.toml", "--", "-x"], None)


ONOFF = """
name = "onoff"
[simulation]
duration = "30s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 50
[[flows]]
name = "bursty"
transport = "udp"
app = "onoff"
count = 3
rate = "2Mb/s"
on_time = "50ms"
off_time = "200ms"
distribution = "pareto"
shape = 1.2
[[flows]]
name = "short"
transport = "udp"
app = "onoff"
count = 2
rate = "64kb/s"
on_time = "1ms"
off_time = "1ms"
"""


@pytest.mark.parametrize("seed", [1, 7])
def test_the_plans_on_off_bursts_send_what_the_simulator_sends(seed):
    """The emulation plan's ON/OFF bursts (the engine's own sources, driven as the engine drives
    them) hold as many packets as the simulated run sends, also when the ON periods are mostly too
    short for a packet (the "short" group sends none)."""
    plan = json.loads(_core.emulation_plan(ONOFF, "onoff", [], seed))
    planned = [sum(n for _, n in p["bursts"]) for g in plan["groups"] for p in g["pairs"]]
    sent = aqmlab.run(ONOFF, seed=seed).flows.sort_values("flow_id")["sent_pkts"].tolist()
    assert planned == sent
    assert planned[-2:] == [0, 0] and all(n > 0 for n in planned[:3])


def test_without_privileges_says_so_in_one_line(scenario):
    cmd = [sys.executable, "-m", "aqmlab.cli", "emulate", str(scenario)]
    if NO_ROOT is None:
        # root here: drop every capability, which is what a normal user has
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv (util-linux) is needed to run without capabilities as root")
        cmd = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0 and "setpriv" in r.stderr:
        pytest.skip(f"setpriv cannot drop capabilities here: {r.stderr.strip()}")
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: aqmlab emulate needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create "
                                "network namespaces and TUN devices; run it with sudo")
