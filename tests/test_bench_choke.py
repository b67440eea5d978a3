"""`aqmlab bench --point choke`: the CHOKe family against RED at equal mean queue."""

import json

from aqmlab.bench import choke
from conftest import aqmlab


def test_every_scheme_runs_on_the_choke_dumbbell_and_more_flows_hold_a_longer_queue():
    for s in choke.SCHEMES:
        r = choke.run(s, 50, 150.0)
        assert r["arrivals"] > 0 and r["cpu_s"] > 0 and r["queue"] > 0, s
    # the search relies on this: RED's mean queue grows with the TCP load
    assert choke.run("red", 400, 0.0)["queue"] > choke.run("red", 50, 0.0)["queue"]


def test_calibration_brackets_then_bisects_to_the_target(monkeypatch):
    calls = []

    def fake(scheme, flows, target):  # a queue that grows with the flow count, as TCP's does
        calls.append(flows)
        return {"queue": 30.0 * flows**0.5, "arrivals": 1, "cpu_s": 1.0, "drop_ratio": 0, "utilisation": 1}

    monkeypatch.setattr(choke, "run", fake)
    for target in (100.0, 900.0):
        calls.clear()
        n, r = choke.calibrate("choke", target)
        assert abs(r["queue"] - target) <= choke.TOLERANCE * target, (target, n, calls)
        assert len(calls) == len(set(calls)) <= 10


def test_bench_choke_point_reports_each_scheme_against_red():
    # a CHOKe-family scheme, a dropper with a set point and a scheduler whose buffer is the target
    pick = ["choke", "afd", "drr"]
    r = aqmlab("bench", "--point", "choke", "--schemes", ",".join(pick), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["scheme"] for x in rows] == ["red"] + pick
    red = rows[0]
    assert red["ratio_to_red"] == 1.0 and red["tcp_flows"] == choke.N0
    for x in rows:
        # every scheme was run at the load that holds RED's mean queue
        assert abs(x["queue_off"]) <= choke.TOLERANCE, x
        assert x["ns_per_arrival"] > 0 and x["ratio_to_red"] > 0
    table = choke.format_rows(rows)
    assert "AFD" in table and "x RED" in table


def test_bench_choke_rejects_an_unknown_scheme():
    r = aqmlab("bench", "--point", "choke", "--schemes", "red,nope")
    assert r.returncode == 2 and "nope" in r.stderr
