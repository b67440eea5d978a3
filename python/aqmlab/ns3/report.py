"""The ns-3 comparison's table (Markdown) and figures, from the runs' rows (docs/validation-ns3.md)."""

from __future__ import annotations

import math
from pathlib import Path

from .cases import CASES, FAMILIES, TOLERANCES

#: quantity -> (heading, format of one value)
COLUMNS = [
    ("utilisation", "utilisation", lambda v: f"{100 * v:.1f}"),
    ("delay_mean_ms", "mean delay (ms)", lambda v: f"{v:.1f}" if v < 100 else f"{v:.0f}"),
    ("delay_p99_ms", "p99 delay (ms)", lambda v: f"{v:.1f}" if v < 100 else f"{v:.0f}"),
    ("queue_mean_pkts", "queue (pkts)", lambda v: f"{v:.1f}" if v < 100 else f"{v:.0f}"),
    ("loss_ratio", "drops + marks (%)", lambda v: f"{100 * v:.2f}"),
    ("jain", "Jain", lambda v: f"{v:.3f}"),
    ("retx", "retransmitted", lambda v: f"{v:.0f}"),
    ("timeouts", "timeouts", lambda v: f"{v:.1f}"),
]
NAMES = {"utilisation": "utilisation", "delay_mean": "delay", "loss_ratio": "loss", "flow_share": "share",
         "group_share": "share", "jain": "Jain", "retx": "retx", "timeouts": "timeouts", "bbr_queue": "BBR queue"}


def _fmt(v, f) -> str:
    try:
        if v is None or math.isnan(float(v)):
            return "—"
    except (TypeError, ValueError):
        return "—"
    return f(float(v))


def shares(m: dict) -> str:
    """Per-flow shares in % (four flows), or the groups' (two senders)."""
    if int(m["flows"]) > 2 or all(_missing(m.get(f"{g}.share")) for g in ("bbr", "dctcp")):
        return "/".join(f"{100 * m[f'flow{i}.share']:.0f}" for i in range(int(m["flows"])))
    return " ".join(f"{g} {100 * m[f'{g}.share']:.0f}" for g in ("bbr", "dctcp", "cubic")
                    if not _missing(m.get(f"{g}.share")))


def _missing(v) -> bool:
    try:
        return v is None or math.isnan(float(v))
    except (TypeError, ValueError):
        return True


def table(means: dict, results: dict, seeds: dict) -> str:
    """One table per family: a row per case, each cell aqmlab / ns-3, and the quantities beyond tolerance."""
    out = []
    for fam in FAMILIES:
        cases = [c for c in CASES if CASES[c][2] == fam and c in results]
        if not cases:
            continue
        head = ["case", "seeds"] + [h for _, h, _ in COLUMNS[:5]] + ["shares (%)"] + [h for _, h, _ in COLUMNS[5:]]
        head += ["beyond tolerance"]
        out += [f"**{fam}** — each cell: aqmlab / ns-3, mean of the seeds", "",
                "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for c in cases:
            a, n = means[(c, "aqmlab")], means[(c, "ns3")]
            cells = [f"`{c}`", str(seeds[c])]
            cells += [f"{_fmt(a.get(k), f)} / {_fmt(n.get(k), f)}" for k, _, f in COLUMNS[:5]]
            cells.append(f"{shares(a)} / {shares(n)}")
            cells += [f"{_fmt(a.get(k), f)} / {_fmt(n.get(k), f)}" for k, _, f in COLUMNS[5:]]
            missed = sorted({NAMES[q] for q, _, _, _, ok in results[c] if not ok})
            cells.append("✓" if not missed else "✗ " + ", ".join(missed))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def linux_table(three: dict) -> str:
    """Linux's cases: every quantity of docs/tcp-vs-linux.md's tolerances, the three means, who agrees."""
    if not three:
        return ""
    fmt = {"utilisation": lambda v: f"{100 * v:.1f} %", "queue_mean_pkts": lambda v: f"{v:.1f}"}
    out = ["| case | quantity | aqmlab | ns-3 | Linux | agreement |", "|---|---|---|---|---|---|"]
    for c, rows in three.items():
        for i, (key, a, n, lin, pairs) in enumerate(rows):
            f = fmt.get(key, (lambda v: f"{100 * v:.1f} %") if key.endswith("share") else (lambda v: f"{v:.1f}"))
            out.append(f"| {f'`{c}`' if i == 0 else ''} | {key} | {_fmt(a, f)} | {_fmt(n, f)} | {_fmt(lin, f)} | "
                       f"{verdict(pairs)} |")
    return "\n".join(out) + "\n"


def verdict(pairs: list) -> str:
    """A reading of which of three agree: all, two (named), or none."""
    if len(pairs) == 3:
        return "all agree"
    if not pairs:
        return "none agree"
    names = {"A": "aqmlab", "N": "ns-3", "L": "Linux"}
    return " · ".join(f"{names[p[0]]} = {names[p[1]]}" for p in pairs)


# ----------------------------------------------------------------------------------------- figures

PANELS = [  # (check quantity, title, log scale)
    ("utilisation", "utilisation", False),
    ("delay_mean", "mean queueing delay (ms)", True),
    ("loss_ratio", "drops + CE marks per arrival", True),
    ("share", "throughput share (flow or sender)", False),
    ("retx", "retransmitted segments per flow", True),
    ("timeouts", "retransmission timeouts per flow", False),
]
COLOURS = {"queues": "C0", "bbr": "C3", "dctcp": "C2", "linux": "C1"}


def agreement_figure(results: dict, means: dict, path: Path) -> None:
    """Every case's quantities: aqmlab (x) against ns-3 (y), the diagonal and the tolerance band,
    filled markers where the tolerance is met, open ones where it is not."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(2, 3, figsize=(13, 8.4))
    for ax, (q, title, log) in zip(axes.flat, PANELS):
        xs = []
        for fam in FAMILIES:
            pts = []
            for c, checks in results.items():
                if CASES[c][2] != fam:
                    continue
                per = max(1, int(means[(c, "aqmlab")]["flows"])) if q in ("retx", "timeouts") else 1
                for cq, _, a, n, ok in checks:
                    if (cq == q or (q == "share" and cq in ("flow_share", "group_share"))) and not (
                            _missing(a) or _missing(n)):
                        pts.append((a / per, n / per, ok))
            if not pts:
                continue
            p = np.array([(x, y) for x, y, _ in pts])
            ok = np.array([o for _, _, o in pts])
            xs += list(p.ravel())
            ax.scatter(p[ok, 0], p[ok, 1], s=22, color=COLOURS[fam], label=fam)
            ax.scatter(p[~ok, 0], p[~ok, 1], s=30, facecolors="none", edgecolors=COLOURS[fam])
        if not xs:
            ax.set_visible(False)
            continue
        _band(ax, q, np.array(xs), log)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("aqmlab")
        ax.set_ylabel("ns-3")
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    for ax in axes.flat[1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, [f"{lab} (open: beyond tolerance)" if i == 0 else lab for i, lab in enumerate(labels)],
               loc="lower center", ncol=len(labels), frameon=False)
    fig.suptitle("aqmlab against ns-3, mean of the seeds per case; the band is the tolerance")
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _band(ax, q: str, xs, log: bool) -> None:
    import numpy as np

    pos = xs[xs > 0]
    lo = pos.min() / 2 if log and pos.size else 0.0
    hi = xs.max() * 1.15 if xs.size else 1.0
    if q == "utilisation":
        lo = min(0.8, xs.min() - 0.02)
        hi = 1.01
    if q == "share":
        lo, hi = 0.0, max(1.0, hi)
    x = np.geomspace(max(lo, 1e-6), hi, 200) if log else np.linspace(lo, hi, 200)
    tol = {"utilisation": ("abs", 0.02), "share": ("abs", 0.05), "delay_mean": ("rel", 0.25),
           "loss_ratio": ("factor", 1.5), "retx": ("factor", 2.0), "timeouts": ("factor", 2.0)}[q]
    kind, v = tol
    if kind == "abs":
        a, b = x - v, x + v
    elif kind == "rel":
        a, b = x * (1 - v), x * (1 + v)
    else:
        a, b = x / v, x * v
    ax.fill_between(x, a, b, color="0.85", zorder=0, lw=0)
    ax.plot(x, x, color="0.5", lw=0.8, zorder=1)
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlim(x[0], x[-1])
    ax.set_ylim(x[0], x[-1])


def queues_figure(series: dict, path: Path) -> None:
    """The bottleneck queue over time (packets), aqmlab solid and ns-3 dashed, one panel per case."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(series)
    if not cases:
        return
    cols = 2
    rows = (len(cases) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 2.6 * rows), squeeze=False)
    for ax, c in zip(axes.flat, cases):
        for engine, ts in series[c].items():
            if ts is None:
                continue
            ax.plot(ts["time_s"], ts["queue_pkts"], lw=0.7, ls="-" if engine == "aqmlab" else "--",
                    color="C0" if engine == "aqmlab" else "C3", label="aqmlab" if engine == "aqmlab" else "ns-3")
        ax.set_title(f"{c}: {CASES[c][3]}", fontsize=9)
        ax.set_ylabel("queue (packets)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(cases):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


__all__ = ["table", "linux_table", "verdict", "agreement_figure", "queues_figure", "shares", "COLUMNS", "TOLERANCES"]
