"""One flows-table schema for every engine: the simulator writes `sim::results::flows::COLUMNS`
(read in Python as `aqmlab.run.summary.FLOW_COLUMNS`), and the emulator's rows hold every one of
those columns, then its own (docs/emulation.md)."""

from collections import defaultdict

import aqmlab
from aqmlab.emulate import results as emulated
from aqmlab.run.summary import FLOW_COLUMNS, FLOW_STRING_COLUMNS

SMALL = """
[simulation]
duration = "3s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 50
[[flows]]
transport = "tcp"
count = 2
[[flows]]
transport = "udp"
rate = "200kb/s"
"""


def test_the_simulators_flows_table_is_the_schema():
    flows = aqmlab.run(SMALL).flows
    assert list(flows.columns) == FLOW_COLUMNS
    assert set(FLOW_STRING_COLUMNS) < set(FLOW_COLUMNS)
    for c in FLOW_STRING_COLUMNS:
        assert flows[c].map(lambda v: isinstance(v, str)).all(), c


def test_the_emulators_rows_write_every_column_of_the_schema():
    # a flow the scenario did not describe, as the forwarder saw it (every count 0)
    fw = defaultdict(lambda: [0])
    fw.update({"proto": [6], "s_addr": ["10.1.0.1"], "s_port": [5000], "r_addr": ["10.2.0.1"], "r_port": [9],
               "first_seen_s": [1.0]})
    row = emulated._row(None, None, {}, 0, fw, None, 1e6, 10.0, 20.0, 10.0, "other")
    written = set(row) - {"_fw"} - set(emulated.EMULATION_COLUMNS)
    assert written == set(FLOW_COLUMNS) - {"flow_id"}, written ^ (set(FLOW_COLUMNS) - {"flow_id"})
