"""The cases and tolerances of the ns-3 comparison (docs/validation-ns3.md).

Every case is an aqmlab scenario (TOML text) run unchanged by both simulators. Four families:

* ``<queue>-<sender>-<rate>``: four flows of one sender (``reno``: aqmlab ``sack``, Reno with SACK;
  ``cubic``) through each queue ns-3 has, at 10 and 100 Mb/s;
* ``bbr-alone-<rate>``, ``bbr-cubic-<rate>``: BBR alone and beside CUBIC through the FIFO;
* ``dctcp-alone-<rate>``, ``dctcp-cubic-<rate>``: DCTCP alone and beside CUBIC with ECN, through
  RED marking at a step of K packets;
* ``linux-<case>``: the cases of docs/tcp-vs-linux.md that ns-3 can run, from its scenario files.

:data:`TOLERANCES` are the table of the doc's "Tolerances", stated and committed before any case
was run in both simulators.
"""

from __future__ import annotations

from pathlib import Path

from ..run.source import EXAMPLES

#: docs/tcp-vs-linux, where Linux's measurements are (a source checkout)
LINUX_DIR = Path(__file__).resolve().parents[3] / "docs" / "tcp-vs-linux"
#: the scenario files of Linux's cases (installed with the package)
LINUX_CASES = EXAMPLES / "tcp-vs-linux"

#: queue -> the aqm table (the matched values of docs/validation-ns3.md, "Matched parameters")
QUEUES = {
    "fifo": '{ type = "droptail" }',
    "codel": '{ type = "codel", maxpacket = 1500 }',
    "fq_codel": '{ type = "fq_codel", quantum = 1500, maxpacket = 1500 }',
    "pie": '{ type = "pie", qdelay_estimator = "departure", mean_pkt_size = 2250 }',
    "fq_pie": '{ type = "fq_pie", quantum = 1500 }',
    "cobalt": '{ type = "cake", flow_mode = "flowblind", shaped = false }',
    "fq_cobalt": '{ type = "cake", flow_mode = "flows", shaped = false }',
}
#: sender -> aqmlab variant
SENDERS = {"reno": "sack", "cubic": "cubic"}
#: rate (Mb/s) -> buffer (packets): 240 ms at the link's rate
BUFFER = {10: 200, 100: 2000}
#: DCTCP's marking step K (packets) per rate
STEP = {10: 20, 100: 65}
#: the senders' access delays (ms) of the four-flow cases: round trips of 24, 30, 40 and 60 ms
SENDER_DELAYS = (1, 4, 9, 19)
#: the sender delay of the BBR and DCTCP cases: a 40 ms round trip
ONE_DELAY = 9


def base(name: str, rate: int, aqm: str) -> str:
    return f"""name = "{name}"
description = "aqmlab against ns-3: {name}"
[simulation]
duration = "60s"
warmup = "20s"
[bottleneck]
rate = "{rate}Mb/s"
delay = "10ms"
limit = {BUFFER[rate]}
aqm = {aqm}
[access]
rate = "{rate * 10}Mb/s"
delay = "1ms"
[tcp]
preset = "modern"
mss = 1500
"""


def group(name: str, variant: str, count: int, delays, ecn: bool = False) -> str:
    d = ", ".join(f'"{x}ms"' for x in delays)
    tcp = f'{{ variant = "{variant}"{", ecn = true" if ecn else ""} }}'
    return (f'[[flows]]\nname = "{name}"\ntransport = "tcp"\ncount = {count}\nsender_delay = [{d}]\n'
            f'start = {{ uniform = ["0s", "1s"] }}\ntcp = {tcp}\n')


def step(rate: int) -> str:
    """RED marking every ECN-capable arrival to at least K waiting packets (aqmlab's "ns2" variant marks
    in the hard region; with w_q = 1 the average is the queue)."""
    k = STEP[rate]
    return (f'{{ type = "red", variant = "ns2", w_q = 1.0, min_th = {k - 1}, max_th = {k}, max_p = 1.0, '
            f'gentle = false, ecn = true }}')


def _family() -> dict:
    """case -> (TOML text, [overrides], family, title)."""
    out = {}
    for rate in (10, 100):
        for q, aqm in QUEUES.items():
            for s, variant in SENDERS.items():
                name = f"{q}-{s}-{rate}"
                out[name] = (base(name, rate, aqm) + group(s, variant, 4, SENDER_DELAYS), [], "queues",
                             f"4 × {s}, {q}, {rate} Mb/s")
    for rate in (10, 100):
        fifo = QUEUES["fifo"]
        out[f"bbr-alone-{rate}"] = (base(f"bbr-alone-{rate}", rate, fifo) + group("bbr", "bbr", 1, [ONE_DELAY]),
                                    [], "bbr", f"BBR alone, FIFO, {rate} Mb/s")
        out[f"bbr-cubic-{rate}"] = (base(f"bbr-cubic-{rate}", rate, fifo) + group("bbr", "bbr", 1, [ONE_DELAY])
                                    + group("cubic", "cubic", 1, [ONE_DELAY]), [], "bbr",
                                    f"BBR and CUBIC, FIFO, {rate} Mb/s")
        out[f"dctcp-alone-{rate}"] = (base(f"dctcp-alone-{rate}", rate, step(rate))
                                      + group("dctcp", "dctcp", 1, [ONE_DELAY]), [], "dctcp",
                                      f"DCTCP alone, step K = {STEP[rate]}, {rate} Mb/s")
        out[f"dctcp-cubic-{rate}"] = (base(f"dctcp-cubic-{rate}", rate, step(rate))
                                      + group("dctcp", "dctcp", 1, [ONE_DELAY])
                                      + group("cubic", "cubic", 1, [ONE_DELAY], ecn=True), [], "dctcp",
                                      f"DCTCP and ECN-CUBIC, step K = {STEP[rate]}, {rate} Mb/s")
    red = '{type="red", min_th=15, max_th=45, max_p=0.1, w_q=0.002}'
    linux = {  # docs/tcp-vs-linux.md's cases (emulate/vslinux.py), but CHOKe (not in ns-3)
        "reno": ("alone.toml", ['flows[0].tcp={variant="sack"}'], "Reno + SACK alone, FIFO 1000"),
        "cubic": ("alone.toml", ['flows[0].tcp={variant="cubic"}'], "CUBIC alone, FIFO 1000"),
        "bbr": ("alone.toml", ['flows[0].tcp={variant="bbr"}'], "BBR alone, FIFO 1000"),
        "droptail": ("compete.toml", ['bottleneck.aqm={type="droptail"}'], "BBR vs CUBIC, FIFO 100"),
        "red": ("compete.toml", [f"bottleneck.aqm={red}"], "BBR vs CUBIC, RED"),
        "fq_codel": ("compete.toml", ['bottleneck.aqm={type="fq_codel"}'], "BBR vs CUBIC, FQ-CoDel"),
    }
    for case, (file, ov, title) in linux.items():
        out[f"linux-{case}"] = (file, ov, "linux", title + " (tcp-vs-linux)")
    return out


CASES = _family()
FAMILIES = ("queues", "bbr", "dctcp", "linux")
SEEDS = (1, 2, 3, 4, 5)
#: the CI slice (tests/test_ns3.py): one case of each kind of queue and sender, short, one seed
QUICK = ("fifo-cubic-10", "codel-reno-10", "fq_codel-cubic-10", "pie-cubic-10", "bbr-cubic-10",
         "dctcp-alone-10")


def scenario(case: str) -> tuple[str, list]:
    """(TOML text, overrides) of a case."""
    text, ov, family, _ = CASES[case]
    if family == "linux":
        return (LINUX_CASES / text).read_text(encoding="utf-8"), list(ov)
    return text, list(ov)


# ----------------------------------------------------------------------------- the tolerances
#
# Stated before any case was run in both simulators (docs/validation-ns3.md, "Tolerances"): what two
# independent models of the same algorithms on the same path should reproduce, through the means over
# the seeds.
#
#   "abs":   |a - b| <= x
#   "rel":   |a - b| <= max(x * |aqmlab|, floor)      (floor: 2 packet times for the delay)
#   "factor": max(a, b) <= x * min(a, b), or both below floor (per flow for counts)

TOLERANCES = {
    "utilisation": ("abs", 0.02, None, "utilisation of the bottleneck"),
    "delay_mean": ("rel", 0.25, "2 packet times", "mean queueing delay"),
    "loss_ratio": ("factor", 1.5, 0.001, "drops + CE marks per arrival"),
    "flow_share": ("abs", 0.05, None, "each flow's share (four flows of one sender)"),
    "group_share": ("abs", 0.10, None, "each sender's share (BBR or DCTCP beside CUBIC)"),
    "jain": ("abs", 0.05, None, "Jain's index of the flows' throughputs (four flows)"),
    "retx": ("factor", 2.0, 10, "retransmitted segments, all flows (floor: per flow)"),
    "timeouts": ("factor", 2.0, 1, "retransmission timeouts, all flows (floor: per flow)"),
    "bbr_queue": ("below", 2.0, None, "BBR alone: mean queue below 2 BDPs in both"),
}

__all__ = ["CASES", "FAMILIES", "SEEDS", "QUICK", "QUEUES", "TOLERANCES", "scenario", "LINUX_DIR", "LINUX_CASES"]
