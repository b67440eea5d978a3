"""Networks beyond the dumbbell, end to end: the parking-lot example as a user runs it, the Python
tables of measured links and hops, and bad topologies rejected with one line and exit status 2."""

import json
import re

import pytest

import aqmlab
from conftest import EXAMPLES, aqmlab as cli

ERROR_LINE = re.compile(r"^error: [^\n]+: [^\n]+$")
PARKING = EXAMPLES / "parking-lot.toml"


def test_parking_lot_prints_each_congested_link_and_each_groups_share(tmp_path):
    out = tmp_path / "out"
    r = cli("run", PARKING, "--out", out, "--set", 'simulation.duration="30s"')
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert "bottleneck" not in s and set(s["links"]) == {"r0-r1", "r1-r2", "r2-r3"}
    lines = r.stdout.splitlines()
    # a line per congested link, with its discipline and utilisation
    for name, link in s["links"].items():
        row = [l for l in lines if l.startswith(name + " ")]
        assert len(row) == 1, (name, r.stdout)
        assert "choke" in row[0] and f"{link['utilisation'] * 100:.1f}%" in row[0]
    # a row per group, with its share of every link it crosses and "-" for the others
    head = next(l for l in lines if l.startswith("group "))
    assert head.split()[5:9] == ["at", "r0-r1", "r1-r2", "r2-r3"]
    rows = {l.split()[0]: l for l in lines if l.split() and l.split()[0] in {g["name"] for g in s["groups"]}}
    assert set(rows) == {"long", "cross_1", "cross_2", "cross_3", "udp"}
    for hop, link in enumerate(["r0-r1", "r1-r2", "r2-r3"]):
        udp_share = s["links"][link]["groups"]["udp"]["share"]
        assert f"{udp_share * 100:.1f}%" in rows["udp"]
        cells = rows[f"cross_{hop + 1}"].split()
        assert cells.count("-") == 2, rows[f"cross_{hop + 1}"]


def test_result_tables_of_links_and_hops():
    res = aqmlab.run(PARKING, overrides=['simulation.duration="20s"', 'simulation.warmup="2s"'])
    links = res.links()
    assert list(links["name"]) == ["r0-r1", "r1-r2", "r2-r3"]
    lg = res.link_groups()
    # per link, the groups' and ACKs' packets are the link's
    for name, sub in lg.groupby("link"):
        link = res.summary["links"][name]
        assert sub["transmitted"].sum() == link["transmitted"]
        assert sub["arrivals"].sum() == link["arrivals"]
    hops = res.hops()
    assert set(hops["direction"]) == {"data", "ack"}
    long_path = hops[(hops["flow_id"] == 0) & (hops["direction"] == "data")]["link"].tolist()
    assert long_path == ["access", "r0-r1", "r1-r2", "r2-r3", "access"]
    # drops hop by hop add up to each flow's drops
    data = hops[hops["direction"] == "data"].groupby("flow_id")["drops"].sum()
    assert (data.to_numpy() == res.flows.set_index("flow_id")["drops_total"].to_numpy()).all()
    # the time series has one row per sample per measured link
    assert set(res.timeseries["link"]) == {"r0-r1", "r1-r2", "r2-r3"}
    assert len(res.timeseries) == 3 * res.timeseries["time_s"].nunique()


NETWORK = """
[simulation]
duration = "5s"
[topology]
routers = ["r1", "r2", "r3"]
hosts = ["a", "b"]
[[topology.links]]
from = "a"
to = "r1"
rate = "10Mb/s"
delay = "1ms"
limit = 100
[[topology.links]]
from = "r1"
to = "r2"
rate = "1Mb/s"
delay = "10ms"
limit = 50
[[topology.links]]
from = "r2"
to = "b"
rate = "10Mb/s"
delay = "1ms"
limit = 100
[[flows]]
transport = "tcp"
from = "a"
to = "b"
"""


@pytest.mark.parametrize(
    "change, path",
    [
        # an unknown node
        (('from = "r2"\nto = "b"\n', 'from = "r2"\nto = "b9"\n'), "topology.links[2].to"),
        (('from = "a"\nto = "b"\n"""', 'from = "a"\nto = "x"\n"""'), "flows[0].to"),
        # a pair no links join
        (('from = "a"\nto = "b"\n"""', 'from = "a"\nto = "r3"\n"""'), "flows[0].to"),
        # a loop in an explicit path
        (('to = "b"\n"""', 'to = "b"\npath = ["a", "r1", "r2", "r1", "r2", "b"]\n"""'), "flows[0].path[3]"),
        # a link with no rate
        (('rate = "1Mb/s"\n', ""), "topology.links[1].rate"),
        # an unknown shape
        (("[topology]\n", '[topology]\ntype = "ring"\n'), "topology.type"),
    ],
    ids=["unknown-link-node", "unknown-flow-node", "disconnected", "loop", "no-rate", "unknown-shape"],
)
def test_bad_topology_gives_one_line_error_and_exit_2(tmp_path, change, path):
    text = (NETWORK + '"""').replace(*change)[: -len('"""')]
    f = tmp_path / "bad.toml"
    f.write_text(text)
    # `run` validates first; `validate` prints the same line (checked once, for the first case)
    cmds = [["run", f, "--out", tmp_path / "o"]] + ([["validate", f]] if path == "topology.links[2].to" else [])
    for cmd in cmds:
        r = cli(*cmd)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert ERROR_LINE.match(r.stderr.strip()), r.stderr
        assert r.stderr.startswith(f"error: {f}: {path}: "), r.stderr
        assert "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


def test_good_network_validates_and_runs(tmp_path):
    f = tmp_path / "net.toml"
    f.write_text(NETWORK)
    r = cli("validate", f)
    assert r.returncode == 0 and "custom of 5 nodes and 6 links" in r.stdout, r.stdout + r.stderr
    r = cli("run", f, "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "r1-r2" in r.stdout
