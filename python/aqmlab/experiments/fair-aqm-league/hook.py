"""The league's heat map: schemes down, scenarios across, each cell coloured by fairness (Jain's index
over every flow's throughput, mean over seeds) and labelled with its value; beside the scheme's name
the bytes of state it kept (the largest over the scenarios of the small dumbbell, and at core
scale)."""

import numpy as np

from aqmlab.analysis import plotstyle
from aqmlab.reproduce.context import Output

FAIRNESS = "fairness.jain_throughput_all"
STATE = "bottleneck.state_bytes"


def _bytes(v: float) -> str:
    if not np.isfinite(v):
        return "?"
    for unit, k in (("MB", 1e6), ("kB", 1e3)):
        if v >= k:
            return f"{v / k:.3g} {unit}"
    return f"{v:.0f} B"


def heatmap(ctx, spec):
    runs = ctx.runs
    schemes = [s for s in ctx.exp.variant_labels(ctx.quick) if s in set(runs["scheme"])]
    settings = list(dict.fromkeys(runs["setting"]))
    mean = runs.groupby(["scheme", "setting"])[FAIRNESS].mean()
    grid = np.array([[mean.get((s, c), np.nan) for c in settings] for s in schemes])
    state = {}
    if STATE in runs:
        small = runs[~runs["setting"].astype(str).str.startswith("core")]
        core = runs[runs["setting"].astype(str).str.startswith("core")]
        for s in schemes:
            a = small.loc[small["scheme"] == s, STATE].max() if not small.empty else np.nan
            b = core.loc[core["scheme"] == s, STATE].max() if not core.empty else np.nan
            state[s] = (a, b)
    plt = plotstyle.pyplot()
    style = getattr(ctx, "style", "paper")
    with plotstyle.rc_context(style):
        width = plotstyle.figsize(style, 1, 2, 2)[0]
        fig, ax = plt.subplots(figsize=(width, 0.24 * len(schemes) + 1.1), layout="constrained")
        im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
        for i in range(len(schemes)):
            for j in range(len(settings)):
                v = grid[i, j]
                if np.isfinite(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                            color="black" if v > 0.6 else "white")
        ax.set_xticks(range(len(settings)), [str(c) for c in settings], fontsize=7, rotation=30, ha="right")
        labels = schemes
        if state:
            labels = [f"{s}  ({_bytes(state[s][0])} / {_bytes(state[s][1])})" for s in schemes]
        ax.set_yticks(range(len(schemes)), labels, fontsize=7)
        ax.set_xlabel("scenario")
        if style != "paper":
            ax.set_title(spec.get("title", ""))
        cb = fig.colorbar(im, ax=ax, shrink=0.9, aspect=30)
        cb.set_label("Jain's index, all flows", fontsize=7)
        cb.ax.tick_params(labelsize=6)
        plotstyle.polish(fig, [ax], style, legend=False)
        files = plotstyle.save(fig, ctx.out / spec["name"], style)
        plt.close(fig)
    order = np.nanmean(grid, axis=1)
    ranked = sorted(zip(order, schemes), reverse=True)
    notes = ["Mean fairness over the scenarios, best first: "
             + ", ".join(f"{s} {m:.2f}" for m, s in ranked if np.isfinite(m)) + "."]
    if state:
        notes.append("Beside each scheme: the bytes of state it kept at most, on the 1 Mb/s dumbbells / at core "
                     "scale (bottleneck.state_bytes).")
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes,
                  caption=f"{ctx.as_run() if hasattr(ctx, 'as_run') else ''}")
