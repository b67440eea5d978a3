"""The simulated TCPs against the Linux kernel's: the table and figures of docs/tcp-vs-linux.md.

    sudo python -m aqmlab.emulate.vslinux [--seeds 1,2,3,4,5] [--cases reno,cubic,bbr,droptail,red,choke,fq_codel,cake,rtt]
                                          [--interval 10ms] [--out DIR] [--sim-only] [--replot]

Each case is one scenario (``examples/tcp-vs-linux/alone.toml``, ``compete.toml`` or ``rtt.toml`` of
the package, installed with it, so this runs from any folder) with one override,
run by the simulator (:func:`aqmlab.run`) and by the emulator (:func:`aqmlab.emulate.emulate`)
with the same overrides and seed; the TCP variants map onto the kernel's modules as docs/emulation.md
says (``sack`` → Linux ``reno`` with SACK, ``cubic`` → ``cubic``, ``bbr`` → ``bbr``). Both record the
per-flow series (``simulation.flow_series_interval``, 10 ms by default): the congestion window,
pacing rate, smoothed RTT and retransmissions, Linux's from TCP_INFO in the sender's namespace.

Writes into ``--out`` (default ``./tcp-vs-linux``): every run's folder (``<case>/<sim|linux>-s<seed>/``),
``runs.csv`` (a row per run, with the machine's 1-minute load average when it ended), ``table.md``
(the mean over the seeds, with the range) and, per case, ``<case>.png`` (cwnd, pacing rate and
smoothed RTT over time, simulated and Linux overlaid, first seed). ``--replot`` redraws table and
figures from the saved run folders; ``--sim-only`` runs no emulation (no root needed). Wall time:
the sum of the emulated durations (5 seeds of all nine cases: about 31 minutes).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from ..base.errors import EmulationError, ScenarioError, UserError
from ..run.source import EXAMPLES

#: the cases' scenario files: package data, found the same from a checkout and from an installed package
HERE = EXAMPLES / "tcp-vs-linux"

RED = "min_th=15, max_th=45, max_p=0.1, w_q=0.002"
#: case -> (scenario file, overrides, title)
CASES = {
    "reno": ("alone.toml", ['flows[0].tcp={variant="sack"}'], "Reno + SACK alone, DropTail 1000 packets"),
    "cubic": ("alone.toml", ['flows[0].tcp={variant="cubic"}'], "CUBIC alone, DropTail 1000 packets"),
    "bbr": ("alone.toml", ['flows[0].tcp={variant="bbr"}'], "BBR alone, DropTail 1000 packets"),
    "droptail": ("compete.toml", ['bottleneck.aqm={type="droptail"}'], "BBR vs CUBIC, DropTail 100 packets"),
    "red": ("compete.toml", [f'bottleneck.aqm={{type="red", {RED}}}'], "BBR vs CUBIC, RED"),
    "choke": ("compete.toml", [f'bottleneck.aqm={{type="choke", {RED}}}'], "BBR vs CUBIC, CHOKe"),
    "fq_codel": ("compete.toml", ['bottleneck.aqm={type="fq_codel"}'], "BBR vs CUBIC, FQ-CoDel"),
    "cake": ("compete.toml", ['bottleneck.aqm={type="cake"}'], "BBR vs CUBIC, CAKE"),
    "rtt": ("rtt.toml", [], "CUBIC at 44 ms vs CUBIC at 124 ms, DropTail 100 packets"),
}
#: the competition cases (two groups sharing the bottleneck)
COMPETITION = ("droptail", "red", "choke", "fq_codel", "cake", "rtt")
MODES = ("sim", "linux")


def scenario_path(case: str) -> Path:
    return HERE / CASES[case][0]


def overrides(case: str, interval: str) -> list[str]:
    return CASES[case][1] + [f'simulation.flow_series_interval="{interval}"']


def run_case(case: str, mode: str, seed: int, interval: str, duration: float | None = None):
    """One run of a case: a :class:`aqmlab.run.result.Result` (simulated or emulated)."""
    ov = overrides(case, interval)
    if duration is not None:
        ov += [f'simulation.duration="{duration:g}s"', f'simulation.warmup="{duration / 4:g}s"']
    if mode == "sim":
        from ..run.api import run
        return run(str(scenario_path(case)), seed=seed, overrides=ov)
    from .run import emulate
    return emulate(str(scenario_path(case)), seed=seed, overrides=ov)


def window_series(fs, warmup: float):
    """The per-flow series after the warm-up."""
    return fs[fs["time_s"] > warmup]


def metrics(res) -> dict:
    """A run's row: the bottleneck, then per group its share, retransmissions, timeouts and the
    means over the measurement window of its series (cwnd, pacing rate, smoothed RTT)."""
    s = res.summary
    b = s["bottleneck"]
    warm = s["scenario"]["warmup_s"]
    row = {
        "utilisation": b["utilisation"],
        "queue_mean_pkts": b["queue_mean_pkts"],
        "queue_max_pkts": b["queue_max_pkts"],
        "delay_mean_ms": _ms(b.get("delay_mean_s")),
        "delay_p99_ms": _ms(b.get("delay_p99_s")),
        "drops": b["drops_total"],
    }
    fl = res.flows
    fs = res.flow_series
    for g, part in fl.groupby("group", sort=False):
        row[f"{g}.share"] = float(part["share"].sum())
        row[f"{g}.retx_pkts"] = float(part["retx_pkts"].sum())
        row[f"{g}.timeouts"] = float(part["timeouts"].sum())
        if "rto_recovery_s" in part:
            row[f"{g}.rto_recovery_s"] = float(part["rto_recovery_s"].sum())
        if fs is not None:
            w = window_series(fs[fs["group"] == g], warm)
            row[f"{g}.cwnd"] = float(w["cwnd"].mean())
            row[f"{g}.pacing_mbps"] = float(w["pacing_rate_bps"].mean() / 1e6)
            row[f"{g}.srtt_ms"] = float(w["srtt_s"].mean() * 1e3)
    return row


def _ms(x):
    return float("nan") if x is None else x * 1e3


# ------------------------------------------------------------------------------------------- table

COLUMNS = [  # (key, header, format)
    ("utilisation", "utilisation", lambda v: f"{100 * v:.1f} %"),
    ("queue_mean_pkts", "queue mean (pkts)", lambda v: f"{v:.1f}"),
    ("delay_p99_ms", "queueing delay p99 (ms)", lambda v: f"{v:.1f}"),
    ("drops", "drops", lambda v: f"{v:.0f}"),
]
GROUP_COLUMNS = [
    ("share", "share", lambda v: f"{100 * v:.1f} %"),
    ("cwnd", "cwnd mean (seg)", lambda v: f"{v:.1f}"),
    ("pacing_mbps", "pacing rate mean (Mb/s)", lambda v: "—" if math.isnan(v) else f"{v:.2f}"),
    ("srtt_ms", "srtt mean (ms)", lambda v: f"{v:.1f}"),
    ("retx_pkts", "retransmitted (pkts)", lambda v: f"{v:.0f}"),
    ("timeouts", "timeouts", lambda v: f"{v:.1f}"),
    ("rto_recovery_s", "in RTO recovery (s)", lambda v: f"{v:.2f}"),
]


def _cell(values, fmt) -> str:
    import numpy as np

    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return "—"
    if v.size == 1 or v.min() == v.max():
        return fmt(float(v.mean()))
    return f"{fmt(float(v.mean()))} ({fmt(float(v.min()))}–{fmt(float(v.max()))})"


def table(df) -> str:
    """Markdown: a row per case, mode and group; the mean over the seeds (range in brackets)."""
    head = ["case", "", "group"] + [h for _, h, _ in COLUMNS] + [h for _, h, _ in GROUP_COLUMNS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in [c for c in CASES if c in set(df["case"])]:
        d = df[df["case"] == case]
        groups = sorted({k.split(".")[0] for k in d.columns if "." in k and d[k].notna().any()},
                        key=lambda g: (g not in ("bbr", "short"), g))
        for mode in MODES:
            m = d[d["mode"] == mode]
            if m.empty:
                continue
            seeds = len(m)
            for i, g in enumerate(groups):
                if f"{g}.share" not in m or m[f"{g}.share"].isna().all():
                    continue
                first = i == 0
                cells = [case if mode == "sim" and first else "",
                         (("simulated" if mode == "sim" else "Linux") + f" ({seeds})") if first else "", g]
                cells += [_cell(m[k], f) if first else "" for k, _, f in COLUMNS]
                cells += [_cell(m[f"{g}.{k}"], f) for k, _, f in GROUP_COLUMNS]
                out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------- tolerances

#: the stated tolerances (docs/tcp-vs-linux.md, "Tolerances") that the verdict table checks
SHARE_PTS = 10.0
RETX_FACTOR, RETX_FLOOR = 2.0, 10.0
TIMEOUT_FACTOR, TIMEOUT_FLOOR = 2.0, 1.0
RTO_FACTOR, RTO_FLOOR_FRACTION = 2.0, 0.01


def _within(a: float, b: float, factor: float, floor: float) -> bool:
    """``a`` and ``b`` within ``factor`` of each other, or both at most ``floor``."""
    if max(a, b) <= floor:
        return True
    lo, hi = sorted((a, b))
    return lo > 0 and hi / lo <= factor


def verdicts(df, window_s: float = 30.0) -> str:
    """Markdown: for each competition case, the seeds' means compared with the stated tolerances
    of share, utilisation, queue, retransmissions, timeouts and time in RTO recovery per group."""
    import numpy as np

    head = ["case", "group", "share sim / Linux (pts)", "utilisation (pts)", "queue", "retransmissions",
            "timeouts sim / Linux", "in RTO recovery sim / Linux (s)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    mark = {True: "✓", False: "✗"}
    for case in [c for c in COMPETITION if c in set(df["case"])]:
        d = df[df["case"] == case]
        sim, lin = d[d["mode"] == "sim"], d[d["mode"] == "linux"]
        if sim.empty or lin.empty:
            continue
        mean = lambda m, k: float(np.nanmean(m[k])) if k in m and m[k].notna().any() else float("nan")  # noqa: E731
        groups = sorted({k.split(".")[0] for k in d.columns if k.endswith(".share") and d[k].notna().any()},
                        key=lambda g: (g not in ("bbr", "short"), g))
        for i, g in enumerate(groups):
            s_sh, l_sh = 100 * mean(sim, f"{g}.share"), 100 * mean(lin, f"{g}.share")
            cells = [case if i == 0 else "", g, f"{mark[abs(s_sh - l_sh) <= SHARE_PTS]} {s_sh:.1f} / {l_sh:.1f}"]
            if i == 0:
                du = 100 * abs(mean(sim, "utilisation") - mean(lin, "utilisation"))
                q = [mean(sim, "queue_mean_pkts"), mean(lin, "queue_mean_pkts")]
                qr = abs(q[0] - q[1]) / q[1] if q[1] else float("nan")
                cells += [f"{mark[du <= 3]} {du:.1f}", f"{mark[qr <= 0.25]} {100 * qr:.0f} %"]
            else:
                cells += ["", ""]
            r = [mean(sim, f"{g}.retx_pkts"), mean(lin, f"{g}.retx_pkts")]
            t = [mean(sim, f"{g}.timeouts"), mean(lin, f"{g}.timeouts")]
            o = [mean(sim, f"{g}.rto_recovery_s"), mean(lin, f"{g}.rto_recovery_s")]
            cells.append(f"{mark[_within(*r, RETX_FACTOR, RETX_FLOOR)]} {r[0]:.0f} / {r[1]:.0f}")
            cells.append(f"{mark[_within(*t, TIMEOUT_FACTOR, TIMEOUT_FLOOR)]} {t[0]:.1f} / {t[1]:.1f}")
            if np.isnan(o[1]):
                cells.append(f"{o[0]:.2f} / —")
            else:
                ok = _within(*o, RTO_FACTOR, RTO_FLOOR_FRACTION * window_s)
                cells.append(f"{mark[ok]} {o[0]:.2f} / {o[1]:.2f}")
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------- figures


def figure(case: str, series: dict, path: Path, t_max: float | None = None):
    """cwnd, pacing rate and smoothed RTT over time, simulated (solid) and Linux (dashed), a colour
    per flow group; the legend below the panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(9, 7.5), sharex=True)
    colours = {"f": "C0", "bbr": "C3", "cubic": "C0", "short": "C0", "long": "C1"}
    panels = [("cwnd", 1.0, "cwnd (segments)"), ("pacing_rate_bps", 1e-6, "pacing rate (Mb/s)"),
              ("srtt_s", 1e3, "smoothed RTT (ms)")]
    for mode, fs in series.items():
        if fs is None or fs.empty:
            continue
        if t_max is not None:
            fs = fs[fs["time_s"] <= t_max]
        for g, part in fs.groupby("group", sort=False):
            name = g if g != "f" else case
            label = f"{name} — {'simulated' if mode == 'sim' else 'Linux'}"
            for ax, (col, scale, _) in zip(axes, panels):
                y = part[col] * scale
                if y.notna().any():
                    ax.plot(part["time_s"], y, color=colours.get(g, "C2"), lw=0.8,
                            ls="-" if mode == "sim" else "--", alpha=0.9 if mode == "sim" else 0.8, label=label)
    for ax, (_, _, ylabel) in zip(axes, panels):
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[-1].set_xlabel("time (s)")
    axes[0].set_title(CASES[case][2] + (" (10 Mb/s)" if case == "rtt" else " (10 Mb/s, 44 ms RTT)"))
    handles, labels = axes[0].get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen.keys()), loc="lower center", ncol=min(4, len(seen)), frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ------------------------------------------------------------------------------------------ driver


class Saved:
    """A saved run folder: its summary, flows and per-flow series."""

    def __init__(self, folder: Path):
        import json

        import pandas as pd

        self.summary = json.loads((folder / "summary.json").read_text())
        self.flows = pd.read_parquet(folder / "flows.parquet")
        fs = folder / "flow_series.parquet"
        self.flow_series = pd.read_parquet(fs) if fs.exists() else None


def _load(folder: Path):
    return Saved(folder)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m aqmlab.emulate.vslinux", description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1,2,3,4,5", help="seeds (default 1,2,3,4,5)")
    p.add_argument("--cases", default=",".join(CASES), help=f"cases (default {','.join(CASES)})")
    p.add_argument("--interval", default="10ms", help="period of the per-flow series (default 10ms)")
    p.add_argument("--duration", type=float, default=None, help="seconds per run (default: the scenario's)")
    p.add_argument("--out", default="tcp-vs-linux", help="output directory (default ./tcp-vs-linux)")
    p.add_argument("--sim-only", action="store_true", help="simulate only (no root needed)")
    p.add_argument("--replot", action="store_true", help="only redraw the table and figures from --out")
    p.add_argument("--t-max", type=float, default=None, help="figures: last time shown (s)")
    a = p.parse_args(argv)
    out = Path(a.out)
    cases = [c for c in a.cases.split(",") if c]
    bad = [c for c in cases if c not in CASES]
    if bad:
        print(f"error: --cases: unknown case {bad[0]!r} (cases: {', '.join(CASES)})", file=sys.stderr)
        return 2
    try:
        seeds = [int(x) for x in a.seeds.split(",") if x]
    except ValueError:
        print(f"error: --seeds: {a.seeds!r}: give integers separated by commas, e.g. 1,2,3", file=sys.stderr)
        return 2
    if not seeds:
        print("error: --seeds: give at least one seed", file=sys.stderr)
        return 2
    try:
        return _compare(a, out, cases, seeds)
    except (UserError, EmulationError, ScenarioError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _compare(a, out: Path, cases: list[str], seeds: list[int]) -> int:
    import pandas as pd

    modes = ("sim",) if a.sim_only else MODES
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in cases:
        for seed in seeds:
            for mode in modes:
                folder = out / case / f"{mode}-s{seed}"
                load = None
                if a.replot or (folder / "summary.json").exists():
                    if not (folder / "summary.json").exists():
                        continue
                    res = _load(folder)
                else:
                    print(f"{case} seed {seed}: {mode} ...", file=sys.stderr, flush=True)
                    res = run_case(case, mode, seed, a.interval, a.duration)
                    res.save(folder)
                    load = os.getloadavg()[0]
                    (folder / "load.txt").write_text(f"{load:.2f}\n")
                    if mode == "linux":
                        fw = res.summary["emulation"]["forwarder"]
                        print(f"  forwarder waited for a CPU {fw.get('runqueue_wait_s', float('nan')):.2f} s; "
                              f"load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
                if load is None and (folder / "load.txt").exists():
                    load = float((folder / "load.txt").read_text())
                row = {"case": case, "mode": mode, "seed": seed, "load1": load, **metrics(res)}
                if mode == "linux":
                    fw = res.summary["emulation"]["forwarder"]
                    row["runqueue_wait_s"] = fw.get("runqueue_wait_s")
                    row["late_p99_ms"] = _ms(fw.get("late_p99_s"))
                rows.append(row)
            pd.DataFrame(rows).to_csv(out / "runs.csv", index=False)
        first = seeds[0]
        series = {}
        for mode in modes:
            folder = out / case / f"{mode}-s{first}"
            if (folder / "summary.json").exists():
                series[mode] = _load(folder).flow_series
        figure(case, series, out / f"{case}.png", a.t_max)
    df = pd.DataFrame(rows)
    (out / "table.md").write_text(table(df))
    print(table(df))
    if not a.sim_only:
        (out / "verdicts.md").write_text(verdicts(df))
        print(verdicts(df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
