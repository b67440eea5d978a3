"""One scenario in both engines, side by side (``aqmlab crosscheck ns2``; docs/crosscheck.md).

:func:`crosscheck` runs a scenario in aqmlab and in ns-2.35 for each seed and returns both engines'
flat metrics rows (:func:`aqmlab.run.metrics.run_row`), with the comparisons to print
(:func:`comparisons`): each measured link's utilisation, mean queue, queueing delay, drop ratio
and drops; each group's throughput, share, goodput per flow, timeouts and Jain's index; the
run's Jain's indices.

One substitution is made, and said: RED's default variant ``fj93`` (the 1993 paper's procedure)
has no ns-2 form, so a scenario whose RED keeps it is run by **both** engines with ``variant =
"ns2"`` (ns-2.35's own Queue/RED, which aqmlab models), and a note says so. Every other key ns-2.35
cannot express is refused (:mod:`aqmlab.ns2.plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from .. import _core
from ..base.compat import tomllib
from ..run.metrics import run_row
from ..run.source import check_overrides, read_source
from .engine import find_ns
from .engine import run as ns2_run


def red_substitutions(src, overrides: Sequence[str]) -> tuple[list, list]:
    """The overrides that make a dumbbell's RED links ns-2's variant, and the notes saying so."""
    sc = tomllib.loads(_core.resolve(src.text, src.name, list(overrides), None))
    extra, notes = [], []
    for link in ("bottleneck", "reverse"):
        aqm = sc.get(link, {}).get("aqm", {}) if "bottleneck" in sc else {}
        if aqm.get("type") == "red" and aqm.get("variant") == "fj93":
            extra.append(f'{link}.aqm.variant="ns2"')
            notes.append(f'{link}.aqm.variant: RED variant "fj93" has no ns-2.35 form; both engines run variant '
                         '"ns2" (ns-2.35\'s Queue/RED, as aqmlab models it)')
    return extra, notes


def metric_keys(summary: dict) -> list[tuple[str, str]]:
    """(row key, label) of the metrics compared, from an aqmlab summary of the scenario."""
    out = []
    dumbbell = "bottleneck" in summary
    for name, l in sorted(summary.get("links", {}).items(), key=lambda kv: kv[1]["index"]):
        pre = "bottleneck." if dumbbell and name == "bottleneck" else f"links.{name}."
        out += [(f"{pre}utilisation", f"{name}: utilisation"), (f"{pre}queue_mean_pkts", f"{name}: mean queue (pkts)"),
                (f"{pre}delay_mean_s", f"{name}: queueing delay, mean (s)"),
                (f"{pre}delay_p99_s", f"{name}: queueing delay, p99 (s)"),
                (f"{pre}drop_ratio", f"{name}: drop ratio"), (f"{pre}drops_total", f"{name}: drops"),
                (f"{pre}drops.early", f"{name}: drops, early"), (f"{pre}drops.overflow", f"{name}: drops, overflow")]
    for g in summary.get("groups", []):
        n = g["name"]
        kind = f"{g['variant'] if g['transport'] == 'tcp' else g['transport']}/{g['app']}"
        pre = f"group.{n}."
        out += [(f"{pre}throughput_bps", f"{n} ({kind}, {g['flows']}): throughput (b/s)"),
                (f"{pre}share", f"{n}: share"), (f"{pre}goodput_per_flow_bps", f"{n}: goodput per flow (b/s)"),
                (f"{pre}drop_pct", f"{n}: drops (% of arrivals)")]
        if g["transport"] == "tcp":
            out += [(f"{pre}timeouts", f"{n}: timeouts"), (f"{pre}fast_retransmits", f"{n}: fast retransmits"),
                    (f"{pre}jain_throughput", f"{n}: Jain's index (throughput)")]
    out += [("fairness.jain_throughput_all", "Jain's index, all flows"),
            ("fairness.jain_throughput_tcp", "Jain's index, TCP flows"),
            ("fairness.jain_goodput_tcp", "Jain's index, TCP goodput")]
    return out


def crosscheck(scenario, seeds: Sequence[int] | None = None, overrides: Sequence[str] = (),
               progress: Callable[[float], None] | None = None, out=None) -> dict:
    """Run ``scenario`` in both engines for each seed (default: the scenario's own seed).

    Returns ``{"aqmlab": [row, ...], "ns2": [row, ...], "seeds": [...], "metrics": [(key, label)],
    "notes": [...], "overrides": [...], "summaries": {"aqmlab": s, "ns2": s}}`` (the rows are
    :func:`aqmlab.run.metrics.run_row`'s, the summaries the first seed's). ``progress(sim_seconds)``
    is called with the simulated time done so far, over all runs of both engines. With ``out`` (a
    folder), each run is written there as a run folder (``aqmlab-seed<N>/``, ``ns2-seed<N>/``, the
    latter with its Tcl script ``ns2.tcl``), which ``aqmlab diff`` and ``aqmlab plot`` read."""
    from ..run.api import run as aqmlab_run

    find_ns()  # (before any work: a missing ns is said at once)
    src = read_source(scenario)
    ov = check_overrides(overrides)
    extra, notes = red_substitutions(src, ov)
    ov = ov + extra
    if seeds is None:
        seeds = [int(tomllib.loads(_core.resolve(src.text, src.name, ov, None))["simulation"]["seed"])]
    res: dict = {"aqmlab": [], "ns2": [], "seeds": list(seeds), "notes": notes, "overrides": ov, "summaries": {}}
    done = [0.0]

    def step(base: float):
        return None if progress is None else (lambda t: progress(base + t))

    for i, s in enumerate(seeds):
        a = aqmlab_run(src, seed=s, overrides=ov, progress=step(done[0]), pcap_dir=False)
        dur = a.summary["scenario"]["duration_s"]
        done[0] += dur
        keep = None if out is None else Path(out) / f"ns2-seed{s}"
        b = ns2_run(src, seed=s, overrides=ov, progress=step(done[0]), keep=keep)
        done[0] += dur
        if out is not None:
            a.save(Path(out) / f"aqmlab-seed{s}")
            b.save(keep)
        if i == 0:
            res["summaries"] = {"aqmlab": a.summary, "ns2": b.summary}
            res["notes"] += b.summary["engine"].get("notes", [])
            res["metrics"] = metric_keys(a.summary)
        res["aqmlab"].append(run_row(a))
        res["ns2"].append(run_row(b))
    return res


__all__ = ["crosscheck", "metric_keys", "red_substitutions"]
