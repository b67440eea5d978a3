"""Fig. 4 of [TWL]: the spatial distribution rho0(y) of UDP packets in the queue, from
the queue snapshots of the first seed at each UDP rate that has them, beside the fluid model's
profile."""

import numpy as np

from aqmlab.models import ChokeParams, solve_choke
from aqmlab.models.runs import spatial_distribution as m10
from aqmlab.reproduce.context import Output
from aqmlab.reproduce.figures import PALETTE, finish_figure, new_figure

PARAMS = ChokeParams(N=32, c=125.0, d=0.1, min_th=20, max_th=520, max_p=0.5)


def spatial_distribution(ctx, spec):
    runs = ctx.runs
    picks = []
    for x0 in dict.fromkeys(runs["x0"]):
        rows = runs[runs["x0"] == x0]
        i = int(rows["seed"].idxmin())
        res = ctx.res.result(i, tables=("snapshots",))
        if getattr(res, "snapshots", None) is None or res.snapshots.empty:
            continue
        picks.append((x0, res))
    fig, axes = new_figure(max(1, len(picks)), spec)
    notes = []
    for ax, (x0, res) in zip(axes, picks):
        sim = m10(res.snapshots, n_grid=200, count=res.summary["queue_snapshots"]["count"])
        ax.plot(sim["y"], sim["rho_udp"], color=PALETTE[0], lw=1.2, label="simulation (first seed)")
        sol = solve_choke(float(x0) * PARAMS.c, PARAMS)
        text = f"x0 = {x0:g}c: simulated b_avg {sim.attrs['b_avg']:.1f} packets"
        if sol.converged:
            prof = sol.profile(301)
            ax.plot(prof["y"], prof["rho0"], color="k", ls=(0, (4, 2)), lw=1.2, label="model")
            text += (f", model b {sol.b:.1f}; rho0 at the tail {sim['rho_udp'].iloc[0]:.3f} (model "
                     f"{prof['rho0'].iloc[0]:.3f}), at the head {sim['rho_udp'].iloc[-1]:.3f} (model "
                     f"{prof['rho0'].iloc[-1]:.3f})")
        else:
            text += f"; model not solved ({sol.message})"
        notes.append(text + ".")
        ax.set_title(f"x0 = {x0:g}c", fontsize=10)
        ax.set_ylim(0, max(0.05, float(np.nanmax(sim["rho_udp"])) * 1.15))
    files = finish_figure(fig, axes, spec, ctx, "position y in the queue (packets from the tail)",
                          "UDP fraction rho0(y)")
    return Output("figure", spec["name"], spec.get("title", spec["name"]), files, notes=notes)
