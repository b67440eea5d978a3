"""The forwarder's limits (the tables of docs/emulation.md), in one command.

    sudo python -m aqmlab.emulate.limits [--core-only] [--packets N] [--out FILE]

1. Core: packets per second of CPU the forwarder core sustains with each queue discipline, on
   synthetic traffic that keeps a 1 Gb/s bottleneck congested (no I/O; `emu::bench`).
2. End to end (root): UDP floods of growing rate through a 1 Gb/s DropTail bottleneck, real
   sockets and TUN devices; how many of the packets the applications sent the forwarder read and
   delivered, its CPU share, and how late its departures were.
3. Timing: a saturated 10 Mb/s and 100 Mb/s bottleneck (TCP and UDP), and 1 Gb/s filled by four
   flows of the kernel's CUBIC: measured utilisation and departure lateness.

Emulation runs in real time, so every figure depends on what else the machine runs: the output
opens with the machine (CPUs, kernel) and its load average (``uptime``), and every row of the
end-to-end and timing tables gives the 1-minute load average after its run. Figures measured with
a load average near the number of CPUs are a busy machine's, not the forwarder's ceiling.
"""

from __future__ import annotations

import argparse
import sys

CORE = """
[simulation]
duration = "10s"
[bottleneck]
rate = "1Gb/s"
delay = "10ms"
limit = 1000
aqm = {aqm}
[access]
rate = "10Gb/s"
[[flows]]
transport = "udp"
count = 32
rate = "40Mb/s"
"""

SCHEMES = {
    "droptail": '{ type = "droptail" }',
    "red": '{ type = "red", min_th = 200, max_th = 600 }',
    "choke": '{ type = "choke", min_th = 200, max_th = 600 }',
    "gchoke": '{ type = "gchoke", min_th = 200, max_th = 600 }',
    "chokew": '{ type = "chokew" }',
    "choked": '{ type = "choked", t_min = 200, t_max = 600 }',
    "ward": '{ type = "ward" }',
    "raqm": '{ type = "raqm" }',
    "pi": '{ type = "pi" }',
    "fq_codel": '{ type = "fq_codel" }',
}

FLOOD = """
name = "flood"
[simulation]
duration = "5s"
warmup = "1s"
[bottleneck]
rate = "{bneck}"
delay = "5ms"
limit = {limit}
[access]
rate = "10Gb/s"
[[flows]]
name = "udp"
transport = "udp"
count = {count}
rate = "{rate}b/s"
packet_size = {size}
"""

SATURATE = """
name = "saturate"
[simulation]
duration = "6s"
warmup = "2s"
[bottleneck]
rate = "{rate}"
delay = "10ms"
limit = 200
aqm = {{ type = "red", min_th = 40, max_th = 120 }}
[access]
rate = "1Gb/s"
[[flows]]
name = "tcp"
transport = "tcp"
count = 8
[[flows]]
name = "udp"
transport = "udp"
rate = "{udp}"
"""


CUBIC = """
name = "cubic-1g"
[simulation]
duration = "6s"
warmup = "2s"
[bottleneck]
rate = "1Gb/s"
delay = "5ms"
limit = 1000
[access]
rate = "10Gb/s"
[tcp]
preset = "modern"
mss = 1448
[[flows]]
name = "tcp"
transport = "tcp"
count = 4
tcp = { variant = "cubic" }
"""


def machine() -> str:
    """The machine as the measurements depend on it: CPUs, kernel, load average now."""
    import os
    import platform

    one, five, fifteen = os.getloadavg()
    n = os.cpu_count() or 1
    busy = ("; BUSY: the load is at least half the CPUs, so these figures are a loaded machine's, not the "
            "forwarder's ceiling; measure again on an idle machine" if one >= n / 2 else "")
    return (f"machine: {n} CPUs, Linux {platform.release()}; load average {one:.2f}, {five:.2f}, {fifteen:.2f} "
            f"(uptime){busy}")


def _load() -> str:
    import os

    return f"{os.getloadavg()[0]:.1f}"


def core_table(packets: int) -> list[str]:
    from .. import _core

    out = ["| discipline | packets/s (core, one thread) | ns/packet |", "|---|---|---|"]
    for name, aqm in SCHEMES.items():
        best = None
        for _ in range(3):
            r = _core.emu_bench(CORE.replace("{aqm}", aqm), "bench", [], packets)
            best = r if best is None or r["packets_per_s"] > best["packets_per_s"] else best
        out.append(f"| {name} | {best['packets_per_s'] / 1e6:.2f} M | {1e9 / best['packets_per_s']:.0f} |")
        print(out[-1], file=sys.stderr, flush=True)
    return out


def flood_table() -> list[str]:
    from .run import emulate

    out = ["| offered (pkt/s) | app sent (pkt/s) | forwarder read (pkt/s) | delivered (pkt/s) | lost in the senders' "
           "hosts | forwarder CPU | waiting for a CPU | CPU per packet | late p50 | late p99 | load |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    size = 200
    for count, rate in ((1, 16e6), (2, 40e6), (4, 80e6), (8, 80e6), (8, 160e6)):
        res = emulate(FLOOD.format(bneck="10Gb/s", limit=10000, count=count, rate=f"{rate:.0f}", size=size))
        s, f = res.summary, res.flows
        w = s["scenario"]["window_s"]
        fw = s["emulation"]["forwarder"]
        sent = f["app_sent_pkts"].sum() / w
        read = f["sent_pkts"].sum() / w
        deliv = f["delivered_pkts"].sum() / w
        offered = count * rate / (8 * size)
        out.append(f"| {offered / 1e3:.0f} k | {sent / 1e3:.0f} k | {read / 1e3:.0f} k | {deliv / 1e3:.0f} k | "
                   f"{max(sent - read, 0) / max(sent, 1) * 100:.1f} % | {fw['cpu_s'] / fw['wall_s'] * 100:.0f} % | "
                   f"{fw['runqueue_wait_s'] / fw['wall_s'] * 100:.0f} % | "
                   f"{fw['cpu_s'] / max(s['engine']['packets_created'], 1) * 1e6:.1f} us | "
                   f"{fw['late_p50_s'] * 1e3:.3f} ms | {fw['late_p99_s'] * 1e3:.3f} ms | {_load()} |")
        print(out[-1], file=sys.stderr, flush=True)
    return out


def timing_table() -> list[str]:
    from .run import emulate

    out = ["| bottleneck | utilisation | departures | late p50 | late p99 | late p99.9 | late max | > 1 ms late | "
           "waiting for a CPU | load |", "|---|---|---|---|---|---|---|---|---|---|"]
    cases = [(f"{rate} RED, 8 TCP + UDP {udp}", SATURATE.format(rate=rate, udp=udp), ())
             for rate, udp in (("10Mb/s", "5Mb/s"), ("100Mb/s", "50Mb/s"))]
    cases.append(("1Gb/s DropTail, 4 x the kernel's CUBIC", CUBIC, ("cubic",)))
    for what, scenario, cc in cases:
        res = emulate(scenario, cc=list(cc))
        s = res.summary
        fw = s["emulation"]["forwarder"]
        out.append(f"| {what} | {s['bottleneck']['utilisation']:.4f} | {fw['writes']} | "
                   f"{fw['late_p50_s'] * 1e3:.3f} ms | {fw['late_p99_s'] * 1e3:.3f} ms | "
                   f"{fw['late_p999_s'] * 1e3:.3f} ms | {fw['late_max_s'] * 1e3:.1f} ms | "
                   f"{fw['late_over_1ms'] / max(fw['writes'], 1) * 100:.2f} % | "
                   f"{fw['runqueue_wait_s'] / fw['wall_s'] * 100:.0f} % | {_load()} |")
        print(out[-1], file=sys.stderr, flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m aqmlab.emulate.limits", description=__doc__.splitlines()[0])
    p.add_argument("--core-only", action="store_true", help="only the core benchmark (no root needed)")
    p.add_argument("--packets", type=int, default=1_000_000, help="packets per core benchmark run")
    p.add_argument("--out", metavar="FILE", help="also write the tables (Markdown) to FILE")
    a = p.parse_args(argv)
    lines = [machine(), ""] + core_table(a.packets)
    if not a.core_only:
        lines += [""] + flood_table() + [""] + timing_table()
    lines += ["", machine().replace("machine:", "after:")]
    print("\n".join(lines))
    if a.out:
        from pathlib import Path

        Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
