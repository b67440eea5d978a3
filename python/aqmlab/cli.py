"""The `aqmlab` command.

    aqmlab run SCENARIO [--seed N] [--out DIR] [--set key.path=value ...]
    aqmlab sweep SCENARIO --vary key.path=v1,v2,... [--seeds K] [--jobs N] [--out DIR]
                 [--executor local|dask --scheduler tcp://HOST:PORT]
    aqmlab validate SCENARIO [--set ...]
    aqmlab list aqm|tcp|traffic|experiments [--describe]
    aqmlab reproduce ID ... | --all [--quick] [--jobs N] [--out DIR] [--scheduler tcp://HOST:PORT]
    aqmlab bench [--point NAME ...] [--repeat K] [--json] [--htsim PATH]
    aqmlab model choke|chokew|raqm|ward [--param value ...] [--json] [--plot FILE] [--run DIR ...]
    aqmlab plot FOLDER ... [--kind line|bar|cdf|timeseries|flows|queue] [--x X] [--y Y] [--by COL] [--out DIR]
    aqmlab emulate SCENARIO [--seed N] [--out DIR] [--set ...] [--cc [GROUP=]NAME] [-- CMD ...]   (root)

A user's mistake (a bad scenario, a missing file, a bad option) prints one line
``error: <file>: <key path>: <what is wrong and what is allowed>`` on stderr and exits with 2;
never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from . import __version__, _core
from .api import Result, read_source

EXIT_USAGE = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """An error the user can act on: printed as one line, exit code 2."""


def _err(msg: str, code: int = EXIT_USAGE) -> int:
    from .errors import one_line

    print(f"error: {one_line(msg)}", file=sys.stderr)
    return code


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's usage errors: one line, exit 2
        from .errors import one_line

        self.print_usage(sys.stderr)
        print(f"error: {one_line(message)}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _source(path: str):
    try:
        return read_source(Path(path))
    except _core.ScenarioError as e:  # missing, a directory, not text, too large, unreadable
        raise UserError(str(e))


def _out_dir(out: Path) -> Path:
    """``--out``: a directory we can write into, checked before any run."""
    from ._io import probe_writable

    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a directory")
    try:
        probe_writable(out, f"--out {out}")
    except OSError as e:
        raise UserError(str(e.strerror or e))
    return out


def _warn(msg: str) -> None:
    from .errors import one_line

    print(f"warning: {one_line(msg)}", file=sys.stderr)


# ----------------------------------------------------------------------------- formatting


def fmt_rate(bps) -> str:
    if bps is None or (isinstance(bps, float) and math.isnan(bps)):
        return "-"
    for unit, f in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bps) >= f:
            return f"{bps / f:.2f} {unit}"
    return f"{bps:.0f} b/s"


def fmt_time(s) -> str:
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def fmt_num(x, digits=3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _dumbbell_lines(s: dict) -> list[str]:
    b = s["bottleneck"]
    lines = [
        f"bottleneck: {b['aqm']}, {fmt_rate(b['capacity_bps'])}, buffer {b['limit']} {b['queue_unit']}  "
        f"utilisation {b['utilisation'] * 100:.1f}%  mean queue {b['queue_mean_pkts']:.1f} pkts  "
        f"queueing delay mean {fmt_time(b['delay_mean_s'])} p99 {fmt_time(b['delay_p99_s'])}"
    ]
    drops = "  ".join(f"{k} {v}" for k, v in b["drops"].items() if v)
    lines.append(
        f"bottleneck drops: {b['drops_total']} of {b['arrivals']} arrivals ({b['drop_ratio'] * 100:.1f}%)"
        + (f": {drops}" if drops else "")
    )
    if b.get("ce_marks"):
        lines.append(f"ECN: {b['ce_marks']} packets delivered with a CE mark instead of being dropped")
    if b.get("link_loss_drops"):
        lines.append(f"random link loss before the bottleneck queue: {b['link_loss_drops']} packets")
    return lines


def congested(link: dict) -> bool:
    """A measured link that dropped packets in the window or was busy at least 95 % of it."""
    return bool(link["drops_total"] or link.get("link_loss_drops") or (link["utilisation"] or 0) >= 0.95)


def _links_lines(s: dict) -> tuple[list[str], list[str]]:
    """One line per congested measured link; returns the lines and the congested links' names."""
    links = sorted(s["links"].values(), key=lambda l: l["index"])
    busy = [l for l in links if congested(l)]
    t = s.get("topology", {})
    lines = [f"network: {t.get('type', '?')}, {len(t.get('nodes', []))} nodes, {len(t.get('links', []))} links, "
             f"{len(links)} measured, {len(busy)} congested"]
    if busy:
        head = (f"{'link':<12} {'aqm':<9} {'capacity':>10} {'util':>6} {'queue':>7} {'delay':>9} {'p99':>9} "
                f"{'drops':>7} {'of arrivals':>11}  by reason")
        lines += ["", head, "-" * len(head)]
        for l in busy:
            reasons = "  ".join(f"{k} {v}" for k, v in l["drops"].items() if v)
            if l.get("link_loss_drops"):
                reasons += f"  link_loss {l['link_loss_drops']}"
            lines.append(
                f"{l['name'][:12]:<12} {l['aqm'][:9]:<9} {fmt_rate(l['capacity_bps']):>10} "
                f"{(l['utilisation'] or 0) * 100:>5.1f}% {l['queue_mean_pkts']:>7.1f} {fmt_time(l['delay_mean_s']):>9} "
                f"{fmt_time(l['delay_p99_s']):>9} {l['drops_total']:>7} {l['drop_ratio'] * 100:>10.1f}%  {reasons.strip()}"
            )
    return lines, [l["name"] for l in busy]


def summary_table(res: Result) -> str:
    s = res.summary
    sc = s["scenario"]
    lines = [
        f"{sc['name']}  seed {sc['seed']}  {sc['flows']} flows  window {sc['warmup_s']:g}-{sc['duration_s']:g} s"
        + (f"  ({res.wall_seconds:.2f} s wall)" if not math.isnan(res.wall_seconds) else "")
    ]
    if sc.get("overrides"):
        lines.append("overrides: " + "; ".join(sc["overrides"]))
    links = s.get("links", {})
    plain_dumbbell = "bottleneck" in s and set(links) <= {"bottleneck"}
    if plain_dumbbell:
        lines += _dumbbell_lines(s)
        shown = []
    else:
        more, shown = _links_lines(s)
        lines += more
    share_cols = "".join(f" {n[:9]:>9}" for n in shown)
    head = (f"{'group':<12} {'type':<13} {'flows':>5} {'throughput':>12} {'share':>7}{share_cols} {'goodput/flow':>13} "
            f"{'drops':>7} {'timeouts':>8} {'Jain(thr)':>9}")
    if shown:
        lines += ["", "share: of the capacity of the group's measured link; per link: of that link's capacity"]
    lines += ["", head, "-" * len(head)]
    for g in s["groups"]:
        kind = f"{g['variant'] if g['transport'] == 'tcp' else g['transport']}/{g['app']}"
        per_link = ""
        for n in shown:
            x = links[n]["groups"].get(g["name"])
            per_link += f" {x['share'] * 100:>8.1f}%" if x else f" {'-':>9}"
        share = f"{g['share'] * 100:>6.1f}%" if g.get("share") is not None else f"{'-':>7}"
        lines.append(
            f"{g['name'][:12]:<12} {kind:<13} {g['flows']:>5} {fmt_rate(g['throughput_bps']):>12} "
            f"{share}{per_link} {fmt_rate(g['goodput_per_flow_bps']):>13} "
            f"{sum(g['drops'].values()):>7} {g['timeouts']:>8} {fmt_num(g['jain_throughput']):>9}"
        )
    f = s["fairness"]
    lines.append("")
    lines.append(
        f"Jain's index: throughput, all flows {fmt_num(f['jain_throughput_all'])}; "
        f"TCP flows {fmt_num(f['jain_throughput_tcp'])}; TCP goodput {fmt_num(f['jain_goodput_tcp'])}"
    )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- commands


def cmd_run(a) -> int:
    from .rundir import OutDirError, check_out, default_out, remove_stale, resolved_text

    src = _source(a.scenario)
    # validate first so a mistake is reported before any work
    try:
        info = json.loads(_core.validate(src.text, src.name, a.set or []))
        resolved = resolved_text(src.text, src.name, a.scenario, a.set or [], a.seed)
    except _core.ScenarioError as e:
        raise UserError(f"{a.scenario}: {e}")
    # never replace another run's results (docs/scenarios.md, "Where results go")
    out = Path(a.out) if a.out else default_out(info.get("name") or src.name, a.set or [], a.seed, info.get("seed"))
    try:
        check_out(out, resolved, a.force)
    except OutDirError as e:
        raise UserError(f"--out {e}" if a.out else str(e))
    _out_dir(out)
    progress = None if a.quiet else _LazyBar(info["duration_s"])
    try:
        from .api import run

        if info.get("captures"):  # traces are written straight into the run's folder
            out.mkdir(parents=True, exist_ok=True)
        res = run(src, seed=a.seed, overrides=a.set or [], progress=progress,
                  pcap_dir=out if info.get("captures") else False)
    except _core.ScenarioError as e:
        raise UserError(f"{a.scenario}: {e}")
    finally:
        if progress is not None:
            progress.close()
    res._scenario = resolved
    try:
        files = res.save(out)
        remove_stale(out, files)
    except OSError as e:
        from ._io import os_reason

        raise UserError(f"--out {out}: cannot write results: {os_reason(e)}")
    if not a.quiet:
        print(summary_table(res))
        print(f"\nresults: {out}/ ({', '.join(p.name for p in files)})")
    return 0


class _LazyBar:
    """A progress bar (in simulated seconds) that appears only once a run has lasted 2 s of wall time,
    so a short run never imports tqdm."""

    def __init__(self, total: float, delay: float = 2.0):
        import time

        self.total, self.t0, self.delay, self.bar = total, time.monotonic(), delay, None

    def __call__(self, t: float) -> None:
        if self.bar is None:
            import time

            if time.monotonic() - self.t0 < self.delay:
                return
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, unit="sim s", file=sys.stderr, leave=False,
                            bar_format="{l_bar}{bar}| {n:.1f}/{total:.0f} sim s [{elapsed}<{remaining}]")
        self.bar.update(t - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_validate(a) -> int:
    src = _source(a.scenario)
    try:
        info = json.loads(_core.validate(src.text, src.name, a.set or []))
    except _core.ScenarioError as e:
        raise UserError(f"{a.scenario}: {e}")
    groups = ", ".join(f"{g['count']} x {g['transport']}/{g['app']} ({g['name']})" for g in info["groups"])
    if info.get("aqm") is not None:
        net = f"{info['aqm']} bottleneck at {fmt_rate(info['bottleneck_rate_bps'])}"
    else:
        measured = ", ".join(f"{m['name']} ({m['aqm']}, {fmt_rate(m['rate_bps'])})" for m in info["monitored"][:6])
        more = f", ... ({len(info['monitored'])} in all)" if len(info["monitored"]) > 6 else ""
        net = (f"{info['topology']} of {info['nodes']} nodes and {info['links']} links"
               + (f", measured: {measured}{more}" if measured else ", no link measured"))
    print(
        f"ok: {a.scenario}: {info['name']}: {info['flows']} flows [{groups}], {net}, {info['duration_s']:g} s; "
        f"needs about {info['memory_estimate_bytes'] / 1e6:.0f} MB of memory "
        f"(limit {info['memory_limit_bytes'] / 1e6:.0f} MB) and {info['events_estimate']:.2g} events"
    )
    return 0


def cmd_list(a) -> int:
    if a.kind == "experiments":
        from .reproduce import ExperimentError, list_experiments

        try:
            exps = list_experiments(a.experiments)
        except ExperimentError as e:
            raise UserError(str(e))
        if not exps:
            from .reproduce import experiments_dir

            raise UserError(f"{experiments_dir(a.experiments)}: no experiments found (give --experiments DIR)")
        w = max(len(e.id) for e in exps)
        for e in exps:
            print(f"{e.id:<{w}}  {e.description}" + (f"  [{e.paper}: {e.source}]" if a.describe else ""))
        return 0
    for name, desc in _core.names(a.kind):
        print(f"{name:<12} {desc}" if a.describe else name)
    if a.kind == "tcp":  # then the presets (`tcp.preset`): with -d their values and sources
        for name, desc in _core.tcp_presets(a.describe):
            print(f"{name:<12} {desc}" if a.describe else name)
    return 0


def cmd_bench(a) -> int:
    from . import bench
    from .bench import overhead

    known = list(bench.POINTS) + list(bench.GROUPS) + list(OVERHEAD_POINTS) + list(NAMED_POINTS)
    for p in a.point or []:
        if p not in known:
            raise UserError(f"--point {p}: unknown; one of: {', '.join(known)}")
    if a.sweep_runs < 1:
        raise UserError("--sweep-runs: must be a positive integer")
    if a.repeat is not None and a.repeat < 1:
        raise UserError("--repeat: must be a positive integer")
    if a.htsim:
        return _bench_htsim(a, bench)
    points = bench.expand(a.point or (bench.DEFAULT + list(OVERHEAD_POINTS)))
    repeat = a.repeat or 1
    rows, extra, choke_rows = [], [], []
    try:
        from tqdm import tqdm

        it = tqdm(points, desc="bench", unit="point", file=sys.stderr, leave=False)
    except ImportError:  # pragma: no cover
        it = points
    for p in it:
        if p == "startup":
            extra.append(overhead.measure_startup(repeat=max(repeat, 3)))
        elif p == "sweep":
            extra.append(overhead.measure_sweep(a.sweep_runs, repeat=repeat))
        elif p == "choke":
            from .bench import choke

            choke_rows = choke.measure(repeat=max(repeat, 3))
        else:
            rows += bench.run_points([p], repeat=repeat)
    if a.json:
        print(json.dumps(rows + extra + choke_rows, indent=2))
        return 0
    if rows:
        print(bench.format_table(rows))
        print("\none thread, fresh process per point; 'set-up' builds the network and flows; 'engine' is the")
        print("event loop (wall clock); 'CPU us/pkt' its CPU time per data packet delivered to a receiver;")
        print("packets/s and events/s per second of engine time; 'engine MiB' the growth of peak resident")
        print("memory over the process's size before the scenario was built (the engine alone, not Python).")
    if extra:
        if rows:
            print()
        print(overhead.format_rows(extra))
        print("\nwhole fresh processes, best of several by wall time; CPU = user + system seconds; 'before' = the")
        print(f"same figure before issue 12 on the 2-core build machine. The sweep uses {os.cpu_count()} local processes.")
    if choke_rows:
        from .bench import choke

        if rows or extra:
            print()
        print(choke.format_rows(choke_rows))
        print(f"\neach scheme at the TCP flow count that gives RED's mean queue (within {choke.TOLERANCE:.0%}: 'vs RED'); engine")
        print(f"CPU time per packet arriving at the bottleneck, median of {choke_rows[0]['runs']} interleaved runs; 'x RED' its ratio to RED's.")
    return 0


def _bench_htsim(a, bench) -> int:
    """`aqmlab bench --htsim PATH`: interleaved pairs against the htsim driver."""
    from .bench import htsim

    if not os.access(a.htsim, os.X_OK):
        raise UserError(f"--htsim {a.htsim}: not an executable file (the htsim driver, see aqmlab.bench.htsim)")
    points = bench.expand(a.point or ["htsim"])
    for p in points:
        if bench.POINTS.get(p, (None,) * 4)[3] is None:
            raise UserError(f"--point {p}: has no htsim counterpart; with --htsim: a, b, c, scale-*, htsim, scale")
    repeat = a.repeat or 5
    rows = []
    for p in points:
        try:
            rows.append(htsim.compare(a.htsim, p, repeat))
        except RuntimeError as e:
            raise UserError(str(e).splitlines()[0]) from None
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(htsim.format_rows(rows))
    print(f"\nmedian over {repeat} interleaved pairs (aqmlab, htsim, aqmlab, ...): 'speed-up' = aqmlab's delivered data")
    print("packets per second of engine time over htsim's; '(CPU)' the same from CPU time per packet.")
    return 0


OVERHEAD_POINTS = ("startup", "sweep")
#: points run only when named
NAMED_POINTS = ("choke",)


def _cache_arg(a):
    if a.no_cache:
        return False
    return a.cache if a.cache else True


def _jobs_arg(a):
    if a.jobs is not None and a.jobs < 1:
        raise UserError("--jobs: must be a positive integer")
    return a.jobs


def _executor_args(a) -> dict:
    """--executor/--scheduler as keyword arguments of execute(); a Dask scheduler is reached here,
    before any run."""
    from .executors import make_pool

    executor = a.executor or ("dask" if a.scheduler else "local")
    if executor == "local":
        if a.scheduler:
            raise UserError("--scheduler: only with --executor dask")
        return {}
    from .sweep import SweepError

    try:
        return {"executor": make_pool("dask", scheduler=a.scheduler)}
    except SweepError as e:
        raise UserError(str(e))


SWEEP_SHOW = [("bottleneck.utilisation", "util", "{:.3f}"), ("bottleneck.queue_mean_pkts", "queue", "{:.1f}"),
              ("bottleneck.delay_mean_s", "delay s", "{:.3f}"), ("tcp.goodput_bps", "TCP goodput", None),
              ("udp.share", "UDP share", "{:.3f}"), ("fairness.jain_throughput_all", "Jain", "{:.3f}")]


def _rate_unit(v: float) -> tuple[str, float]:
    """The unit fmt_rate would give ``v``: ("Mb/s", 1e6)."""
    return next(((u, f) for u, f in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)) if abs(v) >= f), ("b/s", 1.0))


def sweep_table(runs, coords) -> str:
    """Mean over seeds of a few metrics per point, with the interval over seeds, as printed by
    `aqmlab sweep`: ``mean ± h`` (95 % Student-t interval, three seeds or more, clipped to the
    metric's range) or ``mean (min–max)`` with two seeds."""
    from .reproduce.stats import interval_for

    cols = [(c, h, f) for c, h, f in SWEEP_SHOW if c in runs.columns and runs[c].notna().any()]
    keys = runs[coords].astype(str).agg("\x1f".join, axis=1) if coords else None
    groups = [(tuple(g[c].iloc[0] for c in coords), g) for _, g in runs.groupby(keys, sort=False)] if coords \
        else [((), runs)]
    heads = list(coords) + ["seeds"] + [h for _, h, _ in cols]
    rows, methods = [], set()
    for idx, g in groups:
        cells = [str(v) for v in idx] + [str(len(g))]
        for c, _, f in cols:
            iv = interval_for(c, g[c])
            methods.add(iv.method)
            if iv.mean != iv.mean:
                cells.append("-")
                continue
            fmt = (lambda v: f.format(v)) if f is not None else None
            if fmt is None:  # a rate: the spread in the mean's unit
                unit, k = _rate_unit(iv.mean)
                m, half = f"{iv.mean / k:.2f} {unit}", f"{max(iv.mean - iv.lo, iv.hi - iv.mean) / k:.2f}"
                lo, hi = f"{iv.lo / k:.2f}", f"{iv.hi / k:.2f}"
            else:
                m, half, lo, hi = fmt(iv.mean), fmt(max(iv.mean - iv.lo, iv.hi - iv.mean)), fmt(iv.lo), fmt(iv.hi)
            cells.append(f"{m} ± {half}" if iv.method == "t95" else f"{m} ({lo}–{hi})" if iv.method == "range" else m)
        rows.append(cells)
    width = [max(len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(heads)]
    line = lambda cells: "  ".join(c.rjust(w) if j >= len(coords) else c.ljust(w) for j, (c, w) in enumerate(zip(cells, width)))
    out = [line(heads), "-" * len(line(heads))] + [line(r) for r in rows]
    if "t95" in methods:
        out.append("± : half-width of the 95 % Student-t confidence interval over seeds (clipped to the metric's range)")
    if "range" in methods:
        out.append("(a–b): the lowest and highest of two seeds (three or more give a confidence interval)")
    return "\n".join(out)


def cmd_sweep(a) -> int:
    from .sweep import RunFailed, Sweep, SweepError, TABLES

    src = _source(a.scenario)
    out = Path(a.out) if a.out else Path("results") / f"{src.name}-sweep"
    tables = [t.strip() for t in a.tables.split(",") if t.strip()] if a.tables else []
    names = {v: k for k, v in TABLES.items()} | {k: k for k in TABLES}
    for t in tables:
        if t not in names:
            raise UserError(f"--tables {t}: unknown table; one of: {', '.join(TABLES.values())}")
    jobs = _jobs_arg(a)
    try:
        sw = Sweep(src, a.vary or [], a.seeds, seed=a.seed, overrides=a.set or [])
        tasks = sw.tasks()
    except SweepError as e:
        msg = str(e)
        raise UserError(msg if msg.startswith(src.label) else f"{a.scenario}: {msg}")
    from .sweep import SweepResult, execute, open_cache

    _out_dir(out)
    cache, tmp = open_cache(_cache_arg(a))
    ex = _executor_args(a)
    rows: dict = {}
    try:
        stats = execute(tasks, cache, jobs=jobs, progress=not a.quiet, rows=rows, warn=_warn, **ex)
    except RunFailed as e:
        return _err(str(e), EXIT_FAILED)
    except SweepError as e:
        raise UserError(str(e))
    res = SweepResult(sw, tasks, cache, stats, tmp, rows=rows)
    try:
        files = res.save(out, tables=[names[t] for t in tables])
    except OSError as e:
        from ._io import os_reason

        raise UserError(f"--out {out}: cannot write results: {os_reason(e)}")
    if not a.quiet:
        print(sweep_table(res.runs, res.coords))
        print(f"\n{stats['total']} runs ({stats['cached']} from the cache, {stats['computed']} run now)")
        print(f"results: {out}/ ({', '.join(p.name for p in files)})")
    return 0


def cmd_reproduce(a) -> int:
    from .reproduce import ExperimentError, reproduce, select
    from .sweep import RunFailed

    from .sweep import SweepError

    out = Path(a.out)
    if a.all and a.ids:
        raise UserError("give experiment ids or --all, not both")
    jobs = _jobs_arg(a)
    try:
        exps = select(a.ids, a.all, a.experiments)
    except ExperimentError as e:
        raise UserError(str(e))
    _out_dir(out)
    ex = _executor_args(a)
    log = (lambda s: None) if a.quiet else (lambda s: print(s, file=sys.stderr))
    try:
        done = reproduce(exps, out, quick=a.quick, jobs=jobs, cache=_cache_arg(a), extra_set=a.set or [],
                         keep_going=a.keep_going, progress=not a.quiet, log=log, warn=_warn, **ex)
    except (ExperimentError, SweepError) as e:
        raise UserError(str(e))
    except RunFailed as e:
        return _err(str(e), EXIT_FAILED)
    bad = [d for d in done if d.errors or d.skipped]
    if not a.quiet:
        print(f"report: {out / 'report.md'} and {out / 'report.html'}")
    for d in bad:
        for msg in ([d.skipped] if d.skipped else d.errors):
            _err(f"{d.exp.id}: {msg}", EXIT_FAILED)
    return EXIT_FAILED if bad else 0


def cmd_plot(a) -> int:
    """`aqmlab plot`: figures from run and sweep folders (aqmlab.plot)."""
    from .plot import PlotError, plot

    try:
        o = plot(a.sources, kind=a.kind, out=a.out, style=a.style, columns=a.width, x=a.x, y=a.y, by=a.by,
                 panels=a.panels, where=a.where or [], name=a.name, title=a.title, xlabel=a.xlabel,
                 ylabel=a.ylabel, logx=a.logx, logy=a.logy)
    except PlotError as e:
        raise UserError(str(e))
    if not a.quiet:
        print(f"{o.title}: {o.caption}")
        for n in o.notes:
            print(f"  {n}")
        print("figure: " + ", ".join(str(p) for p in o.files))
    return 0


def cmd_model(a) -> int:
    """`aqmlab model ...`: delegated to aqmlab.models.cli; model errors become one-line UserErrors."""
    from .models import ModelError
    from .models.cli import run as run_model

    try:
        return run_model(a)
    except ModelError as e:
        raise UserError(str(e))


def _add_executor_args(p) -> None:
    p.add_argument("--executor", choices=["local", "dask"],
                   help="where runs are made: local processes (default) or a Dask cluster (needs --scheduler)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="the Dask scheduler's address (implies --executor dask; see docs/reproduce.md)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="aqmlab", description="Packet-level simulation of active queue management.")
    p.add_argument("--version", action="version", version=f"aqmlab {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="run a scenario and write its results")
    r.add_argument("scenario", help="scenario file (TOML)")
    r.add_argument("--seed", type=int, help="random seed, 0 to 2^64-1 (replaces simulation.seed)")
    r.add_argument("--out", help="output directory (default: results/<scenario name>, with -seed<N> and "
                                 "-set-<digest> for another seed and overrides)")
    r.add_argument("--force", action="store_true",
                   help="write into --out even if it holds another run's results (they are replaced)")
    r.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override a scenario value (repeatable)")
    r.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    r.set_defaults(fn=cmd_run)

    v = sub.add_parser("validate", help="check a scenario without running it")
    v.add_argument("scenario")
    v.add_argument("--set", action="append", metavar="KEY.PATH=VALUE")
    v.set_defaults(fn=cmd_validate)

    ls = sub.add_parser("list", help="list available AQMs, TCP variants or traffic models")
    ls.add_argument("kind", choices=["aqm", "tcp", "traffic", "experiments"])
    ls.add_argument("-d", "--describe", action="store_true", help="add a one-line description")
    ls.add_argument("--experiments", metavar="DIR", help="experiment definitions (default: ./experiments)")
    ls.set_defaults(fn=cmd_list)

    b = sub.add_parser("bench", help="run the benchmark points")
    b.add_argument("--point", action="append",
                   help="paper, medium, large (RED dumbbells); a, b, c (the htsim comparison points; 'htsim' for "
                        "all three); scale-1k, scale-10k, scale-100k, scale-1m ('scale' for the curve); startup "
                        "(import and a whole `aqmlab run` of paper); sweep (runs/s of a sweep of tiny runs); "
                        "choke (the CHOKe family's engine CPU per bottleneck arrival against RED's at equal mean "
                        "queue); repeatable; default all but scale-1m and choke")
    b.add_argument("--sweep-runs", type=int, default=1000, metavar="N", help="runs of the sweep figure (default 1000)")
    b.add_argument("--repeat", type=int, default=None,
                   help="runs per point, the fastest reported (default 1); with --htsim, pairs (default 5)")
    b.add_argument("--htsim", metavar="PATH",
                   help="compare with htsim: PATH is the driver built from the shared peers/htsim folder; runs "
                        "interleaved pairs (--repeat, default 5) at a, b, c or the --point given")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(fn=cmd_bench)

    sw = sub.add_parser("sweep", help="run a scenario over varied values and seeds (parallel, cached)")
    sw.add_argument("scenario", help="scenario file (TOML)")
    sw.add_argument("--vary", action="append", metavar="KEY.PATH=V1,V2,...",
                    help="values of one key (repeatable; several give their cartesian product)")
    sw.add_argument("--seeds", type=int, default=1, help="runs per point, seeds S, S+1, ... (default 1)")
    sw.add_argument("--seed", type=int, help="first seed S (default: the scenario's simulation.seed)")
    sw.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override for every run (repeatable)")
    sw.add_argument("--jobs", "-j", type=int, help="parallel processes (default: all cores)")
    sw.add_argument("--cache", metavar="DIR", help="result cache (default: $AQMLAB_CACHE or ~/.cache/aqmlab)")
    sw.add_argument("--no-cache", action="store_true", help="neither reuse nor keep results between sweeps")
    _add_executor_args(sw)
    sw.add_argument("--out", help="output directory (default: results/<scenario file stem>-sweep)")
    sw.add_argument("--tables", default="flows", metavar="T1,T2",
                    help="result tables to gather besides runs: flows, timeseries, queue_snapshots, flow_series "
                         "(default flows; '' for none)")
    sw.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    sw.set_defaults(fn=cmd_sweep)

    rp = sub.add_parser("reproduce", help="run the papers' experiments; figures, tables and a report")
    rp.add_argument("ids", nargs="*", metavar="ID", help="experiment ids (see `aqmlab list experiments`)")
    rp.add_argument("--all", action="store_true", help="every experiment")
    rp.add_argument("--quick", action="store_true", help="each experiment's quick settings (fewer seeds, shorter runs)")
    rp.add_argument("--out", default="reproduction", help="output directory (default: reproduction)")
    rp.add_argument("--jobs", "-j", type=int, help="parallel processes (default: all cores)")
    rp.add_argument("--cache", metavar="DIR", help="result cache (default: $AQMLAB_CACHE or ~/.cache/aqmlab)")
    rp.add_argument("--no-cache", action="store_true", help="neither reuse nor keep results")
    _add_executor_args(rp)
    rp.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override for every run (repeatable)")
    rp.add_argument("--experiments", metavar="DIR", help="experiment definitions (default: ./experiments)")
    rp.add_argument("--keep-going", action="store_true",
                    help="skip experiments whose scenarios do not validate (listed in the report) instead of stopping")
    rp.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    rp.set_defaults(fn=cmd_reproduce)

    pl = sub.add_parser("plot", help="figures of runs and sweeps (line, bar, cdf, timeseries, flows, queue)",
                        description="Draw a figure from run folders (aqmlab run) and sweep folders (aqmlab sweep), "
                                    "means over seeds with intervals, in the style of the report (docs/plotting.md).")
    pl.add_argument("sources", nargs="+", metavar="FOLDER", help="run or sweep folders (several are combined)")
    pl.add_argument("--kind", "-k", default="line", choices=["line", "bar", "cdf", "timeseries", "flows", "queue"],
                    help="line (default), bar, cdf (per-flow distribution), timeseries, flows (per-flow bars), "
                         "queue (composition of the queue by position)")
    pl.add_argument("--x", metavar="COLUMN", help="x axis: a varied key or a metric (line, bar; default: the first "
                                                  "varied key)")
    pl.add_argument("--y", metavar="COLUMN[,COLUMN]", help="what to plot: metrics of runs.csv (line, bar), a "
                                                           "flows column (cdf, flows), a timeseries column")
    pl.add_argument("--by", metavar="COLUMN[,COLUMN]", help="one line, bar or curve per value (default: the other "
                                                            "varied keys)")
    pl.add_argument("--panels", metavar="COLUMN", help="one panel per value (panels share their y axis)")
    pl.add_argument("--where", action="append", metavar="COLUMN=V[,V]", help="keep runs (or flows) with these "
                                                                              "values (repeatable)")
    pl.add_argument("--out", "-o", default="plots", metavar="DIR", help="output folder (default: plots)")
    pl.add_argument("--name", help="file stem (default: KIND-Y)")
    pl.add_argument("--title", help="the figure's title (its caption; inside the image only with --style draft)")
    pl.add_argument("--xlabel", help="x-axis label")
    pl.add_argument("--ylabel", help="y-axis label")
    pl.add_argument("--logx", action="store_true", help="logarithmic x axis")
    pl.add_argument("--logy", action="store_true", help="logarithmic y axis")
    pl.add_argument("--style", default="paper", choices=["paper", "draft"],
                    help="paper (default): no title in the image, PDF + SVG + 300 dpi PNG; draft: titled PNG + SVG")
    pl.add_argument("--width", type=int, choices=[1, 2], help="paper columns (default: 1 for one panel, 2 for more)")
    pl.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    pl.set_defaults(fn=cmd_plot)

    from .models.cli import add_subcommands as add_model_subcommands

    m = sub.add_parser("model", help="analytical models (CHOKe, CHOKeW, RAQM, WARD), optionally beside runs")
    add_model_subcommands(m)
    m.set_defaults(fn=cmd_model)
    _add_max_memory(r, v, sw, rp)

    from .emulate.cli import add_subcommand as add_emulate_subcommand

    add_emulate_subcommand(sub)
    return p


def _memory_arg(s: str) -> str:
    """``--max-memory``: a size such as ``8GB`` (checked here, passed on as text)."""
    try:
        _core.parse_size(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    return s


def _add_max_memory(*parsers) -> None:
    for sp in parsers:
        sp.add_argument("--max-memory", type=_memory_arg, metavar="SIZE",
                        help="refuse a run whose memory estimate exceeds SIZE, e.g. 8GB "
                             "(default: $AQMLAB_MAX_MEMORY, else half the physical memory)")


def split_emulate_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """``aqmlab emulate ... -- CMD ...``: the arguments before the first ``--``, and CMD (None without
    one). CMD is the user's, whatever it looks like (``-x``, ``--help``): argparse would read a CMD
    that starts with ``-`` as options of ours."""
    if "emulate" in argv and "--" in argv and argv.index("emulate") < argv.index("--"):
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def main(argv=None) -> int:
    argv, after = split_emulate_command(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    if after is not None:
        args.command = after
    if getattr(args, "max_memory", None):
        # read by the engine in this process and in every worker it starts (sent with each batch to a cluster)
        os.environ["AQMLAB_MAX_MEMORY"] = args.max_memory
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed <= (1 << 64) - 1:
        return _err(f"--seed: must be an integer from 0 to 2^64-1 (18446744073709551615), got {seed}")
    try:
        return args.fn(args)
    except UserError as e:
        return _err(str(e))
    except _core.ScenarioError as e:  # from the API layer, already '<file>: <key path>: <why>'
        return _err(str(e))
    except _core.SimulationError as e:
        return _err(f"{getattr(args, 'scenario', '')}: simulation failed: {e}", EXIT_FAILED)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `aqmlab list aqm | head -1`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
