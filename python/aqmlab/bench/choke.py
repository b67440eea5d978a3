"""`aqmlab bench --point choke`: the cost of the CHOKe family and of the fair schemes with a little
state against RED's, inside a whole simulation, at equal mean queue length.

Every CHOKe-family scheme draws packets from the queue at an arrival, and every fair scheme does
work that grows with what waits (bins, tables, per-flow queues), so a scheme's cost per arrival
depends on the queue's length; compared at different queue lengths, the schemes would differ by
their load, not by their algorithms. So the point first runs RED on the dumbbell of
``choke.toml`` (N0 NewReno flows and one UDP CBR source at a fifth of the capacity) and takes its
time-average queue length as the target; then, for each scheme, it searches the number of TCP
flows (in log scale: more flows hold a longer queue) until the scheme's mean queue is within
``TOLERANCE`` of the target; and finally it runs every scheme at its flow count ``repeat`` times,
interleaved (RED, CHOKe, ..., RED, CHOKe, ...), and reports the median engine CPU time per packet
arriving at the bottleneck, and its ratio to RED's.

How each scheme meets the target (``overrides``):

* RED's stage at RED's thresholds: CHOKe, gCHOKe, Perfect CHOKe, xCHOKe, RED-PD and FRED; CHOKeD
  the same thresholds as ``t_min``/``t_max``.
* A scheme that holds its own queue gets RED's mean queue as its set point: CHOKeW (``L_th`` =
  target / 2, ``L-`` = 0.9 target, ``L+`` = 1.1 target), AFD (``q_target``).
* A scheme whose queue is a fixed part of its buffer under load gets the buffer that puts that
  part at the target (``BUFFER_FACTOR``), and the flows are then searched as for the others:
  schedulers that only push out on overflow (DRR, HHF) and FQ-CoDel (whose per-flow CoDel does
  not bound the sum of the queues: the UDP flow's queue fills the buffer; its CoDel ``target`` is
  the target's transmission time) hold about 97 % of it, so 1.03 times the target; SRED (which,
  with few flows estimated, drops almost nothing early) 1.1 times; CSFQ, which holds a little
  over half its buffer (its fair share backs off when the buffer overflows), 1.8 times. (With the
  buffer at the target itself, these needed 16 times RED's flows to come within the tolerance,
  and their cost per arrival then measured the many TCP flows more than the scheme.)
* SFB runs with its defaults (its queue follows the load).

Engine CPU time is the event loop's thread CPU time (no Python, no results), as in the other
points; a bottleneck arrival is every packet offered to the bottleneck's queue during the run.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: RED's parameters (packets), shared by the RED-based schemes
RED = {"min_th": 100, "max_th": 300, "w_q": 0.002, "max_p": 0.1, "gentle": True}
#: the flow count RED runs at (its mean queue is the target)
N0 = 200
#: how close each scheme's mean queue must come to RED's (relative)
TOLERANCE = 0.05
#: the CHOKe family, in report order
CHOKE_FAMILY = ["choke", "gchoke", "perfect_choke", "chokew", "choked"]
#: the fair schemes with a little state (issue 24) and the fair queues
FAIR = ["fred", "fq_codel", "sfb", "afd", "csfq", "red_pd", "sred", "xchoke", "hhf", "drr"]
#: every scheme, RED first (the reference)
SCHEMES = ["red"] + CHOKE_FAMILY + FAIR
NAMES = {"red": "RED", "choke": "CHOKe", "gchoke": "gCHOKe", "perfect_choke": "Perfect CHOKe",
         "chokew": "CHOKeW", "choked": "CHOKeD", "fred": "FRED", "fq_codel": "FQ-CoDel", "sfb": "SFB",
         "afd": "AFD", "csfq": "CSFQ", "red_pd": "RED-PD", "sred": "SRED", "xchoke": "xCHOKe", "hhf": "HHF",
         "drr": "DRR"}
#: schemes whose queue is a fixed part of the buffer under load: the buffer is this times the target
BUFFER_FACTOR = {"drr": 1.03, "hhf": 1.03, "fq_codel": 1.03, "sred": 1.1, "csfq": 1.8}
#: the link's rate and packet size in choke.toml (for FQ-CoDel's target delay)
LINK_BPS = 100e6
PKT_BITS = 8 * 1000


def _inline(d: dict) -> str:
    def v(x):
        return "true" if x is True else "false" if x is False else (f'"{x}"' if isinstance(x, str) else repr(x))
    return "{ " + ", ".join(f"{k} = {v(x)}" for k, x in d.items()) + " }"


def aqm_table(scheme: str, target: float) -> str:
    """The bottleneck's `aqm` value for `scheme` (TOML inline table)."""
    if scheme in ("red", "choke", "gchoke", "perfect_choke", "xchoke", "red_pd"):
        return _inline({"type": scheme, **RED})
    if scheme == "fred":
        return _inline({"type": "fred", "min_th": RED["min_th"], "max_th": RED["max_th"]})
    if scheme == "choked":
        return _inline({"type": "choked", "t_min": RED["min_th"], "t_max": RED["max_th"]})
    if scheme == "chokew":
        return _inline({"type": "chokew", "l_th": round(target / 2), "l_minus": round(0.9 * target),
                        "l_plus": round(1.1 * target)})
    if scheme == "afd":
        return _inline({"type": "afd", "q_target": round(target)})
    if scheme == "fq_codel":
        us = max(target, 1.0) * PKT_BITS / LINK_BPS * 1e6
        return _inline({"type": "fq_codel", "target": f"{us:.6g}us"})
    if scheme in ("sfb", "sred", "hhf", "drr", "csfq"):
        return _inline({"type": scheme})
    raise ValueError(scheme)


def overrides(scheme: str, flows: int, target: float) -> list[str]:
    """The `--set` values of one run of `scheme` with `flows` TCP flows at queue `target`."""
    over = [f"flows[0].count={flows}", f"bottleneck.aqm={aqm_table(scheme, target)}"]
    if scheme in BUFFER_FACTOR and target > 0:
        over.append(f"bottleneck.limit={max(2, round(BUFFER_FACTOR[scheme] * target))}")
    return over


def run(scheme: str, flows: int, target: float) -> dict:
    """One run: the bottleneck's mean queue and arrivals, and the engine's CPU seconds."""
    from .. import _core

    text = (HERE / "choke.toml").read_text(encoding="utf-8")
    over = overrides(scheme, flows, target)
    clock = lambda: (time.perf_counter(), time.thread_time())  # noqa: E731
    raw = _core.bench(text, f"choke-{scheme}", over, clock)
    (_, c1), (_, c2) = raw["marks"][1], raw["marks"][2]
    b = json.loads(raw["summary"])["bottleneck"]
    return {"queue": b["queue_mean_pkts"], "arrivals": b["arrivals"], "cpu_s": c2 - c1,
            "drop_ratio": b["drop_ratio"], "utilisation": b["utilisation"], "state_bytes": b.get("state_bytes")}


def calibrate(scheme: str, target: float, max_runs: int = 10) -> tuple[int, dict]:
    """The flow count (and its run) at which `scheme`'s mean queue is nearest `target`: doubling or
    halving until the target is bracketed, then bisection in log scale."""
    seen: dict[int, dict] = {}

    def q(n: int) -> float:
        if n not in seen:
            seen[n] = run(scheme, n, target)
        return seen[n]["queue"]

    def best() -> int:
        return min(seen, key=lambda n: abs(seen[n]["queue"] - target))

    lo = hi = N0
    if q(N0) < target:
        while q(hi) < target and len(seen) < max_runs and hi < 16 * N0:
            lo, hi = hi, hi * 2
    else:
        while q(lo) > target and len(seen) < max_runs and lo > N0 // 16:
            lo, hi = lo // 2, lo
    while len(seen) < max_runs and abs(q(best()) - target) > TOLERANCE * target and hi - lo > 1:
        mid = round(math.sqrt(lo * hi))
        if mid in (lo, hi):
            break
        if q(mid) < target:
            lo = mid
        else:
            hi = mid
    n = best()
    return n, seen[n]


def measure(repeat: int = 3, progress=None, schemes: list[str] | None = None) -> list[dict]:
    """The rows of the report, RED first; `schemes` chooses the others (default: all)."""
    chosen = ["red"] + [s for s in (schemes or SCHEMES) if s != "red"]
    unknown = [s for s in chosen if s not in NAMES]
    if unknown:
        raise ValueError(f"unknown scheme {unknown[0]!r}; one of: {', '.join(SCHEMES)}")
    red = run("red", N0, 0.0)
    target = red["queue"]
    flows = {"red": N0}
    for s in chosen[1:]:
        flows[s], _ = calibrate(s, target)
        if progress:
            progress(s)
    runs: dict[str, list[dict]] = {s: [] for s in chosen}
    for _ in range(max(1, repeat)):
        for s in chosen:
            runs[s].append(run(s, flows[s], target))
    rows = []
    for s in chosen:
        rs = runs[s]
        ns = statistics.median(r["cpu_s"] / r["arrivals"] * 1e9 for r in rs)
        rows.append({"figure": "choke", "scheme": s, "name": NAMES[s], "tcp_flows": flows[s],
                     "queue_mean_pkts": statistics.median(r["queue"] for r in rs),
                     "target_pkts": target, "arrivals": rs[0]["arrivals"],
                     "drop_ratio": rs[0]["drop_ratio"], "utilisation": rs[0]["utilisation"],
                     "ns_per_arrival": ns, "runs": len(rs), "state_bytes": rs[0].get("state_bytes")})
    base = rows[0]["ns_per_arrival"]
    for r in rows:
        r["ratio_to_red"] = r["ns_per_arrival"] / base
        r["queue_off"] = r["queue_mean_pkts"] / target - 1
    return rows


def format_rows(rows: list[dict]) -> str:
    head = (f"{'scheme':<14} {'TCP flows':>9} {'mean queue':>10} {'vs RED':>7} {'drop ratio':>10} "
            f"{'engine ns/arrival':>17} {'x RED':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['name']:<14} {r['tcp_flows']:>9} {r['queue_mean_pkts']:>10.1f} {r['queue_off'] * 100:>+6.1f}% "
                     f"{r['drop_ratio']:>10.3f} {r['ns_per_arrival']:>17.0f} {r['ratio_to_red']:>6.2f}")
    return "\n".join(lines)
