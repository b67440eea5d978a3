"""`aqmlab bench`: fixed benchmark points, each run in a fresh process so its memory is its own.

Engine points:

* ``paper``, ``medium``, ``large``: RED dumbbells of growing size (their own scenario files);
* ``a``, ``b``, ``c``: the points at which aqmlab is compared with htsim, and ``scale-1k`` ...
  ``scale-10m``: the scale curve (1 s, 100 kb/s per flow) — all on ``dumbbell-droptail.toml``, N
  long-lived NewReno flows over a DropTail bottleneck of one bandwidth-delay product, the same
  dumbbell the htsim driver runs (its rate, buffer, flows and duration set by overrides).

Per point: the set-up time (building the network and flows), the **engine time** (the event loop
alone, wall clock, as the htsim driver reports its run time), the event loop's CPU time per
delivered data packet, delivered data packets and events per second of engine time, and the
**engine's peak memory**: the growth of the process's peak resident size over its size just before
the scenario is built (the interpreter and the native module are already loaded, so what is
measured is the engine's own memory: network, flows, event set, results).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_DUMBBELL = "dumbbell-droptail"


def _dumbbell(flows: int, rate_mbps: float, buffer: int, seconds: float) -> tuple:
    rate = f"{rate_mbps / 1000:g}Gb/s" if rate_mbps >= 1000 else f"{rate_mbps:g}Mb/s"
    over = [
        f"flows[0].count={flows}",
        f'bottleneck.rate="{rate}"',
        f"bottleneck.limit={buffer}",
        f'simulation.duration="{seconds:g}s"',
    ]
    desc = f"{rate} DropTail (buffer {buffer}), {flows} NewReno, {seconds:g} s"
    return _DUMBBELL, over, desc, {"flows": flows, "rate_mbps": rate_mbps, "buffer_pkts": buffer, "duration_s": seconds}


#: point -> (scenario file stem, overrides, description or None for the file's, htsim driver options)
POINTS: dict[str, tuple] = {
    "paper": ("paper", [], None, None),
    "medium": ("medium", [], None, None),
    "large": ("large", [], None, None),
    # the htsim comparison points (peers/htsim/README.md)
    "a": _dumbbell(1_000, 100, 750, 20),
    "b": _dumbbell(10_000, 1_000, 7_500, 5),
    "c": _dumbbell(100_000, 10_000, 75_000, 2),
    # the scale curve: 100 kb/s per flow, 1 s
    "scale-1k": _dumbbell(1_000, 100, 750, 1),
    "scale-10k": _dumbbell(10_000, 1_000, 7_500, 1),
    "scale-100k": _dumbbell(100_000, 10_000, 75_000, 1),
    "scale-1m": _dumbbell(1_000_000, 100_000, 750_000, 1),
    "scale-10m": _dumbbell(10_000_000, 1_000_000, 7_500_000, 1),
}

#: names that stand for several points
GROUPS = {
    "htsim": ["a", "b", "c"],
    "scale": ["scale-1k", "scale-10k", "scale-100k", "scale-1m"],
}

#: the points run when none is named (the 1M-flow point takes a minute or two and 0.8 GiB, the
#: 10M-flow point 6 to 11 minutes and 7.5 GiB: by name only)
DEFAULT = ["paper", "medium", "large", "a", "b", "c", "scale-1k", "scale-10k", "scale-100k"]


def expand(names) -> list[str]:
    """Point names with the groups expanded, in order, without repeats."""
    out: list[str] = []
    for n in names:
        for p in GROUPS.get(n, [n]):
            if p not in out:
                out.append(p)
    return out


def scenario_path(point: str) -> Path:
    return HERE / f"{POINTS[point][0]}.toml"


def _rss_bytes() -> int:
    """The process's current resident size."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:  # pragma: no cover - not Linux: the peak so far is the best baseline there is
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure(point: str) -> dict:
    """Run one point in this process and return its figures."""
    from .. import _core

    stem, overrides, desc, _ = POINTS[point]
    text = (HERE / f"{stem}.toml").read_text(encoding="utf-8")
    base = _rss_bytes()
    clock = lambda: (time.perf_counter(), time.thread_time())  # noqa: E731
    raw = _core.bench(text, point, overrides, clock)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    (w0, c0), (w1, c1), (w2, c2), (w3, c3) = raw["marks"]
    s = json.loads(raw["summary"])
    eng = s["engine"]
    data = eng["data_packets_delivered"]
    run_s = max(w2 - w1, 1e-9)
    return {
        "point": point,
        "description": desc or s["scenario"]["description"],
        "flows": s["scenario"]["flows"],
        "sim_seconds": s["scenario"]["duration_s"],
        "setup_s": w1 - w0,
        "engine_s": run_s,
        "engine_cpu_s": c2 - c1,
        "results_s": w3 - w2,
        "wall_s": w3 - w0,
        "events": eng["events"],
        "events_per_s": eng["events"] / run_s,
        "data_pkts_delivered": data,
        "data_pkts_per_s": data / run_s,
        "cpu_us_per_pkt": (c2 - c1) / data * 1e6 if data else float("nan"),
        "all_pkts_delivered": eng["packets_delivered"],
        "all_pkts_per_s": eng["packets_delivered"] / run_s,
        "engine_mib": max(peak - base, 0) / 2**20,
        "peak_rss_mib": peak / 2**20,
        "utilisation": s["bottleneck"]["utilisation"],
        "drops": s["bottleneck"].get("drops"),
    }


def run_point(point: str) -> dict:
    """One point in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-m", "aqmlab.bench", point], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark point {point} failed:\n{proc.stderr.strip()}")
    return json.loads(proc.stdout)


def run_points(points, repeat: int = 1) -> list[dict]:
    """Run each point in a fresh interpreter (the fastest of `repeat` by engine time)."""
    out = []
    for p in points:
        best = None
        for _ in range(repeat):
            r = run_point(p)
            if best is None or r["engine_s"] < best["engine_s"]:
                best = r
        out.append(best)
    return out


def format_table(rows: list[dict]) -> str:
    head = (
        f"{'point':<10} {'flows':>7} {'sim s':>5} {'set-up s':>8} {'engine s':>8} {'CPU us/pkt':>10} "
        f"{'data pkt/s':>10} {'events/s':>9} {'engine MiB':>10} {'util':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['point']:<10} {r['flows']:>7} {r['sim_seconds']:>5g} {r['setup_s']:>8.3f} {r['engine_s']:>8.3f} "
            f"{r['cpu_us_per_pkt']:>10.2f} {r['data_pkts_per_s'] / 1e6:>8.2f} M {r['events_per_s'] / 1e6:>7.2f} M "
            f"{r['engine_mib']:>10.1f} {r['utilisation'] * 100:>5.1f}%"
        )
    return "\n".join(lines)
