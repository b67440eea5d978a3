"""pcap traces ([[pcap]]): written by aqmlab run, read back with a packet library (dpkt), checked
against the run's own tables, and opened by tshark where it is installed."""

import json
import shutil
import subprocess
from collections import Counter, defaultdict

import pytest

from conftest import EXAMPLES

dpkt = pytest.importorskip("dpkt")

TRACE = 'pcap=[{link="bottleneck", at=["arrival", "departure", "drop"]}, {link="reverse", at="departure"}]'
SHORT = ["--set", "simulation.duration=30s", "--set", "simulation.warmup=0s"]


def read(path):
    """(time, IPv4 packet) records of a pcap file."""
    with open(path, "rb") as f:
        r = dpkt.pcap.Reader(f)
        assert r.datalink() in (dpkt.pcap.DLT_RAW, 101, 12)
        return [(ts, dpkt.ip.IP(buf)) for ts, buf in r]


@pytest.fixture(scope="module")
def traced(tmp_path_factory, ):
    from conftest import aqmlab

    d = tmp_path_factory.mktemp("pcap")
    r = aqmlab("run", EXAMPLES / "dumbbell-red.toml", *SHORT, "--set", TRACE, "--out", d / "run", "-q")
    assert r.returncode == 0, r.stderr
    return d / "run"


def test_files_and_counts_match_the_summary(traced):
    names = sorted(p.name for p in traced.glob("*.pcap"))
    assert names == ["bottleneck.arrival.pcap", "bottleneck.departure.pcap", "bottleneck.drop.pcap",
                     "reverse.departure.pcap"]
    b = json.loads((traced / "summary.json").read_text())["bottleneck"]
    arr, dep, drop = (read(traced / f"bottleneck.{p}.pcap") for p in ("arrival", "departure", "drop"))
    assert len(arr) == b["arrivals"] and len(dep) == b["transmitted"] and len(drop) == b["drops_total"]
    for recs in (arr, dep, drop):  # simulated time, in order, within the run
        ts = [t for t, _ in recs]
        assert ts == sorted(ts) and 0 <= ts[0] and ts[-1] < 30


def test_per_flow_counts_and_sequence_numbers_match_the_flows_table(traced):
    import pandas as pd

    flows = pd.read_csv(traced / "flows.csv").set_index("flow_id")
    mss = 1000
    per = defaultdict(Counter)
    seqs = defaultdict(set)
    for point in ("arrival", "departure", "drop"):
        for _, ip in read(traced / f"bottleneck.{point}.pcap"):
            l4 = ip.data
            flow = l4.sport - 1024  # the sender's port names the flow
            per[flow][point] += 1
            assert ip.len == mss  # the size on the wire
            if isinstance(l4, dpkt.tcp.TCP) and point == "departure":
                assert l4.seq % (mss - 40) == 0  # sequence numbers count payload bytes
                seqs[flow].add(l4.seq)
    acks = defaultdict(int)
    for _, ip in read(traced / "reverse.departure.pcap"):
        tcp = ip.data
        assert isinstance(tcp, dpkt.tcp.TCP) and tcp.flags & dpkt.tcp.TH_ACK and tcp.dport >= 1024
        acks[tcp.dport - 1024] = max(acks[tcp.dport - 1024], tcp.ack // (mss - 40))
    udp = flows.index[flows["transport"] == "udp"]
    assert len(udp) == 1 and per[int(udp[0])]["departure"] > 0
    for f, row in flows.iterrows():
        assert per[f]["arrival"] == row["bneck_arrivals"], f
        assert per[f]["departure"] == row["bneck_tx_pkts"], f
        assert per[f]["drop"] == row["drops_total"] - row["drops_link_loss"], f
        if row["transport"] == "tcp":
            # each new sequence number that left the bottleneck reached the receiver (the access
            # links drop nothing), except the last few still propagating at the end of the run
            first_time = row["goodput_bytes"] / mss
            assert first_time <= len(seqs[f]) <= first_time + 3, (f, len(seqs[f]), first_time)
            # the receiver acknowledges in order: never more than it received
            assert acks[f] <= len(seqs[f]) and acks[f] >= first_time - 40, (f, acks[f], first_time)


def test_ecn_and_priorities_reach_the_headers(tmp_path, run_cli):
    out = tmp_path / "ecn"
    r = run_cli("run", EXAMPLES / "red-ecn.toml", "--set", "simulation.duration=20s",
                "--set", 'pcap=[{link="bottleneck", at="departure"}]', "--out", out, "-q")
    assert r.returncode == 0, r.stderr
    ecn = Counter(ip.tos & 3 for _, ip in read(out / "bottleneck.departure.pcap"))
    marks = json.loads((out / "summary.json").read_text())["bottleneck"]["ce_marks"]
    assert ecn[2] > 0  # ECT(0) on ECN-capable data
    assert ecn[3] >= 1 and marks >= 1  # CE marks set by RED


def test_tshark_reads_the_trace_and_sees_tcp(traced):
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed")
    f = str(traced / "bottleneck.arrival.pcap")
    r = subprocess.run(["tshark", "-r", f, "-q", "-z", "io,stat,0"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    frames = int(next(l for l in r.stdout.splitlines() if "<>" in l).split("|")[2].split()[0])
    b = json.loads((traced / "summary.json").read_text())["bottleneck"]
    assert frames == b["arrivals"]
    r = subprocess.run(["tshark", "-r", f, "-Y", "tcp.analysis.retransmission"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and len(r.stdout.splitlines()) > 0  # Wireshark's TCP analysis finds RED's losses


def test_mistakes_in_pcap_are_one_line(run_cli, tmp_path):
    for bad, msg in [('pcap=[{link="nope"}]', 'pcap[0].link: unknown link "nope"; links are: bottleneck, reverse'),
                     ('pcap=[{link="bottleneck", at="everywhere"}]', 'pcap[0].at: unknown point "everywhere"'),
                     ('pcap=[{link="bottleneck", start="5s", stop="1s"}]', "pcap[0].stop: must be later than start"),
                     # issue 27: a window after the run's end, a point twice
                     ('pcap=[{link="bottleneck", start="500s"}]',
                      "pcap[0].start: must be before the end of the run (simulation.duration = 100 s)"),
                     ('pcap=[{link="bottleneck", start="100s", stop="200s"}]', "pcap[0].start: must be before the end"),
                     ('pcap=[{link="bottleneck", at=["drop", "drop"]}]', 'pcap[0].at[1]: "drop" is listed twice')]:
        r = run_cli("validate", EXAMPLES / "dumbbell-red.toml", "--set", bad)
        assert r.returncode == 2 and msg in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_the_api_keeps_traces_until_saved(tmp_path):
    import aqmlab

    res = aqmlab.run(EXAMPLES / "dumbbell-red.toml", overrides=["simulation.duration=15s",
                                                                 'pcap=[{link="bottleneck"}]'])
    assert [p.name for p in res.pcap] == ["bottleneck.departure.pcap"] and res.pcap[0].is_file()
    files = {p.name for p in res.save(tmp_path / "r")}
    assert "bottleneck.departure.pcap" in files and (tmp_path / "r" / "bottleneck.departure.pcap").stat().st_size > 24
    none = aqmlab.run(EXAMPLES / "dumbbell-red.toml", overrides=["simulation.duration=15s",
                                                                  'pcap=[{link="bottleneck"}]'], pcap_dir=False)
    assert none.pcap == []
