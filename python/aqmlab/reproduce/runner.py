"""``aqmlab reproduce``: run experiments (one shared pool and cache), draw, tabulate, report."""

from __future__ import annotations

import json
import shutil
import sys
import time
from ..base.compat import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .. import _core
from ..base.version import __version__
from ..sweep.executors import pending_tasks
from ..sweep import SweepError, SweepResult, execute, open_cache
from . import hooks
from . import report as rep
from .compare import reference_output
from .crosscheck import NS2, refusal_line
from ..analysis.context import Context
from .experiment import Experiment, ExperimentError, find_experiments, experiments_dir, load_experiment
from ..analysis.figures import make_figure
from ..analysis.tables import make_table


@dataclass
class Done:
    exp: Experiment
    outputs: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0
    setup: list = field(default_factory=list)
    skipped: str = ""
    score: dict | None = None  # published values and claims, evaluated (compare.score)
    cached: int = 0  # of its runs, how many were in the cache before this invocation (made earlier)
    engines: dict = field(default_factory=dict)  # "ns2" -> EngineSummary: its runs beside aqmlab's (--ns2)


@dataclass
class EngineSummary:
    """An experiment's runs in another engine: how many, how many from the cache, the points it ran
    and those it refused (their labels and the translator's reasons), and a note on substitutions."""

    runs: int = 0
    cached: int = 0
    ran: list = field(default_factory=list)
    refused: dict = field(default_factory=dict)
    substituted: list = field(default_factory=list)
    note: str = ""
    refused_at: dict = field(default_factory=dict)  # point index -> the translator's refusal


def select(ids, all_: bool, root=None) -> list[Experiment]:
    """The experiments named by ``ids`` (or all of them)."""
    dirs = find_experiments(root)
    known = {p.name: p for p in dirs}
    if all_:
        return [load_experiment(p) for p in dirs]
    if not ids:
        raise ExperimentError("give experiment ids or --all (see `aqmlab list experiments`)")
    out = []
    for i in ids:
        if i not in known:
            near = [k for k in known if i in k or k in i][:3]
            raise ExperimentError(f"{i}: unknown experiment" + (f" (did you mean {', '.join(near)}?)" if near else "")
                                  + f"; see `aqmlab list experiments` ({experiments_dir(root)})")
        out.append(load_experiment(known[i]))
    return out


# ----------------------------------------------------------------------------- cost estimate

def _rate(v) -> float:
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return _core.parse_rate(str(v))
    except ValueError:
        return 0.0


#: what the estimate assumes (measured on the project's 2-core build machine with the quick settings of
#: every experiment: 505 runs took about 15 s of CPU, their 66 figures and 42 tables about 96 s)
RUN_OVERHEAD_S = 0.02  # a run in a pool worker: scenario, result tables, cache entry
PACKETS_PER_S = 3.0e6
FIGURE_S, TABLE_S, EXPERIMENT_S, GATHER_PER_RUN_S = 1.1, 0.3, 0.4, 0.01


def estimate_seconds(task, info: dict) -> float:
    """A rough CPU time of one run: per-run overhead + packets at :data:`PACKETS_PER_S`, with packets =
    duration × (2 × capacity + UDP offered rate) / (8 × 1000 bytes). Overrides of UDP rates are not seen."""
    try:
        sc = tomllib.loads(task.text)
    except tomllib.TOMLDecodeError:
        sc = {}
    udp = 0.0
    for g in sc.get("flows", []):
        if g.get("transport") == "udp":
            udp += _rate(g.get("rate", 0)) * int(g.get("count", 1)) * (0.5 if g.get("app") == "onoff" else 1.0)
    # a dumbbell's bottleneck, or every measured link of another network
    caps = [m["rate_bps"] for m in info.get("monitored", [])] or [1e6]
    cap = float(info.get("bottleneck_rate_bps") or sum(caps))
    dur = float(info.get("duration_s", 200))
    pkts = dur * (2 * cap + min(udp, 100 * cap)) / 8000.0
    return RUN_OVERHEAD_S + pkts / PACKETS_PER_S


def effective_cores(workers: int) -> float:
    """The cores ``workers`` processes can expect on this machine: all of theirs on an idle machine,
    a fair share of the CPUs when other processes keep it busy (the 1-minute load average)."""
    import os

    ncpu = os.cpu_count() or 1
    try:
        others = max(0.0, os.getloadavg()[0] - 1.0)
    except (OSError, AttributeError):
        others = 0.0
    return max(0.25, min(float(workers), ncpu * workers / (workers + others)))


def fmt_duration(seconds: float) -> str:
    """``about 40 s``, ``about 2.5 min``, ``about 14 min``."""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s"
    m = seconds / 60
    return f"about {m:.1f} min" if m < 10 else f"about {round(m)} min"


# ----------------------------------------------------------------------------- set-up text


def _fmt_rate(bps: float) -> str:
    for unit, f in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= f:
            return f"{bps / f:g} {unit}"
    return f"{bps:g} b/s"


def as_toml(v) -> str:
    """A scenario value as a scenario file writes it (``true``, ``{uniform = ["0s", "1s"]}``), a
    string as itself (``10Mb/s``): never a Python repr in the report."""
    from ..run.source import toml_value

    if isinstance(v, str):
        return v
    try:
        return toml_value(v).replace("{ ", "{").replace(" }", "}")
    except Exception:  # (a value TOML cannot hold never comes from a TOML file)
        return str(v)


def setup_lines(exp: Experiment, sweep, tasks, quick: bool, extra_set) -> list[str]:
    """A generated description of what was run (from the files, not typed in)."""
    pts = sweep.points()
    p0 = pts[0]
    try:
        info = json.loads(_core.validate(p0.source.text, p0.source.name, p0.overrides))
    except _core.ScenarioError:
        info = {}
    sc = tomllib.loads(exp.path.joinpath(exp.scenario).read_text(encoding="utf-8"))
    lines = []
    ns2 = exp.raw.get("ns2")
    if ns2:
        lines.append(f"**ns-2 as the authors had it:** release {ns2['release']}; TCP preset `{ns2['tcp_preset']}`; "
                     f"RED {ns2['red']}. {ns2['why']}")
    topo = sc.get("topology")
    if isinstance(topo, dict) and topo.get("type", "dumbbell") != "dumbbell":
        # another network: its shape and its (common) link settings
        b = topo.get("link", {})
        shape = {"parking_lot": f"parking lot of {topo.get('hops', '?')} bottlenecks",
                 "star": f"star of {topo.get('leaves', '?')} leaves"}.get(topo.get("type"), "network")
        what = f"{shape}, each link {b.get('rate', '?')}" if b else f"{shape} of {len(topo.get('links', []))} links"
    else:
        b = sc.get("bottleneck", {})
        what = f"bottleneck {b.get('rate', '?')}"
    aqm = b.get("aqm", {})
    lines.append(f"Base scenario [`{exp.scenario}`]({exp.id}/{exp.scenario}): {what}, "
                 f"delay {b.get('delay', '?')}, buffer {b.get('limit', '?')} packets"
                 + (f", AQM `{aqm.get('type')}`" if isinstance(aqm, dict) and aqm.get("type") else "")
                 + f"; access links {sc.get('access', {}).get('rate', '10Mb/s')}, "
                 f"{sc.get('access', {}).get('delay', '1ms')}.")
    groups = []
    for g in sc.get("flows", []):
        d = f"{g.get('count', 1)} × {g.get('transport')}/{g.get('app', 'bulk' if g.get('transport') == 'tcp' else 'cbr')}"
        extras = [f"{k} {as_toml(g[k])}" for k in ("from", "to", "rate", "priority", "in_profile", "sender_delay",
                                                  "start", "stop", "on_time", "off_time", "arrival_rate",
                                                  "think_time") if k in g]
        if g.get("per_hop"):
            extras.insert(0, "one group per hop")
        tcp = g.get("tcp", {})
        if "variant" in tcp:
            extras.append(f"TCP {tcp['variant']}")
        groups.append(f"`{g.get('name', '?')}` {d}" + (f" ({', '.join(map(str, extras))})" if extras else ""))
    if groups:
        lines.append("Flow groups: " + "; ".join(groups) + ".")
    tcp = sc.get("tcp", {})
    if tcp:
        lines.append("TCP: " + ", ".join(f"{k} = {as_toml(v)}" for k, v in tcp.items()) + ".")
    sim = sc.get("simulation", {})
    lines.append(f"Run length {info.get('duration_s', sim.get('duration', '200s'))} s"
                 + (f", warm-up {info.get('warmup_s')} s" if info.get("warmup_s") else "") + " (as run).")
    if exp.variants:
        chosen = exp.variant_labels(quick)
        vs = [f"**{c.value}** (`{'`, `'.join(c.set)}`)" if c.set else f"**{c.value}**" for c in exp.variants
              if c.value in chosen]
        lines.append(f"{exp.variants_name.capitalize()}s compared: " + "; ".join(vs) + ".")
    for d in sweep.dims:
        a = exp.axis(d.name)
        if a is None:
            continue
        vals = [str(c.value) for c in d.choices]
        lines.append(f"Varied: {a.label}{f' ({a.unit})' if a.unit else ''} ∈ {{{', '.join(vals)}}}"
                     + (f" (`{'`, `'.join(a.dim.choices[0].set)}`)" if a.dim.choices[0].set else "") + ".")
    if exp.set:
        lines.append("Every run: `" + "`, `".join(exp.set) + "`.")
    seeds = sorted({t.seed for t in tasks})
    from ..analysis.stats import MIN_T_SEEDS, interval_note

    method = "t95" if sweep.seeds >= MIN_T_SEEDS else ("range" if sweep.seeds == 2 else "none")
    lines.append(f"{sweep.seeds} seed(s) per point ({', '.join(map(str, seeds[:8]))}{'…' if len(seeds) > 8 else ''}); "
                 f"{len(tasks)} runs; means over seeds, intervals: {interval_note([method])}.")
    post = sweep.post
    if quick:
        lines.append("**Quick mode**" + (": `" + "`, `".join(post) + "`" if post else "") +
                     (f" — {exp.quick['note']}" if exp.quick.get("note") else "") + ".")
    elif extra_set:
        lines.append("Extra overrides: `" + "`, `".join(extra_set) + "`.")
    return lines


# ----------------------------------------------------------------------------- the command


def reproduce(exps: list[Experiment], out: Path, *, quick: bool = False, jobs=None, cache=True, extra_set=(),
              keep_going: bool = False, progress: bool = True, log=None, executor=None, scheduler=None,
              client=None, warn=None, ns2: bool = False) -> list[Done]:
    """Run, draw and report ``exps``; returns what was done per experiment (errors included).

    ``ns2``: also run every point ns-2.35 can express in ns-2.35 (:func:`aqmlab.sweep.engines.ns2_tasks`;
    cached like any run) and put its results beside the paper's and aqmlab's in the report
    (:func:`aqmlab.reproduce.compare.score`). Without the ``ns`` program it raises
    :class:`~aqmlab.base.errors.Ns2Missing`.

    Runs are made by ``executor`` (see :func:`aqmlab.executors.execute`: the local pool by default,
    or a Dask cluster). Figures and tables are drawn where the cache is, in a pool of local worker
    processes (``jobs``), each experiment as soon as its runs are stored.
    """
    log = log or (lambda s: None)
    t0 = time.time()
    if ns2:
        from ..ns2.engine import build_id

        build_id()  # ns-2.35 is there (else one line saying how to install it)
    plans = []
    done: list[Done] = []
    for e in exps:
        d = Done(e)
        done.append(d)
        try:
            sw = e.sweep(quick, extra_set)
            tasks = sw.tasks()
        except (SweepError, ExperimentError) as err:
            msg = str(err)
            if not keep_going:
                raise ExperimentError(msg if msg.startswith(str(e.path)) else f"{e.path}: {msg}")
            d.skipped = msg
            continue
        if ns2:
            from ..sweep.engines import ns2_tasks

            eng = ns2_tasks(sw, tasks)
            pts = sw.points()
            d.engines["ns2"] = EngineSummary(
                runs=len(eng.tasks), ran=[pts[i].describe() for i in sorted({t.point for t in eng.tasks})],
                refused={pts[i].describe(): why for i, why in eng.refused.items()},
                substituted=[pts[i].describe() for i in eng.substituted], note=eng.note, refused_at=eng.refused)
            tasks = tasks + eng.tasks
        plans.append((d, sw, tasks))
    all_tasks = [t for _, _, ts in plans for t in ts]
    c, tmp = open_cache(cache)
    distinct, todo = pending_tasks(all_tasks, c, warn)  # every cached entry verified (a damaged one is redone)
    if todo:
        info_cache = {}
        est = 0.0
        for t in todo:
            if (t.label, t.overrides) not in info_cache:
                try:
                    info_cache[(t.label, t.overrides)] = json.loads(_core.validate(t.text, t.name, list(t.overrides)))
                except _core.ScenarioError:
                    info_cache[(t.label, t.overrides)] = {}
            est += estimate_seconds(t, info_cache[(t.label, t.overrides)])
        import os

        n = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
        remote = (executor is not None and executor != "local") or client or scheduler
        where = "on the Dask cluster" if remote else f"on {n} process(es)"
        # then gathering, figures and tables, in parallel; all of it on the cores this machine can spare
        draw = sum(FIGURE_S * len(d.exp.figures) + TABLE_S * len(d.exp.tables) + EXPERIMENT_S for d, _, _ in plans)
        cores = effective_cores(n)
        total = (0.0 if remote else est) / cores + (draw + GATHER_PER_RUN_S * len(all_tasks)) / effective_cores(
            max(1, min(jobs or os.cpu_count() or 1, len(plans))))
        if remote:
            total += est / max(n, 1)
        log(f"{len(distinct)} runs, {len(distinct) - len(todo)} in the cache; expected time {fmt_duration(total)} "
            f"({len(todo)} runs {where}, then the figures)")
    else:
        log(f"{len(distinct)} runs, all in the cache")
    out.mkdir(parents=True, exist_ok=True)
    drawer = _Drawer(jobs, len(plans))
    missing = {t.key for t in todo}
    for d, _, tasks in plans:
        d.cached = sum(1 for t in tasks if t.key not in missing and t.engine == "aqmlab")
        if "ns2" in d.engines:
            d.engines["ns2"].cached = sum(1 for t in tasks if t.key not in missing and t.engine == "ns2")
    waiting = {i: {t.key for t in tasks if t.key in missing} for i, (_, _, tasks) in enumerate(plans)}
    by_key: dict = {}
    for i, (_, _, tasks) in enumerate(plans):
        for t in tasks:
            by_key.setdefault(t.key, set()).add(i)
    job = lambda i: DrawJob(plans[i][0].exp, plans[i][1], plans[i][2], str(c.root), str(out), quick,  # noqa: E731
                            tuple(extra_set), keep_going, _refusals(plans[i][0]))

    def stored(t):
        for i in by_key.get(t.key, ()):
            w = waiting[i]
            if t.key in w:
                w.discard(t.key)
                if not w:
                    drawer.submit(i, job(i))

    try:
        drawer.start()
        for i in range(len(plans)):
            if not waiting[i]:
                drawer.submit(i, job(i))
        execute(all_tasks, c, jobs=jobs, progress=progress, on_done=stored, executor=executor,
                scheduler=scheduler, client=client, todo=todo)  # a failing run raises RunFailed
        for i, drawn in drawer.results():
            d = plans[i][0]
            d.outputs, d.errors, d.runs, d.seconds, d.setup, d.score = (
                drawn.outputs, drawn.errors, drawn.runs, drawn.seconds, drawn.setup, drawn.score)
            log(f"{d.exp.id}: {d.runs} runs, {sum(o.kind == 'figure' for o in d.outputs)} figures, "
                f"{sum(o.kind == 'table' for o in d.outputs)} tables" + (f", {len(d.errors)} error(s)" if d.errors else ""))
    finally:
        drawer.close()
    del tmp  # a temporary cache lives until everything is drawn
    write_report(done, out, quick, time.time() - t0)
    return done


def _refusals(d: Done) -> dict:
    """What the drawing needs of an experiment's refused points: engine name -> {point index: refusal}."""
    e = d.engines.get("ns2")
    return {NS2: e.refused_at} if e and e.refused_at else {}


@dataclass
class DrawJob:
    """What a worker needs to gather and draw one experiment (paths on this machine)."""

    exp: Experiment
    sweep: object
    tasks: list
    cache: str
    out: str
    quick: bool
    extra_set: tuple
    keep_going: bool
    refused: dict = field(default_factory=dict)  # engine name -> {point index: why it cannot run it} (--ns2)


def draw(job: DrawJob) -> Done:
    """Gather one experiment's runs from the cache and write its tables, figures and comparison
    (in a worker process)."""
    from ..sweep.cache import Cache

    t1 = time.time()
    d = Done(job.exp)
    own = [t for t in job.tasks if t.engine == "aqmlab"]
    res = SweepResult(job.sweep, own, Cache(job.cache), {})
    d.runs = len(own)
    d.setup = setup_lines(d.exp, job.sweep, own, job.quick, job.extra_set)
    outdir = Path(job.out) / d.exp.id
    outdir.mkdir(parents=True, exist_ok=True)
    res.save(outdir, tables=("flows",))
    for f in sorted(d.exp.path.iterdir()):  # the definition beside the results, for the record
        if f.suffix in (".toml", ".py") and f.is_file():
            shutil.copyfile(f, outdir / f.name)
    ctx = Context(d.exp, res, outdir, job.quick)
    others = {}
    ns2 = [t for t in job.tasks if t.engine == "ns2"]
    if ns2:  # ns-2.35's runs of the points it can express: their own runs table, beside ours
        res2 = SweepResult(job.sweep, ns2, Cache(job.cache), {})
        res2.save(outdir / "ns2", tables=())
        others[NS2] = Context(d.exp, res2, outdir / "ns2", job.quick)
    # the points an engine refused: a row resting on them says why (the translator's one line)
    refused = {name: {t.key[:12]: refusal_line(at[t.point]) for t in own if t.point in at}
               for name, at in job.refused.items()}
    for spec in d.exp.figures:
        try:
            d.outputs.append(make_figure(ctx, spec, hooks.KINDS))
        except Exception as err:  # a figure that cannot be drawn is reported, not fatal
            d.errors.append(f"figure {spec.get('name')}: {type(err).__name__}: {err}")
            if not job.keep_going and _debug():
                raise
    for spec in d.exp.tables:
        try:
            d.outputs.append(make_table(ctx, spec))
        except Exception as err:
            d.errors.append(f"table {spec.get('name')}: {type(err).__name__}: {err}")
            if not job.keep_going and _debug():
                raise
    for name, other in others.items():
        try:
            d.outputs.append(engine_check_output(ctx, other, name))
        except Exception as err:
            d.errors.append(f"{name} beside aqmlab: {type(err).__name__}: {err}")
    try:
        r = reference_output(ctx, others, refused)
        if r is not None:
            d.outputs.append(r)
            d.score = r.score
    except Exception as err:
        d.errors.append(f"reference values: {type(err).__name__}: {err}")
    d.seconds = time.time() - t1
    return d


def engine_check_output(ctx: Context, other: Context, name: str):
    """The points ``name`` ran, its run table beside ours, metric by metric (the TCP and engine side,
    whatever the schemes): ``<name>-check.csv`` and ``.md``."""
    import pandas as pd

    from ..analysis.context import Output
    from .crosscheck import engine_check

    md, raw = engine_check(ctx, other, name)
    stem = "ns2-check" if name == "ns-2.35" else f"{name}-check"
    p1, p2 = ctx.out / f"{stem}.csv", ctx.out / f"{stem}.md"
    pd.DataFrame(raw).to_csv(p1, index=False)
    p2.write_text(md + "\n", encoding="utf-8")
    notes = [f"Each cell: aqmlab / {name} ({name} ÷ aqmlab), means over the same seeds; the runs of {name} are in "
             f"{other.out.name}/runs.csv. These points are the ones {name} can express; where the experiment's own "
             f"scheme is not among them, they check the TCP and engine side of its set-up."]
    return Output("table", stem, f"{name} beside aqmlab, point by point", [p1, p2], markdown=md, notes=notes)


class _Drawer:
    """Draws experiments in a local pool of worker processes (in this process for one experiment or
    ``jobs=1``); results come back in the order the experiments were given."""

    def __init__(self, jobs, n: int):
        import os

        self.n = max(1, min(jobs or os.cpu_count() or 1, n))
        self._ex = None
        self._jobs: dict = {}

    def start(self) -> None:
        """Start the workers now, before this process has threads (the run pool's, the progress
        bar's). On Linux they are forked from this process after it has loaded the plotting stack
        (pandas, scipy, matplotlib), so no worker spends seconds importing it again; elsewhere they
        are spawned."""
        if self.n == 1 or self._ex is not None:
            return
        import multiprocessing
        import os
        from concurrent.futures import ProcessPoolExecutor

        from ..analysis.plotstyle import pyplot as _plt
        from ..sweep.executors import init_local_worker as _init_local_worker

        fork = sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
        if fork:
            _plt()
        ctx = multiprocessing.get_context("fork" if fork else "spawn")
        self._ex = ProcessPoolExecutor(max_workers=self.n, mp_context=ctx, initializer=_init_local_worker,
                                       initargs=(os.getpid(),))
        self._ex.submit(int).result()  # (with fork, every worker is made at the first submit)

    def submit(self, i: int, job: DrawJob) -> None:
        if self.n == 1:
            self._jobs[i] = job  # drawn in results()
            return
        self.start()
        self._jobs[i] = self._ex.submit(draw, job)

    def results(self):
        for i in sorted(self._jobs):
            j = self._jobs[i]
            if isinstance(j, DrawJob):
                yield i, draw(j)
                continue
            try:
                yield i, j.result()
            except Exception as err:  # the worker could not gather or draw this experiment at all
                from concurrent.futures.process import BrokenProcessPool

                if isinstance(err, BrokenProcessPool):
                    raise
                d = Done(None)
                d.errors.append(f"drawing failed: {type(err).__name__}: {err}")
                yield i, d

    def close(self) -> None:
        if self._ex is not None:
            failing = sys.exc_info()[0] is not None
            if failing:  # Ctrl-C or an error: stop the drawing at once
                for p in list((self._ex._processes or {}).values()):
                    p.kill()
            self._ex.shutdown(wait=not failing, cancel_futures=True)
            self._ex = None


def _debug() -> bool:
    import os

    return bool(os.environ.get("AQMLAB_DEBUG"))


def study_title(done: list[Done]) -> tuple[str, str]:
    """The report's title and its first sentence: the papers' reproduction for the experiments that
    ship with aqmlab, else the study's own (``title`` in the experiments folder's ``study.toml``,
    else the folder's name)."""

    roots = {d.exp.path.resolve().parent for d in done}
    packaged = (Path(__file__).resolve().parents[1] / "experiments").resolve()
    if not roots or roots == {packaged}:
        return "aqmlab: reproduction of the papers", "the papers' experiments"
    root = sorted(roots)[0]
    title, what = root.name, f"the experiments of {root}"
    st = root / "study.toml"
    if st.is_file():
        try:
            meta = tomllib.loads(st.read_text(encoding="utf-8"))
            title = str(meta.get("title", title))
            what = str(meta.get("description", what))
        except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
            pass
    return f"aqmlab: {title}", what


def write_report(done: list[Done], out: Path, quick: bool, seconds: float) -> list[Path]:
    from ..analysis.markdown import md_table as _md

    title, what = study_title(done)
    papers = title == "aqmlab: reproduction of the papers"
    blocks = [("h1", title + (" (quick)" if quick else ""))]
    blocks.append(("p", f"Generated by `aqmlab reproduce` (aqmlab {__version__}) from {what} in {seconds / 60:.1f} "
                        "min" + (" with **--quick** settings (fewer seeds, shorter runs, fewer points; see each set-up)"
                                 if quick else "") + ". Each section: the set-up as run"
                        + (" (with the ns-2 release, TCP preset and RED variant of the paper)" if papers else "")
                        + ", the figures and tables (means over seeds; intervals as stated under each)"
                        + (", the papers' published values and qualitative claims beside ours" if papers else "")
                        + ", and below each figure and table an automatic comparison (which series is highest, "
                        "time averages, agreement with the models)."))
    total, cached = sum(d.runs for d in done), sum(d.cached for d in done)
    if total:
        blocks.append(("p", f"Runs: {total}, of which {cached} came from the cache (made by an earlier invocation "
                            f"with the same scenario, overrides, seed and engine build: the cache key covers all of "
                            f"them) and {total - cached} were run now; the summary below gives the count per "
                            f"experiment."))
    ns2 = [d.engines["ns2"] for d in done if "ns2" in d.engines]
    if ns2:
        n2, c2 = sum(e.runs for e in ns2), sum(e.cached for e in ns2)
        blocks.append(("p", f"ns-2.35 runs (`--ns2`): {n2}, of which {c2} came from the cache (their key names the "
                            f"engine: the `ns` program and the translator) and {n2 - c2} were run now, in "
                            f"{sum(1 for e in ns2 if e.runs)} experiments: every run point whose scheme, TCP and "
                            f"traffic ns-2.35 can express (docs/crosscheck.md); each experiment's section says which."))
    # the front page: the scorecard, then the contents
    from .scorecard import front_page

    card = front_page(done, out, quick)
    blocks += card
    blocks.append(("h2", "Contents"))
    items = (["[Scorecard](#scorecard)"] if card else []) + ["[Summary of the experiments](#summary-of-the-experiments)"]
    items += [f"[{d.exp.id}](#{rep.anchor(d.exp.id)}) — {d.exp.title}" for d in done]
    blocks.append(("ul", items))
    # every experiment with its runs, state and figures (links to each)
    blocks.append(("h2", "Summary of the experiments"))
    rows = []
    for d in done:
        state = "skipped" if d.skipped else (f"ran, {len(d.errors)} error(s)" if d.errors else "ran")
        figs = [o for o in d.outputs if o.kind == "figure"]
        links = ", ".join(f"[{o.title.split(':')[0]}](#{_fig_anchor(d, o)})" for o in figs) or "—"
        rows.append([f"[{d.exp.id}](#{rep.anchor(d.exp.id)})", d.exp.title.replace("|", "\\|"), str(d.runs),
                     str(d.cached), state, links.replace("|", "\\|")])
    blocks.append(("table", _md(["experiment", "title", "runs", "from the cache", "state", "figures"], rows)))
    blocks.append(("top", "Contents"))
    for d in done:
        e = d.exp
        blocks.append(("h2", e.id))
        blocks.append(("p", f"**{e.title}.**" + (f" [{e.paper}] {e.source}." if e.paper else "") + f" {e.description}"))
        if d.skipped:
            blocks.append(("p", f"**Not run:** {d.skipped}"))
            blocks.append(("top", "Contents"))
            continue
        blocks.append(("h3", "Set-up"))
        blocks.append(("ul", d.setup + ([engine_text(d.engines["ns2"])] if "ns2" in d.engines else [])))
        if e.raw.get("notes"):
            blocks.append(("h3", "Notes"))
            blocks.append(("ul", list(e.raw["notes"])))
        figs = [o for o in d.outputs if o.kind == "figure"]
        tabs = [o for o in d.outputs if o.kind == "table" and o.name != "reference"]
        if figs:
            blocks.append(("h3", "Figures"))
        for o in figs:
            png = next((p for p in o.files if p.suffix == ".png"), None)
            blocks.append(("anchor", _fig_anchor(d, o)))
            blocks.append(("p", f"**{o.title}**" + (f" — {o.caption}" if o.caption else "")))
            if png is not None:
                blocks.append(("img", (f"{e.id}/{png.name}", o.title)))
                blocks.append(("p", "Files: " + ", ".join(f"[{p.name}]({e.id}/{p.name})" for p in o.files)))
            if o.notes:
                blocks.append(("ul", o.notes))
        if tabs:
            blocks.append(("h3", "Tables"))
        for o in tabs:
            blocks.append(("p", f"**{o.title}**" + (f" — {o.caption}" if o.caption else "") +
                           f" ([{o.name}.csv]({e.id}/{o.name}.csv), [{o.name}.md]({e.id}/{o.name}.md))"))
            blocks.append(("table", o.markdown))
            if o.notes:
                blocks.append(("ul", o.notes))
        ref = next((o for o in d.outputs if o.name == "reference"), None)
        if ref is not None:
            blocks.append(("h3", "Published values and claims"))
            for part in getattr(ref, "parts", [("", ref.markdown)]):
                if part[0]:
                    blocks.append(("p", f"**{part[0]}**"))
                blocks.append(("table", part[1]))
                if len(part) > 2 and part[2]:
                    blocks.append(("ul", part[2]))
            if ref.notes:
                blocks.append(("ul", ref.notes))
        if d.errors:
            blocks.append(("h3", "Problems"))
            blocks.append(("ul", d.errors))
        flows = "flows.csv" if (out / e.id / "flows.csv").is_file() else "flows.parquet"
        blocks.append(("p", f"Data: [runs.csv]({e.id}/runs.csv) (one row per run), [{flows}]({e.id}/{flows}) "
                            f"(one row per flow per run)."))
        blocks.append(("top", "Contents"))
    return rep.write(blocks, out, title.removeprefix("aqmlab: "))


def engine_text(e: EngineSummary) -> str:
    """One line of an experiment's set-up: which points ns-2.35 ran, and why not the others."""
    n = len(e.ran) + len(e.refused)
    text = (f"**ns-2.35:** {len(e.ran)} of {n} run points" + (f" ({'; '.join(e.ran)})" if e.ran else "")
            + f", {e.runs} runs ({e.cached} from the cache)")
    if e.substituted:
        text += f"; {e.note} ({'; '.join(e.substituted)})"
    why: dict = {}
    for label, msg in e.refused.items():
        why.setdefault(refusal_line(msg, full=True), []).append(label)
    if why:
        text += ". Not expressible in ns-2.35: " + "; ".join(f"{', '.join(labels)} — {w}" for w, labels in why.items())
    return text + "."


def _fig_anchor(d: Done, o) -> str:
    return rep.anchor(f"{d.exp.id}-{o.name}")
