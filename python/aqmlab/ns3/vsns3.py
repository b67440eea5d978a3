"""aqmlab against ns-3: the table and figures of docs/validation-ns3.md.

    python -m aqmlab.ns3.vsns3 [--out DIR] [--seeds 1,2,3,4,5] [--cases CASE|FAMILY,...] [--jobs N]
                               [--quick] [--replot] [--force] [--list] [--ablation]

Every case (:mod:`aqmlab.ns3.cases`) is one aqmlab scenario, run by :func:`aqmlab.run` and by ns-3
(:func:`aqmlab.ns3.engine.run`: the same resolved scenario, translated) with each seed. Writes into
``--out`` (default ``./validation-ns3``): every run's folder (``<case>/<aqmlab|ns3>-s<seed>/``: the
usual ``summary.json``, ``flows`` and ``timeseries``, and for ns-3 its input ``ns3.spec``),
``runs.csv`` (a row per run), ``compare.csv`` (a row per case and quantity: both means, whether the
tolerance is met, and for Linux's cases the kernel's mean and which two of the three agree),
``table.md`` and two figures: ``agreement.png`` (each quantity of every case, aqmlab against ns-3,
with the tolerance) and ``queues.png`` (the bottleneck queue over time in both, seed 1). Runs already
in ``--out`` are read, not run again (``--force`` runs them again); ``--replot`` only redraws.
``--quick`` is the CI slice: a few 10 Mb/s cases, one seed, 20 s. ``--cases`` takes names and
families (``queues``, ``bbr``, ``dctcp``, ``linux``); ``--list`` prints them. ``--ablation`` runs the
diagnostics instead: the cases in ns-3 with Reno's credit at the end of a recovery swapped for what
aqmlab does (:data:`ABLATIONS`), and in aqmlab without what ns-3 lacks or does otherwise (RACK-TLP,
Linux's RTO: :data:`AQMLAB_ABLATIONS`), into ``ablation.md``. The ns-3 runs take most of the time: 3 to 10 s of CPU
per simulated minute at 10 Mb/s, 15 to 30 s at 100 Mb/s, and minutes for Reno through the
100 Mb/s FIFO (ns-3 walks its list of segments in flight for every retransmission).
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from pathlib import Path

from ..base.errors import Ns3Error, ScenarioError, UserError
from .cases import CASES, FAMILIES, LINUX_DIR, QUICK, SEEDS, TOLERANCES, scenario

ENGINES = ("aqmlab", "ns3")
SERIES = 'simulation.flow_series_interval="100ms"'
QUICK_OVERRIDES = ['simulation.duration="20s"', 'simulation.warmup="8s"']
PACKET_BITS = 1500 * 8


#: diagnostics (``--ablation``): ns-3 with one of its mechanisms swapped for the one aqmlab and Linux
#: have — (name, [(text of the program's input, replacement)]): ns-3's TcpLinuxReno credits the ACK
#: that ends a recovery with every segment it covers (SACKed ones too); dumbbell.cc's
#: TcpLinuxRenoNoExitCredit credits at most one, as Linux credits only what an ACK newly delivers
ABLATIONS = {
    "nocredit": [("flow ns3::TcpLinuxReno ", "flow ns3::TcpLinuxRenoNoExitCredit ")],
}
#: and aqmlab without what ns-3 lacks or does otherwise: (name, [overrides]) — RACK-TLP (aqmlab's PRR
#: goes with it), and Linux's RTO (SRTT + 200 ms) for RFC 6298's (at least 200 ms), which ns-3 has
AQMLAB_ABLATIONS = {"norack": ["tcp.rack=false", "tcp.tlp=false"],
                    "rfc6298": ['tcp.rto_estimator="rfc6298"']}


def run_case(case: str, engine: str, seed: int, quick: bool = False, keep=None, ablation: str | None = None):
    """One run of a case in one engine (for ns-3 optionally with one of :data:`ABLATIONS`): a Result."""
    text, ov = scenario(case)
    ov = ov + [SERIES] + (QUICK_OVERRIDES if quick else [])
    if engine == "aqmlab":
        from ..run.api import run

        return run(text, seed=seed, overrides=ov + (AQMLAB_ABLATIONS[ablation] if ablation else []))
    from .engine import run

    swaps = ABLATIONS[ablation] if ablation else []

    def edit(spec: str) -> str:
        for old, new in swaps:
            spec = spec.replace(old, new)
        return spec

    return run(text, seed=seed, overrides=ov, keep=keep, edit=edit)


# ----------------------------------------------------------------------------------------- metrics


def metrics(summary: dict, flows) -> dict:
    """A run's row: the bottleneck, each flow's share, each group's share, retransmissions and timeouts."""
    b = summary["bottleneck"]
    marks = b.get("ce_marks") or 0
    arrivals = b["arrivals"]
    flows = flows.sort_values("flow_id")
    row = {
        "utilisation": b["utilisation"],
        "queue_mean_pkts": b["queue_mean_pkts"],
        "delay_mean_ms": _ms(b.get("delay_mean_s")),
        "delay_p99_ms": _ms(b.get("delay_p99_s")),
        "drops": b["drops_total"],
        "marks": marks,
        "arrivals": arrivals,
        "loss_ratio": (b["drops_total"] + marks) / arrivals if arrivals else math.nan,
        "jain": summary["fairness"]["jain_throughput_tcp"],
        "retx": float(flows["retx_pkts"].sum()),
        "timeouts": float(flows["timeouts"].sum()),
        "recoveries": float(flows["fast_retransmits"].sum()),
        "goodput_mbps": float(flows["goodput_bps"].sum()) / 1e6,
        "flows": len(flows),
        "rate_bps": b["capacity_bps"],
        "rtt_s": float(flows["rtt_prop_s"].mean()),
    }
    for i, share in enumerate(flows["share"]):
        row[f"flow{i}.share"] = float(share)
    for g in summary["groups"]:
        mine = flows[flows["group"] == g["name"]]
        row[f"{g['name']}.share"] = g["share"]
        row[f"{g['name']}.retx"] = float(mine["retx_pkts"].sum())
        row[f"{g['name']}.timeouts"] = float(mine["timeouts"].sum())
    return row


def _ms(x):
    return math.nan if x is None else x * 1e3


def _nan(x) -> bool:
    try:
        return x is None or math.isnan(float(x))
    except (TypeError, ValueError):
        return True


def within_factor(a: float, b: float, factor: float, floor: float) -> bool:
    """``max ≤ factor · min``, or both at most ``floor``."""
    if _nan(a) or _nan(b):
        return False
    if a <= floor and b <= floor:
        return True
    return max(a, b) <= factor * min(a, b)


def checks(case: str, a: dict, n: dict) -> list:
    """The tolerances of a case (docs/validation-ns3.md): [(quantity, key, aqmlab, ns-3, met)] on seed means."""
    fam = CASES[case][2]
    flows = int(a["flows"])
    pkt_ms = PACKET_BITS / a["rate_bps"] * 1e3

    def add(q, key, ok):
        out.append((q, key, a.get(key), n.get(key), bool(ok)))

    out: list = []
    add("utilisation", "utilisation", abs(a["utilisation"] - n["utilisation"]) <= TOLERANCES["utilisation"][1])
    add("delay_mean", "delay_mean_ms",
        abs(a["delay_mean_ms"] - n["delay_mean_ms"]) <= max(TOLERANCES["delay_mean"][1] * a["delay_mean_ms"],
                                                             2 * pkt_ms))
    add("loss_ratio", "loss_ratio", within_factor(a["loss_ratio"], n["loss_ratio"], TOLERANCES["loss_ratio"][1],
                                                  TOLERANCES["loss_ratio"][2]))
    if fam == "queues":
        for i in range(flows):
            k = f"flow{i}.share"
            add("flow_share", k, abs(a[k] - n[k]) <= TOLERANCES["flow_share"][1])
        add("jain", "jain", abs(a["jain"] - n["jain"]) <= TOLERANCES["jain"][1])
    elif flows == 2:
        for g in ("bbr", "dctcp", "cubic"):
            k = f"{g}.share"
            if not _nan(a.get(k)):
                add("group_share", k, abs(a[k] - n[k]) <= TOLERANCES["group_share"][1])
    add("retx", "retx", within_factor(a["retx"], n["retx"], TOLERANCES["retx"][1], TOLERANCES["retx"][2] * flows))
    add("timeouts", "timeouts", within_factor(a["timeouts"], n["timeouts"], TOLERANCES["timeouts"][1],
                                              TOLERANCES["timeouts"][2] * flows))
    if case.startswith(("bbr-alone", "linux-bbr")):
        bdp = a["rate_bps"] * a["rtt_s"] / PACKET_BITS
        add("bbr_queue", "queue_mean_pkts", a["queue_mean_pkts"] < 2 * bdp and n["queue_mean_pkts"] < 2 * bdp)
    return out


# ----------------------------------------------------------------------------- Linux, a third opinion


def linux_means() -> dict:
    """The kernel's means per case of docs/tcp-vs-linux.md (its runs.csv), in this page's keys."""
    import pandas as pd

    path = LINUX_DIR / "runs.csv"
    if not path.exists():
        return {}
    df = pd.read_csv(path)
    df = df[df["mode"] == "linux"]
    out = {}
    for case, d in df.groupby("case"):
        groups = ("f",) if "f.share" in d and d["f.share"].notna().any() else ("bbr", "cubic")
        m = {"utilisation": d["utilisation"].mean(), "queue_mean_pkts": d["queue_mean_pkts"].mean(),
             "delay_mean_ms": d["delay_mean_ms"].mean(), "drops": d["drops"].mean(), "seeds": len(d)}
        for g in groups:
            m[f"{g}.share"] = d[f"{g}.share"].mean()
            m[f"{g}.retx"] = d[f"{g}.retx_pkts"].mean()
            m[f"{g}.timeouts"] = d[f"{g}.timeouts"].mean()
        m["retx"] = sum(m[f"{g}.retx"] for g in groups)
        m["timeouts"] = sum(m[f"{g}.timeouts"] for g in groups)
        out[f"linux-{case}"] = m
    return out


def linux_checks(case: str, a: dict, n: dict, lin: dict) -> list:
    """docs/tcp-vs-linux.md's tolerances between each two of aqmlab (A), ns-3 (N) and Linux (L):
    [(quantity, A, N, L, the pairs that agree)]."""
    alone = int(a["flows"]) == 1
    groups = ("f",) if alone else ("bbr", "cubic")
    bbr = case == "linux-bbr"

    def queue_ok(u, v):
        if bbr:
            return within_factor(u, v, 2.0, 0)
        return abs(u - v) <= (0.10 if alone else 0.25) * max(u, v)

    rules = [("utilisation", lambda u, v: abs(u - v) <= (0.02 if alone else 0.03)),
             ("queue_mean_pkts", queue_ok)]
    rules += [(f"{g}.share", lambda u, v: abs(u - v) <= 0.10) for g in groups]
    rules += [(f"{g}.retx", lambda u, v: within_factor(u, v, 2.0, 10)) for g in groups]
    rules += [(f"{g}.timeouts", lambda u, v: within_factor(u, v, 2.0, 1)) for g in groups]
    out = []
    for key, ok in rules:
        if key not in lin or key not in a:
            continue
        vals = {"A": a[key], "N": n[key], "L": lin[key]}
        pairs = [p + q for p, q in (("A", "N"), ("A", "L"), ("N", "L")) if ok(vals[p], vals[q])]
        out.append((key, vals["A"], vals["N"], vals["L"], pairs))
    return out


# ------------------------------------------------------------------------------------------ driver

#: the cases whose queue is drawn in queues.png (when they were run)
DRAWN = ("fifo-cubic-10", "codel-cubic-10", "pie-cubic-10", "fq_codel-reno-100", "cobalt-cubic-100",
         "bbr-cubic-10", "dctcp-cubic-10", "linux-red")


def _saved(folder: Path):
    """(summary, flows, timeseries) of a saved run folder, or None."""
    import json

    import pandas as pd

    if not (folder / "summary.json").exists():
        return None
    ts = folder / "timeseries.parquet"
    return (json.loads((folder / "summary.json").read_text()), pd.read_parquet(folder / "flows.parquet"),
            pd.read_parquet(ts) if ts.exists() else None)


def _task(args) -> tuple:
    """Run one (case, engine, seed[, ablation]) into its folder (a worker process)."""
    case, engine, seed, quick, folder, *ablation = args
    res = run_case(case, engine, seed, quick, keep=folder if engine == "ns3" else None,
                   ablation=ablation[0] if ablation else None)
    res.save(folder)
    return case, engine, seed, res.wall_seconds


def expand(names: str) -> list:
    """Case names and family names, in the table's order."""
    want = set()
    for x in (x.strip() for x in names.split(",")):
        if not x:
            continue
        if x in FAMILIES:
            want |= {c for c in CASES if CASES[c][2] == x}
        elif x in CASES:
            want.add(x)
        else:
            raise UserError(f"--cases: unknown case or family {x!r} (families: {', '.join(FAMILIES)}; "
                            "--list prints the cases)")
    return [c for c in CASES if c in want]


def commit() -> str:
    """The source commit measured (``git describe``), or "unknown" outside a checkout."""
    try:
        r = subprocess.run(["git", "-C", str(Path(__file__).parent), "log", "-1", "--format=%h %cs"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def compare(out: Path, cases: list, seeds: list, jobs: int = 1, quick: bool = False, replot: bool = False,
            force: bool = False) -> dict:
    """Run what is missing, then write runs.csv, compare.csv, table.md and the figures; returns
    ``{case: [(quantity, key, aqmlab mean, ns-3 mean, met)]}``."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    todo = []
    for case in cases:
        for seed in seeds:
            for engine in ENGINES:
                folder = out / case / f"{engine}-s{seed}"
                if not replot and (force or not (folder / "summary.json").exists()):
                    todo.append((case, engine, seed, quick, folder))
    if todo:
        from .build import program

        program()  # build once, before the workers
        (out / "commit.txt").write_text(commit() + "\n")
        _execute(todo, jobs)
    rows, series = [], {}
    for case in cases:
        for seed in seeds:
            for engine in ENGINES:
                got = _saved(out / case / f"{engine}-s{seed}")
                if got is None:
                    continue
                s, flows, ts = got
                rows.append({"case": case, "engine": engine, "seed": seed, **metrics(s, flows)})
                if seed == seeds[0] and case in DRAWN and ts is not None:
                    series.setdefault(case, {})[engine] = ts[ts["link"] == "bottleneck"]
    if not rows:
        raise UserError(f"{out}: no saved runs of these cases and seeds")
    df = pd.DataFrame(rows)
    df.to_csv(out / "runs.csv", index=False)
    results, means, nseeds, three = {}, {}, {}, {}
    lin = linux_means()
    comp = []
    for case, d in df.groupby("case", sort=False):
        m = {e: d[d["engine"] == e].mean(numeric_only=True).to_dict() for e in ENGINES}
        if any(not v for v in m.values()):
            continue
        means[(case, "aqmlab")], means[(case, "ns3")] = m["aqmlab"], m["ns3"]
        nseeds[case] = int(min(len(d[d["engine"] == e]) for e in ENGINES))
        results[case] = checks(case, m["aqmlab"], m["ns3"])
        for q, key, a, n, ok in results[case]:
            comp.append({"case": case, "quantity": q, "key": key, "aqmlab": a, "ns3": n, "met": ok,
                         "linux": lin.get(case, {}).get(key)})
        if case in lin and not quick:
            three[case] = linux_checks(case, m["aqmlab"], m["ns3"], lin[case])
    pd.DataFrame(comp).to_csv(out / "compare.csv", index=False)
    from .report import agreement_figure, linux_table, queues_figure, table

    text = f"Measured at {(out / 'commit.txt').read_text().strip() if (out / 'commit.txt').exists() else '?'}\n\n"
    text += table(means, results, nseeds)
    if three:
        text += "\n**Linux's cases, three ways** (docs/tcp-vs-linux.md's tolerances between each two)\n\n"
        text += linux_table(three)
    (out / "table.md").write_text(text, encoding="utf-8")
    agreement_figure(results, means, out / "agreement.png")
    queues_figure(series, out / "queues.png")
    return results


def _execute(todo: list, jobs: int) -> None:
    """Run the tasks, ``jobs`` at a time, with a progress bar on a terminal."""
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="run", desc="aqmlab and ns-3")
    try:
        if jobs <= 1:
            for t in todo:
                _task(t)
                if bar is not None:
                    bar.update()
            return
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for fut in as_completed([pool.submit(_task, t) for t in todo]):
                fut.result()
                if bar is not None:
                    bar.update()
    finally:
        if bar is not None:
            bar.close()


def ablate(out: Path, cases: list, seeds: list, jobs: int = 1) -> str:
    """The diagnostics: each case in ns-3 with each of :data:`ABLATIONS` (Reno's swap only for Reno) and
    in aqmlab with each of :data:`AQMLAB_ABLATIONS`, beside aqmlab's and ns-3's own runs in ``out``; writes ``ablation.csv`` and ``ablation.md``."""
    import pandas as pd

    todo = []
    for case in cases:
        reno = "-reno-" in case or case == "linux-reno"
        runs = [("ns3", name) for name in ABLATIONS if reno or "nocredit" not in name]
        runs += [("aqmlab", name) for name in AQMLAB_ABLATIONS] + [(engine, None) for engine in ENGINES]
        for engine, name in runs:
            for seed in seeds:
                folder = out / case / (f"{engine}-{name}-s{seed}" if name else f"{engine}-s{seed}")
                if not (folder / "summary.json").exists():
                    todo.append((case, engine, seed, False, folder) + ((name,) if name else ()))
    if todo:
        from .build import program

        program()
        _execute(todo, jobs)
    rows = []
    for case in cases:
        for variant in ("aqmlab", *[f"aqmlab-{n}" for n in AQMLAB_ABLATIONS], "ns3", *[f"ns3-{n}" for n in ABLATIONS]):
            for seed in seeds:
                got = _saved(out / case / f"{variant}-s{seed}")
                if got is not None:
                    rows.append({"case": case, "variant": variant, "seed": seed, **metrics(got[0], got[1])})
    df = pd.DataFrame(rows)
    df.to_csv(out / "ablation.csv", index=False)
    keys = [("utilisation", "utilisation (%)", 100), ("delay_mean_ms", "mean delay (ms)", 1),
            ("loss_ratio", "drops + marks (%)", 100), ("retx", "retransmitted", 1), ("timeouts", "timeouts", 1)]
    lines = ["| case | run | seeds | " + " | ".join(h for _, h, _ in keys) + " |", "|---" * (3 + len(keys)) + "|"]
    for (case, variant), d in df.groupby(["case", "variant"], sort=False):
        m = d.mean(numeric_only=True)
        lines.append(f"| `{case}` | {variant} | {len(d)} | " + " | ".join(f"{m[k] * f:.2f}" for k, _, f in keys) + " |")
    text = "\n".join(lines) + "\n"
    (out / "ablation.md").write_text(text, encoding="utf-8")
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m aqmlab.ns3.vsns3", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="validation-ns3", help="output folder (default ./validation-ns3)")
    p.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="seeds (default 1,2,3,4,5)")
    p.add_argument("--cases", default=",".join(FAMILIES), help="cases or families, comma-separated (default: all)")
    p.add_argument("--jobs", type=int, default=1, help="runs at a time (default 1)")
    p.add_argument("--quick", action="store_true", help="the CI slice: a few 10 Mb/s cases, seed 1, 20 s")
    p.add_argument("--replot", action="store_true", help="only redraw the table and figures from --out")
    p.add_argument("--force", action="store_true", help="run again what --out already holds")
    p.add_argument("--list", action="store_true", help="print the cases and exit")
    p.add_argument("--ablation", action="store_true",
                   help="the diagnostics: ns-3's Reno without its exit credit, aqmlab without RACK-TLP or Linux's RTO")
    a = p.parse_args(argv)
    if a.list:
        for c, (_, _, fam, title) in CASES.items():
            print(f"{c:20} {fam:7} {title}")
        return 0
    try:
        if a.jobs < 1:
            raise UserError(f"--jobs: must be at least 1, got {a.jobs}")
        try:
            seeds = [int(x) for x in a.seeds.split(",") if x.strip()]
        except ValueError:
            raise UserError(f"--seeds: {a.seeds!r}: give integers separated by commas, e.g. 1,2,3") from None
        if not seeds:
            raise UserError("--seeds: give at least one seed")
        cases = list(QUICK) if a.quick else expand(a.cases)
        if a.quick:
            seeds = seeds[:1]
        if a.ablation:
            print(ablate(Path(a.out), cases, seeds, a.jobs))
            return 0
        results = compare(Path(a.out), cases, seeds, a.jobs, a.quick, a.replot, a.force)
    except (UserError, ScenarioError, Ns3Error) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    met = sum(all(ok for *_, ok in r) for r in results.values())
    print(f"{met} of {len(results)} cases within every tolerance; table: {Path(a.out) / 'table.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
