"""`aqmlab bench --htsim PATH`: aqmlab and htsim side by side on the same dumbbell.

PATH is the htsim driver built from the peers/htsim folder of the project's shared files
(``dumbbell.cpp`` against github:Broadcom/csg-htsim; aqmlab does not build or ship htsim). For each
point of the DropTail dumbbell (``a``, ``b``, ``c``, ``scale-*``), ``repeat`` pairs are run in
alternation (aqmlab, htsim, aqmlab, htsim, ...), each in a fresh process, so that both see the same
machine load; the figure reported is the median over the pairs of the ratio of delivered data
packets per second of engine time (aqmlab's event loop; htsim's ``run_s``, its event loop). Events
per second do not compare: htsim takes two events per hop (queue and pipe), aqmlab about one.
"""

from __future__ import annotations

import json
import statistics
import subprocess

from .points import POINTS, run_point


def run_htsim(binary: str, opts: dict) -> dict:
    args = [
        binary,
        "-flows", str(opts["flows"]),
        "-rate_mbps", f"{opts['rate_mbps']:g}",
        "-buffer_pkts", str(opts["buffer_pkts"]),
        "-duration_s", f"{opts['duration_s']:g}",
    ]
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed (status {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def compare(binary: str, point: str, repeat: int) -> dict:
    """`repeat` interleaved pairs at `point`; medians of the per-pair ratios."""
    opts = POINTS[point][3]
    if opts is None:
        raise ValueError(f"point {point} has no htsim counterpart (one of: a, b, c, scale-*)")
    pairs = []
    for _ in range(repeat):
        a = run_point(point)
        h = run_htsim(binary, opts)
        pairs.append((a, h))
    speed = [a["data_pkts_per_s"] / h["data_pkts_per_s"] for a, h in pairs]
    cpu = [(h["run_cpu_s"] / h["data_pkts_delivered"]) / (a["engine_cpu_s"] / a["data_pkts_delivered"]) for a, h in pairs]
    return {
        "point": point,
        "pairs": repeat,
        "flows": opts["flows"],
        "speedup": statistics.median(speed),
        "speedup_cpu": statistics.median(cpu),
        "aqmlab_engine_s": statistics.median(a["engine_s"] for a, _ in pairs),
        "htsim_run_s": statistics.median(h["run_s"] for _, h in pairs),
        "aqmlab_data_pkts": pairs[0][0]["data_pkts_delivered"],
        "htsim_data_pkts": pairs[0][1]["data_pkts_delivered"],
        "aqmlab_util": pairs[0][0]["utilisation"],
        "htsim_util": pairs[0][1]["utilisation"],
        "aqmlab_engine_mib": statistics.median(a["engine_mib"] for a, _ in pairs),
        "htsim_peak_mib": statistics.median(h["peak_rss_mib"] for _, h in pairs),
    }


def format_rows(rows: list[dict]) -> str:
    head = (
        f"{'point':<10} {'flows':>7} {'pairs':>5} {'aqmlab s':>9} {'htsim s':>8} {'speed-up':>8} {'(CPU)':>6} "
        f"{'util a/h':>11} {'MiB a/h':>13}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['point']:<10} {r['flows']:>7} {r['pairs']:>5} {r['aqmlab_engine_s']:>9.3f} {r['htsim_run_s']:>8.3f} "
            f"{r['speedup']:>7.2f}x {r['speedup_cpu']:>5.2f}x "
            f"{r['aqmlab_util'] * 100:>5.1f}/{r['htsim_util'] * 100:<5.1f} "
            f"{r['aqmlab_engine_mib']:>6.0f}/{r['htsim_peak_mib']:<6.0f}"
        )
    return "\n".join(lines)
