"""``aqmlab plot FOLDER ... [--kind K] [--x X] [--y Y] [--by COL] [--out DIR]``: figures of run and
sweep folders (:mod:`aqmlab.plot`)."""

from __future__ import annotations

from ..base.errors import PlotError, UserError
from .common import warn


def add_parser(sub) -> None:
    pl = sub.add_parser("plot", help="figures of runs and sweeps (line, bar, cdf, timeseries, flows, queue, latency, "
                                     "flow_series)",
                        description="Draw a figure from run folders (aqmlab run) and sweep folders (aqmlab sweep), "
                                    "means over seeds with intervals, in the style of the report (docs/plotting.md).")
    pl.add_argument("sources", nargs="+", metavar="FOLDER", help="run or sweep folders (several are combined)")
    pl.add_argument("--kind", "-k", default="line",
                    choices=["line", "bar", "cdf", "timeseries", "flows", "queue", "latency", "flow_series"],
                    help="line (default), bar, cdf (per-flow distribution), timeseries, flows (per-flow bars), "
                         "queue (composition of the queue by position), latency (per-packet delay distribution: "
                         "--y owd or rtt), flow_series (each flow's --y over time: cwnd, the default, "
                         "pacing_rate_bps, srtt_s, throughput_bps, ...; needs simulation.flow_series_interval)")
    pl.add_argument("--x", metavar="COLUMN", help="x axis: a varied key or a metric (line, bar; default: the first "
                                                  "varied key)")
    pl.add_argument("--y", metavar="COLUMN[,COLUMN]", help="what to plot: metrics of runs.csv (line, bar), a "
                                                           "flows column (cdf, flows), a timeseries column")
    pl.add_argument("--by", metavar="COLUMN[,COLUMN]", help="one line, bar or curve per value (default: the other "
                                                            "varied keys)")
    pl.add_argument("--panels", metavar="COLUMN", help="one panel per value (panels share their y axis)")
    pl.add_argument("--where", action="append", metavar="COLUMN=V[,V]", help="keep runs (or flows) with these "
                                                                              "values (repeatable)")
    pl.add_argument("--link", metavar="NAME", help="timeseries: the measured link to draw (default: the bottleneck, "
                                                   "or the only measured link)")
    pl.add_argument("--label", action="append", metavar="OLD=NEW",
                    help="show a series, category, panel or column name OLD as NEW (repeatable; OLD may contain '=', "
                         "e.g. 'red (max_th=80)=RED'; a label that matches nothing is warned about)")
    pl.add_argument("--out", "-o", default="plots", metavar="DIR", help="output folder (default: plots)")
    pl.add_argument("--name", help="file stem inside --out, no path (default: KIND-Y)")
    pl.add_argument("--title", help="the figure's title (its caption; inside the image only with --style draft)")
    pl.add_argument("--xlabel", help="x-axis label")
    pl.add_argument("--ylabel", help="y-axis label")
    pl.add_argument("--logx", action="store_true", help="logarithmic x axis")
    pl.add_argument("--logy", action="store_true", help="logarithmic y axis")
    pl.add_argument("--tail", action="store_true", help="latency: the fraction of packets slower than each delay, "
                                                        "on a log axis (the tail, as Flent shows it)")
    pl.add_argument("--style", default="paper", choices=["paper", "draft"],
                    help="paper (default): no title in the image, PDF + SVG + 300 dpi PNG; draft: titled PNG + SVG")
    pl.add_argument("--width", type=int, choices=[1, 2], help="paper columns (default: 1 for one panel, 2 for more)")
    pl.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    pl.set_defaults(fn=cmd_plot)


def cmd_plot(a) -> int:
    """`aqmlab plot`: figures from run and sweep folders (aqmlab.plot)."""
    from ..plot import plot

    try:
        o = plot(a.sources, kind=a.kind, out=a.out, style=a.style, columns=a.width, x=a.x, y=a.y, by=a.by,
                 panels=a.panels, where=a.where or [], name=a.name, title=a.title, xlabel=a.xlabel,
                 ylabel=a.ylabel, logx=a.logx, logy=a.logy, link=a.link, labels=a.label or [], tail=a.tail,
                 warn=warn)
    except PlotError as e:
        raise UserError(str(e))
    if not a.quiet:
        print(f"{o.title}: {o.caption}")
        for n in o.notes:
            print(f"  {n}")
        print("figure: " + ", ".join(str(p) for p in o.files if p.suffix != ".csv"))
        data = [p for p in o.files if p.suffix == ".csv"]
        if data:
            print(f"data: {data[0]} (every plotted point)")
    return 0
