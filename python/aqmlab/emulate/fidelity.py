"""Emulated against simulated runs of the same scenarios (the table of docs/emulation.md).

    python -m aqmlab.emulate.fidelity [--duration 40] [--tcp 8,32] [--udp 1,5,10] [--out DIR]

A 10 Mb/s dumbbell (10 ms bottleneck delay, 200-packet buffer) under RED, CHOKe and WARD, shared by
N TCP flows and one UDP CBR flow. Each point runs once in the simulator (ns-2 NewReno agents) and
once emulated (Linux TCP: reno without SACK, the mapping of `newreno`), with the same scenario and
seed. Needs root; takes the sum of the durations in wall time (18 points of 40 s: about 13 minutes).
Writes ``fidelity.csv`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SCENARIO = """
name = "fidelity"
[simulation]
duration = "{duration}s"
warmup = "{warmup}s"
[bottleneck]
rate = "10Mb/s"
delay = "10ms"
limit = 200
[[flows]]
name = "tcp"
transport = "tcp"
count = {tcp}
[[flows]]
name = "udp"
transport = "udp"
rate = "{udp}Mb/s"
sender_rate = "100Mb/s"
"""

AQMS = {
    "red": '{type="red", min_th=40, max_th=120, max_p=0.1, w_q=0.002}',
    "choke": '{type="choke", min_th=40, max_th=120, max_p=0.1, w_q=0.002}',
    "ward": '{type="ward"}',
}


def _row(res) -> dict:
    s = res.summary
    g = {x["name"]: x for x in s["groups"]}
    return {
        "udp_share": g["udp"]["share"],
        "tcp_goodput_bps": g["tcp"]["goodput_bps"],
        "tcp_throughput_bps": g["tcp"]["throughput_bps"],
        "tcp_jain_goodput": g["tcp"]["jain_goodput"],
        "utilisation": s["bottleneck"]["utilisation"],
        "queue_mean_pkts": s["bottleneck"]["queue_mean_pkts"],
        "drop_ratio": s["bottleneck"]["drop_ratio"],
        "tcp_timeouts": g["tcp"]["timeouts"],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m aqmlab.emulate.fidelity", description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=40.0, help="seconds per run (default 40; warm-up a quarter)")
    p.add_argument("--tcp", default="8,32", help="TCP flow counts (default 8,32)")
    p.add_argument("--udp", default="1,5,10", help="UDP rates in Mb/s (default 1,5,10)")
    p.add_argument("--aqm", default="red,choke,ward", help="schemes (default red,choke,ward)")
    p.add_argument("--cc", action="append", default=[], help="extra emulated runs with this Linux congestion control")
    p.add_argument("--out", default="fidelity", help="output directory (default ./fidelity)")
    a = p.parse_args(argv)
    import pandas as pd

    from ..run.api import run
    from .run import emulate

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    points = [(q, int(n), float(u)) for q in a.aqm.split(",") for n in a.tcp.split(",") for u in a.udp.split(",")]
    for i, (aqm, n, udp) in enumerate(points):
        text = SCENARIO.format(duration=a.duration, warmup=a.duration / 4, tcp=n, udp=udp)
        ov = [f"bottleneck.aqm={AQMS[aqm]}"]
        sim = _row(run(text, overrides=ov))
        runs = [("newreno", "reno", [])] + [("newreno", cc, [cc]) for cc in a.cc]
        for variant, linux, cc in runs:
            print(f"[{i + 1}/{len(points)}] {aqm} {n} TCP ({linux}) + UDP {udp:g} Mb/s", file=sys.stderr, flush=True)
            emu = _row(emulate(text, overrides=ov, cc=cc))
            row = {"aqm": aqm, "tcp_flows": n, "udp_mbps": udp, "linux_cc": linux}
            row.update({f"sim_{k}": v for k, v in sim.items()})
            row.update({f"emu_{k}": v for k, v in emu.items()})
            rows.append(row)
            pd.DataFrame(rows).to_csv(out / "fidelity.csv", index=False)
    df = pd.DataFrame(rows)
    print("| AQM | TCP flows | UDP Mb/s | Linux CC | UDP share sim | UDP share emu | TCP goodput sim (Mb/s) | "
          "TCP goodput emu (Mb/s) | TCP Jain sim | TCP Jain emu | util. emu | queue sim | queue emu |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in df.itertuples():
        print(f"| {r.aqm} | {r.tcp_flows} | {r.udp_mbps:g} | {r.linux_cc} | {r.sim_udp_share:.3f} | "
              f"{r.emu_udp_share:.3f} | {r.sim_tcp_goodput_bps / 1e6:.2f} | {r.emu_tcp_goodput_bps / 1e6:.2f} | "
              f"{r.sim_tcp_jain_goodput:.3f} | {r.emu_tcp_jain_goodput:.3f} | {r.emu_utilisation:.3f} | "
              f"{r.sim_queue_mean_pkts:.1f} | {r.emu_queue_mean_pkts:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
