"""ns-3 as a third engine: a dumbbell scenario run by ``dumbbell.cc`` and read back as a Result.

:func:`run` is :func:`aqmlab.run` with ns-3.44 underneath, for the dumbbells
:mod:`aqmlab.ns3.plan` can translate: it writes the program's input, runs the program (compiled
against the ``ns3`` wheel by :mod:`aqmlab.ns3.build`) in a temporary folder and returns a
:class:`~aqmlab.run.result.Result` with aqmlab's summary keys and flows-table columns, each computed
by the definitions of docs/metrics.md (the summary's sums, shares and indices by
:mod:`aqmlab.run.summary`, as for emulated and ns-2.35 runs). What the program does not measure is
undefined (NaN, JSON null), never guessed. The translation's notes are in
``summary["engine"]["notes"]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from .. import _core
from ..base.errors import Ns3Error, one_line
from ..base.version import __version__
from ..ns2.results import FLOW_COLUMNS
from ..run.result import Result
from ..run.summary import REASONS, clean, fairness, group_entry, link_entry
from .build import RELEASE, program
from .plan import HEADERS, Plan, make_plan

NAN = float("nan")


def reason(qdisc: str, text: str) -> str:
    """aqmlab's drop reason (docs/metrics.md) of an ns-3 queue disc's drop reason."""
    t = text.replace("(Dropped by child queue disc) ", "").lower()
    if "limit" in t or "internal queue" in t:
        return "overflow"
    if t == "forced drop":  # RED's hard region; PIE's and FQ-PIE's full buffer
        return "forced" if qdisc == "ns3::RedQueueDisc" else "overflow"
    return "early"


def _drops(plan: Plan, counts: dict) -> dict:
    out = {r: 0 for r in REASONS}
    for text, n in counts.items():
        out[reason(plan.qdisc, text)] += int(n)
    return out


def flow_rows(plan: Plan, out: dict) -> list:
    W = plan.duration_s - plan.warmup_s
    scale = plan.mss / (plan.mss - HEADERS)  # ns-3's payload bytes -> aqmlab's segment bytes
    rows = []
    for f, c in zip(plan.flows, out["flows"]):
        drops = _drops(plan, c["drops"])
        thr = c["tx_bytes"] * 8 / W
        good = c["rx_bytes"] * scale
        row = {col: NAN for col in FLOW_COLUMNS}
        row.update({
            "flow_id": f["flow_id"], "group": f["group"], "transport": "tcp", "app": "bulk",
            "variant": f["variant"], "recovery": f["recovery"], "host": f["host"], "session": -1,
            "priority": f["priority"], "start_s": f["start_s"], "rtt_prop_s": f["rtt_prop_s"],
            "throughput_bps": thr, "goodput_bps": good * 8 / W, "share": thr / plan.rate_bps,
            "retx_pkts": float(c["retx_pkts"]), "goodput_bytes": good,
            "bneck_arrivals": float(c["arrivals"]), "bneck_tx_pkts": float(c["tx_packets"]),
            **{f"drops_{r}": float(drops[r]) for r in REASONS}, "drops_total": float(sum(drops.values())),
            "ack_drops": 0.0, "timeouts": float(c["timeouts"]), "fast_retransmits": float(c["recoveries"]),
            "ce_marks": float(c["marks"]), "ecn_reductions": float(c["cwr"]),
            "completion_time_s": NAN, "stop_s": NAN, "measured_link": "bottleneck",
            "path": "access bottleneck access", "hop_drops": f"0 {int(sum(drops.values()))} 0",
            "ack_path": "access reverse access", "ack_hop_drops": "0 0 0",
            # ns-3's own: its mean window (segments) and smoothed RTT over the window
            "cwnd_mean": c["cwnd_mean_bytes"] / (plan.mss - HEADERS) if c["cwnd_mean_bytes"] is not None else NAN,
            "srtt_mean_s": c["srtt_mean_s"] if c["srtt_mean_s"] is not None else NAN,
        })
        rows.append(row)
    return rows


def summary(plan: Plan, out: dict, rows: list, program_path: str, overrides=()) -> dict:
    W = plan.duration_s - plan.warmup_s
    b = out["bottleneck"]
    drops = {r: 0 for r in REASONS}
    for part in ("drops_before_enqueue", "drops_after_dequeue"):
        for r, n in _drops(plan, b[part]).items():
            drops[r] += n
    entry = link_entry({
        "aqm": plan.aqm, "delay_s": NAN, "limit": plan.limit, "queue_unit": "packets",
        "arrivals": b["arrivals"], "transmitted": b["tx_packets"], "transmitted_bytes": b["tx_bytes"],
        "drops": drops, "link_loss_drops": 0, "queue_mean_pkts": b["queue_mean_pkts"], "queue_mean_bytes": None,
        "queue_max_pkts": b["queue_max_pkts"], "delay_mean_s": b["delay_mean_s"], "delay_p50_s": b["delay_p50_s"],
        "delay_p95_s": b["delay_p95_s"], "delay_p99_s": b["delay_p99_s"], "delay_samples": b["delay_samples"],
    }, plan.rate_bps, W)
    entry["ce_marks"] = int(sum(b["marks"].values()))
    groups = []
    for name in dict.fromkeys(r["group"] for r in rows):
        mine = [r for r in rows if r["group"] == name]
        groups.append(group_entry(name, "tcp", "bulk", mine[0]["variant"], mine, plan.rate_bps))
    s = {
        "scenario": {"name": plan.name, "seed": plan.seed, "duration_s": plan.duration_s, "warmup_s": plan.warmup_s,
                     "window_s": W, "flows": len(rows), "aqmlab_version": __version__},
        "bottleneck": {**entry, "name": "bottleneck"},
        "links": {"bottleneck": {**entry, "name": "bottleneck"}},
        "groups": groups,
        "fairness": fairness(rows),
        "engine": {"name": f"ns-{RELEASE}", "program": program_path, "queue_disc": plan.qdisc,
                   "rng_run": plan.seed, "notes": list(plan.notes)},
    }
    if overrides:
        s["scenario"]["overrides"] = list(overrides)
    return clean(s)


def timeseries(plan: Plan, series_csv: Path) -> tuple[list, list | None]:
    """The bottleneck's series and the flows' windows (segments), from the program's samples."""
    import csv

    with open(series_csv, newline="", encoding="ascii") as fh:
        rows = list(csv.reader(fh))
    head, data = rows[0], rows[1:]
    dt = plan.sample_s
    ts = {c: [] for c in ("time_s", "link", "queue_pkts", "utilisation", "drops")}
    fs = {c: [] for c in ("time_s", "flow_id", "group", "transport", "cwnd")}
    cw = [i for i, c in enumerate(head) if c.startswith("cwnd")]
    for r in data:
        t = float(r[0])
        ts["time_s"].append(t)
        ts["link"].append("bottleneck")
        ts["queue_pkts"].append(float(r[1]))
        ts["utilisation"].append(float(r[2]) * 8 / (plan.rate_bps * dt))
        ts["drops"].append(float(r[3]))
        for k, i in enumerate(cw):
            f = plan.flows[k]
            if f["start_s"] > t:
                continue
            fs["time_s"].append(t)
            fs["flow_id"].append(f["flow_id"])
            fs["group"].append(f["group"])
            fs["transport"].append("tcp")
            fs["cwnd"].append(float(r[i]) / (plan.mss - HEADERS))
    return list(ts.items()), list(fs.items())


def run(scenario, seed: int | None = None, overrides: Sequence[str] = (), keep: str | os.PathLike | None = None,
        timeout: float | None = None, edit: Callable[[str], str] | None = None) -> Result:
    """Run ``scenario`` (a path, TOML text or a dict) in ns-3 and return its results in aqmlab's format.

    A key the translation cannot carry raises :class:`aqmlab.ScenarioError` (``'<key path>: ns-3
    cannot run ...'``); a missing wheel or compiler :class:`~aqmlab.base.errors.Ns3Missing`; a
    failed program :class:`~aqmlab.base.errors.Ns3Error`. ``keep``: a folder that receives the
    program's input (``ns3.spec``), its output (``ns3.json``) and samples (``ns3-series.csv``).
    ``edit``: a function applied to the program's input before the run (the diagnostics of
    :data:`aqmlab.ns3.vsns3.ABLATIONS` swap an ns-3 class for another)."""
    from ..run.source import check_overrides, check_seed, read_source

    src = read_source(scenario)
    ov = check_overrides(overrides)
    seed = check_seed(seed)
    plan = make_plan(src, seed, ov)
    exe = program()
    resolved = _core.resolve(src.text, src.name, ov, seed, ["The scenario of this run, resolved by aqmlab and "
                                                             f"run in ns-{RELEASE} (aqmlab.ns3)."])
    with tempfile.TemporaryDirectory(prefix="aqmlab-ns3-") as tmp:
        d = Path(tmp)
        spec = plan.spec()
        (d / "ns3.spec").write_text(edit(spec) if edit is not None else spec, encoding="utf-8")
        t0 = time.perf_counter()
        try:
            r = subprocess.run([str(exe), "ns3.spec", "ns3.json", "ns3-series.csv"], cwd=d, capture_output=True,
                               text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Ns3Error(f"the ns-3 run of {plan.name} (seed {plan.seed}) took longer than {timeout:g} s") from None
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            tail = " | ".join(ln.strip() for ln in r.stderr.splitlines()[-4:] if ln.strip())
            raise Ns3Error(one_line(f"the ns-3 program failed (exit status {r.returncode}): {tail or 'no message'}"))
        out = json.loads((d / "ns3.json").read_text(encoding="utf-8"))
        ts, fs = timeseries(plan, d / "ns3-series.csv")
        if keep is not None:
            k = Path(keep)
            k.mkdir(parents=True, exist_ok=True)
            for name in ("ns3.spec", "ns3.json", "ns3-series.csv"):
                shutil.copyfile(d / name, k / name)
    rows = flow_rows(plan, out)
    s = summary(plan, out, rows, str(exe), ov)
    columns = FLOW_COLUMNS + ["cwnd_mean", "srtt_mean_s"]
    res = Result(s, [(c, [row[c] for row in rows]) for c in columns], ts, wall, flow_series=fs)
    res._scenario = resolved
    return res


def available() -> bool:
    """Whether ns-3 runs here: the ``ns3`` wheel and a C++ compiler are installed."""
    from ..base.errors import Ns3Missing
    from .build import compiler, wheel

    try:
        wheel()
        compiler()
        return True
    except Ns3Missing:
        return False


__all__ = ["run", "available", "reason", "flow_rows", "summary", "timeseries"]
