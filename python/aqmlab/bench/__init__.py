"""`aqmlab bench`: fixed dumbbell points, each run in its own process so peak memory is its own.

Per point it reports wall seconds, simulation events per wall second, delivered packets per wall
second (data packets reaching receivers, and all packets — data and ACKs — reaching any host), and
the process's peak resident memory.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

POINTS = ("paper", "medium", "large")
HERE = Path(__file__).resolve().parent


def scenario_path(point: str) -> Path:
    return HERE / f"{point}.toml"


def measure(point: str) -> dict:
    """Run one point in this process and return its figures."""
    from .. import _core

    text = scenario_path(point).read_text(encoding="utf-8")
    t0 = time.perf_counter()
    raw = _core.run(text, point, None, [], None)
    wall = time.perf_counter() - t0
    s = json.loads(raw["summary"])
    eng = s["engine"]
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "point": point,
        "description": s["scenario"]["description"],
        "flows": s["scenario"]["flows"],
        "sim_seconds": s["scenario"]["duration_s"],
        "wall_s": wall,
        "events": eng["events"],
        "events_per_s": eng["events"] / wall,
        "data_pkts_delivered": eng["data_packets_delivered"],
        "data_pkts_per_s": eng["data_packets_delivered"] / wall,
        "all_pkts_delivered": eng["packets_delivered"],
        "all_pkts_per_s": eng["packets_delivered"] / wall,
        "peak_rss_mib": rss_kb / 1024.0,
        "utilisation": s["bottleneck"]["utilisation"],
    }


def run_points(points, repeat: int = 1) -> list[dict]:
    """Run each point in a fresh interpreter (best of `repeat` by wall time)."""
    out = []
    for p in points:
        best = None
        for _ in range(repeat):
            proc = subprocess.run(
                [sys.executable, "-m", "aqmlab.bench", p], capture_output=True, text=True, check=False
            )
            if proc.returncode != 0:
                raise RuntimeError(f"benchmark point {p} failed:\n{proc.stderr.strip()}")
            r = json.loads(proc.stdout)
            if best is None or r["wall_s"] < best["wall_s"]:
                best = r
        out.append(best)
    return out


def format_table(rows: list[dict]) -> str:
    head = f"{'point':<8} {'flows':>6} {'sim s':>6} {'wall s':>8} {'events/s':>11} {'data pkt/s':>11} {'all pkt/s':>11} {'peak MiB':>9} {'util':>6}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['point']:<8} {r['flows']:>6} {r['sim_seconds']:>6.0f} {r['wall_s']:>8.3f} "
            f"{r['events_per_s'] / 1e6:>9.2f} M {r['data_pkts_per_s'] / 1e6:>9.2f} M {r['all_pkts_per_s'] / 1e6:>9.2f} M "
            f"{r['peak_rss_mib']:>9.1f} {r['utilisation'] * 100:>5.1f}%"
        )
    return "\n".join(lines)
