"""The agreement suite: aqmlab against ns-2.35 beyond the papers (docs/validation.md).

    python -m aqmlab.ns2.agreement [--seeds 5] [--only ID,...] [--quick] [--jobs N] [--out DIR]
    aqmlab crosscheck ns2 --suite [--quick] [--jobs N] [--out DIR]

37 scenarios on one 10 Mb/s dumbbell (20 ms bottleneck delay, 100 Mb/s and 1 ms access links,
1000-byte packets, a 100-packet buffer), each run in both engines with seeds 1-5 (60 s, measured
over the last 45 s): the four TCP variants under DropTail, RED, PI and REM with 10 flows; three
more RED variants; 1 and 100 flows; a 3 Mb/s CBR flow beside the TCP flows; and a mix of round-trip
times (44, 62 and 122 ms). Each metric is compared through the means over the seeds, against a
tolerance stated before anything was measured (:data:`TOLERANCES`, committed before the first
run); docs/validation.md has the table, the figures and the mechanism behind every difference
beyond tolerance.

``--quick`` runs the bounded slice CI runs (:data:`QUICK`): a few scenarios, two seeds.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

# ----------------------------------------------------------------------------- the scenarios

BASE = """
name = "agree"
[simulation]
duration = "60s"
warmup = "15s"
[bottleneck]
rate = "10Mb/s"
delay = "20ms"
limit = 100
aqm = { type = "droptail" }
[access]
rate = "100Mb/s"
delay = "1ms"
"""

AQMS = {
    "droptail": '{ type = "droptail" }',
    "red": '{ type = "red", min_th = 20, max_th = 60, max_p = 0.1, w_q = 0.002, gentle = true, variant = "ns2" }',
    "red-hard": '{ type = "red", min_th = 20, max_th = 60, max_p = 0.1, w_q = 0.002, gentle = false, variant = "ns2" }',
    "red-fast": '{ type = "red", min_th = 20, max_th = 60, max_p = 0.1, w_q = 0.02, gentle = true, variant = "ns2" }',
    "red-bytes": ('{ type = "red", min_th = 20000, max_th = 60000, max_p = 0.1, w_q = 0.002, gentle = true, '
                  'variant = "ns2", mode = "byte", max_pkt_size = 1000, mean_pkt_size = 1000 }'),
    "pi": '{ type = "pi", q_ref = 40 }',
    "rem": '{ type = "rem", b0 = 40, mean_pkt_size = 1000 }',
}
#: the round-trip mix: three groups with sender access delays of 1, 10 and 40 ms (RTT 44, 62, 122 ms)
RTT_MIX = (("short", "1ms"), ("mid", "10ms"), ("long", "40ms"))


def scenario(tcp: str, aqm: str, flows: int, udp: bool, rtt_mix: bool) -> str:
    """The TOML text of one suite scenario."""
    s = BASE.replace('aqm = { type = "droptail" }', f"aqm = {AQMS[aqm]}")
    if aqm == "red-bytes":
        s = s.replace("limit = 100", 'limit = 100000\nqueue_unit = "bytes"')
    s += f'[tcp]\nvariant = "{tcp}"\n'
    groups = RTT_MIX if rtt_mix else (("tcp", "1ms"),)
    per = [flows // len(groups) + (1 if i < flows % len(groups) else 0) for i in range(len(groups))]
    for (name, delay), n in zip(groups, per):
        s += (f'[[flows]]\nname = "{name}"\ntransport = "tcp"\ncount = {n}\nsender_delay = "{delay}"\n'
              'start = { uniform = ["0s", "2s"] }\n')
    if udp:
        s += '[[flows]]\nname = "udp"\ntransport = "udp"\nrate = "3Mb/s"\npacket_size = 1000\n'
    return s


def _suite() -> dict:
    """id -> (tcp, aqm, flows, udp, rtt_mix): the 37 scenarios."""
    out = {}
    for tcp in ("reno", "newreno", "sack", "vegas"):  # every variant under every kind of queue
        for aqm in ("droptail", "red", "pi", "rem"):
            out[f"{tcp}-{aqm}-10"] = (tcp, aqm, 10, False, False)
    for aqm in ("red-hard", "red-fast", "red-bytes"):  # RED's variants
        out[f"newreno-{aqm}-10"] = ("newreno", aqm, 10, False, False)
    for n in (1, 100):  # one flow, a hundred
        for aqm in ("droptail", "red", "pi", "rem"):
            out[f"newreno-{aqm}-{n}"] = ("newreno", aqm, n, False, False)
    for aqm in ("droptail", "red", "pi", "rem"):  # an unresponsive flow
        out[f"newreno-{aqm}-10-udp"] = ("newreno", aqm, 10, True, False)
    out["newreno-red-100-udp"] = ("newreno", "red", 100, True, False)
    for tcp in ("reno", "sack"):  # round trips of 44, 62 and 122 ms
        for aqm in ("droptail", "red"):
            out[f"{tcp}-{aqm}-12-rttmix"] = (tcp, aqm, 12, False, True)
    out["vegas-red-12-rttmix-udp"] = ("vegas", "red", 12, True, True)
    return out


SUITE = _suite()
SEEDS = (1, 2, 3, 4, 5)
#: the CI slice: scenarios of each kind, two seeds (tests/test_ns2_agreement.py)
QUICK = ("newreno-droptail-10", "sack-red-10", "newreno-pi-10", "newreno-rem-10", "newreno-red-10-udp")
QUICK_SEEDS = (1, 2)

# ----------------------------------------------------------------------------- the tolerances
#
# Stated before the suite was first run (the commit that added this file has no measurement):
# what two faithful implementations of the same model should agree to, through the means over the
# seeds, given that their random draws are independent. A difference beyond tolerance is explained
# in docs/validation.md by its mechanism.
#
#   kind "abs":  |ns2 - aqmlab| <= a
#   kind "rel":  |ns2 - aqmlab| <= max(floor, r * |aqmlab|)
#   kind "unfair": compares 1 - J (a Jain's index near 1 says little through J itself):
#                 |(1 - J_ns2) - (1 - J_aqmlab)| <= floor + r * max(1 - J_ns2, 1 - J_aqmlab)

TOLERANCES = {
    "utilisation": ("abs", 0.02, 0.0, "bottleneck utilisation (0-1)"),
    "throughput_per_flow": ("rel", 0.10, 1000.0, "mean TCP throughput per flow of each TCP group (b/s)"),
    "jain_tcp": ("unfair", 0.5, 0.01, "Jain's index of the TCP flows' throughputs (1 - J compared)"),
    "queue_mean": ("rel", 0.10, 2.0, "time-average queue (packets)"),
    "drop_ratio": ("rel", 0.15, 0.002, "bottleneck drops / arrivals"),
    "timeouts": ("rel", 0.30, 5.0, "TCP retransmission timeouts in the window (all TCP flows)"),
    "udp_share": ("abs", 0.03, 0.0, "the CBR flow's share of the link"),
}


def within(metric: str, a: float, n: float) -> tuple[bool, float]:
    """Whether ns-2's value ``n`` agrees with aqmlab's ``a`` for ``metric``, and the allowed difference."""
    kind, r, floor, _ = TOLERANCES[metric]
    if kind == "abs":
        tol = r
        return abs(n - a) <= tol, tol
    if kind == "rel":
        tol = max(floor, r * abs(a))
        return abs(n - a) <= tol, tol
    ua, un = 1.0 - a, 1.0 - n
    tol = floor + r * max(ua, un)
    return abs(un - ua) <= tol, tol


# ----------------------------------------------------------------------------- running


def metrics(row: dict, groups: list) -> dict:
    """The compared metrics (and a few that explain them) from a run's flat row."""
    out = {
        "utilisation": row.get("bottleneck.utilisation"),
        "queue_mean": row.get("bottleneck.queue_mean_pkts"),
        "drop_ratio": row.get("bottleneck.drop_ratio"),
        "timeouts": row.get("tcp.timeouts"),
        "jain_tcp": row.get("tcp.jain_throughput"),
        "udp_share": row.get("udp.share", math.nan),
        "drops_early": row.get("bottleneck.drops.early"),
        "drops_overflow": row.get("bottleneck.drops.overflow"),
        "fast_retransmits": row.get("tcp.fast_retransmits"),
        "delay_mean_s": row.get("bottleneck.delay_mean_s"),
        "tcp_goodput_bps": row.get("tcp.goodput_bps"),
        "retx_pkts": math.nan,
    }
    for g in groups:
        out[f"throughput_per_flow.{g}"] = row.get(f"group.{g}.throughput_per_flow_bps")
    return out


def _groups(spec) -> list:
    return [g for g, _ in (RTT_MIX if spec[4] else (("tcp", ""),))]


def run_one(task: tuple) -> tuple:
    """One run: (scenario id, seed, engine) -> (id, seed, engine, metrics)."""
    sid, seed, engine = task
    spec = SUITE[sid]
    text = scenario(*spec)
    if engine == "aqmlab":
        from ..run.api import run

        res = run(text, seed=seed, pcap_dir=False)
    else:
        from .engine import run

        res = run(text, seed=seed)
    from ..run.metrics import run_row

    row = run_row(res)
    m = metrics(row, _groups(spec))
    m["retx_pkts"] = math.fsum(dict(res.columns("flows"))["retx_pkts"])
    return sid, seed, engine, m


def run_suite(ids, seeds, jobs: int | None = None, progress=None) -> list:
    """Every (scenario, seed, engine) run; ``progress(done, total)`` after each."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing as mp

    tasks = [(sid, s, e) for sid in ids for s in seeds for e in ("aqmlab", "ns2")]
    out = []
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1:
        for t in tasks:
            out.append(run_one(t))
            if progress:
                progress(len(out), len(tasks))
        return out
    with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as ex:
        for r in ex.map(run_one, tasks):
            out.append(r)
            if progress:
                progress(len(out), len(tasks))
    return out


def _stats(x: list) -> tuple[float, float]:
    v = [float(a) for a in x if a is not None and not (isinstance(a, float) and math.isnan(a))]
    if not v:
        return math.nan, math.nan
    m = math.fsum(v) / len(v)
    sd = math.sqrt(math.fsum((a - m) ** 2 for a in v) / (len(v) - 1)) if len(v) > 1 else math.nan
    return m, sd


def compare(results: list) -> list:
    """One row per scenario and metric: means and standard deviations over the seeds of both
    engines, the difference, the tolerance and whether it holds."""
    by: dict = {}
    for sid, seed, engine, m in results:
        by.setdefault(sid, {}).setdefault(engine, []).append(m)
    rows = []
    for sid in SUITE:
        if sid not in by:
            continue
        spec = SUITE[sid]
        a_runs, n_runs = by[sid].get("aqmlab", []), by[sid].get("ns2", [])
        names = ["utilisation"] + [f"throughput_per_flow.{g}" for g in _groups(spec)]
        if spec[2] > 1 or spec[4]:
            names.append("jain_tcp")
        names += ["queue_mean", "drop_ratio", "timeouts"]
        if spec[3]:
            names.append("udp_share")
        for name in names:
            metric = name.split(".")[0]
            ma, sa = _stats([r[name] for r in a_runs])
            mn, sn = _stats([r[name] for r in n_runs])
            ok, tol = within(metric, ma, mn)
            rows.append({"scenario": sid, "metric": name, "aqmlab": ma, "aqmlab_sd": sa, "ns2": mn, "ns2_sd": sn,
                         "diff": mn - ma, "tolerance": tol, "within": ok, "seeds": len(a_runs)})
    return rows


# ----------------------------------------------------------------------------- output


def _fmt(metric: str, v: float) -> str:
    """One number of the table with its unit: a rate in b/s, kb/s or Mb/s by its own size (a mean,
    its spread, a difference and a tolerance of one row can differ by orders of magnitude), the
    mean queue in packets, the drop ratio in %; fractions, Jain's index and counts are plain."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if metric.startswith("throughput_per_flow"):
        a = abs(v)
        if a >= 1e6:
            return f"{v / 1e6:.3f} Mb/s"
        return f"{v / 1e3:.1f} kb/s" if a >= 1e3 else f"{v:.0f} b/s"
    if metric in ("utilisation", "udp_share", "jain_tcp"):
        return f"{v:.3f}"
    if metric == "drop_ratio":
        return f"{v * 100:.2f} %"
    if metric == "queue_mean":
        return f"{v:.1f} pkt"
    return f"{v:.1f}"


def markdown(rows: list) -> str:
    """The table of docs/validation.md: one line per scenario and metric; differences beyond
    tolerance in bold."""
    out = ["| scenario | metric | aqmlab | ns-2.35 | difference | tolerance | agrees |", "|---|---|---|---|---|---|---|"]
    last = None
    for r in rows:
        m = r["metric"]
        mark = "yes" if r["within"] else "**no**"
        diff = _fmt(m, abs(r["diff"]))
        sign = "+" if r["diff"] > 0 else "−" if r["diff"] < 0 else ""
        out.append(f"| {r['scenario'] if r['scenario'] != last else ''} | {m} | {_fmt(m, r['aqmlab'])} ± "
                   f"{_fmt(m, r['aqmlab_sd'])} | {_fmt(m, r['ns2'])} ± {_fmt(m, r['ns2_sd'])} | {sign}{diff} | "
                   f"{_fmt(m, r['tolerance'])} | {mark} |")
        last = r["scenario"]
    return "\n".join(out) + "\n"


def summary_lines(rows: list) -> list:
    """Per metric: how many comparisons agree."""
    per: dict = {}
    for r in rows:
        k = r["metric"].split(".")[0]
        a, n = per.get(k, (0, 0))
        per[k] = (a + (1 if r["within"] else 0), n + 1)
    total = sum(a for a, _ in per.values()), sum(n for _, n in per.values())
    lines = [f"{k}: {a} of {n} within tolerance" for k, (a, n) in per.items()]
    lines.append(f"all: {total[0]} of {total[1]} comparisons within tolerance, "
                 f"{len({r['scenario'] for r in rows})} scenarios")
    return lines


def write_csv(path: Path, rows: list) -> None:
    import csv

    if not rows:
        return
    names = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names, restval="")
        w.writeheader()
        w.writerows(rows)


def figures(rows: list, out: Path) -> list:
    """Two figures: each metric's ns-2.35 mean against aqmlab's with the tolerance band, and each
    comparison's difference in units of its tolerance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    panels = [("utilisation", "utilisation", 1.0), ("throughput_per_flow", "throughput per flow (Mb/s)", 1e-6),
              ("jain_tcp", "Jain's index (TCP)", 1.0), ("queue_mean", "mean queue (packets)", 1.0),
              ("drop_ratio", "drop ratio (%)", 100.0), ("timeouts", "timeouts (window)", 1.0)]
    fig, axes = plt.subplots(2, 3, figsize=(12, 7.5))
    for ax, (metric, label, k) in zip(axes.flat, panels):
        pts = [r for r in rows if r["metric"].split(".")[0] == metric and not math.isnan(r["aqmlab"])]
        if not pts:
            ax.set_visible(False)
            continue
        xs = [r["aqmlab"] * k for r in pts]
        ys = [r["ns2"] * k for r in pts]
        lo, hi = min(xs + ys), max(xs + ys)
        pad = 0.05 * (hi - lo or 1)
        line = [lo - pad, hi + pad]
        ax.plot(line, line, color="0.4", lw=0.8, label="equal")
        kind, r, floor, _ = TOLERANCES[metric]
        grid = [line[0] + i * (line[1] - line[0]) / 100 for i in range(101)]
        if kind == "abs":
            up = [g + r * k for g in grid]
            dn = [g - r * k for g in grid]
        elif kind == "rel":
            up = [g + max(floor * k, r * abs(g)) for g in grid]
            dn = [g - max(floor * k, r * abs(g)) for g in grid]
        else:
            up = [g + floor + r * (1 - g) for g in grid]
            dn = [g - floor - r * (1 - g) for g in grid]
        ax.fill_between(grid, dn, up, color="0.85", label="tolerance")
        ok = [r["within"] for r in pts]
        ax.scatter([x for x, o in zip(xs, ok) if o], [y for y, o in zip(ys, ok) if o], s=14, color="C0",
                   label="within tolerance", zorder=3)
        ax.scatter([x for x, o in zip(xs, ok) if not o], [y for y, o in zip(ys, ok) if not o], s=22, color="C3",
                   marker="x", label="beyond tolerance", zorder=3)
        ax.set_xlim(line)
        ax.set_ylim(line)
        ax.set_xlabel(f"aqmlab: {label}")
        ax.set_ylabel(f"ns-2.35: {label}")
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False)
    fig.suptitle("aqmlab against ns-2.35: means over seeds, one point per scenario (and TCP group)")
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    p = out / "agreement-scatter.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    files.append(p)

    ids = list(dict.fromkeys(r["scenario"] for r in rows))
    mets = ["utilisation", "throughput_per_flow", "jain_tcp", "queue_mean", "drop_ratio", "timeouts", "udp_share"]
    fig, ax = plt.subplots(figsize=(12, 9))
    for j, metric in enumerate(mets):
        for i, sid in enumerate(ids):
            for r in rows:
                if r["scenario"] == sid and r["metric"].split(".")[0] == metric and r["tolerance"] > 0:
                    v = r["diff"] / r["tolerance"] if metric != "jain_tcp" else -r["diff"] / r["tolerance"]
                    v = max(-4.0, min(4.0, v))
                    ax.scatter(v, i + (j - 3) * 0.1, s=12, color=f"C{j}", marker="o" if r["within"] else "x",
                               label=metric if i == 0 else None)
    ax.axvspan(-1, 1, color="0.9", zorder=0)
    ax.set_yticks(range(len(ids)))
    ax.set_yticklabels(ids, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(-4.2, 4.2)
    ax.set_xlabel("(ns-2.35 − aqmlab) / tolerance (clipped at ±4; for Jain's index, of 1 − J)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=4, frameon=False)
    fig.tight_layout()
    p = out / "agreement-differences.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    files.append(p)
    return files


def main(out=None, quick: bool = False, jobs: int | None = None, quiet: bool = False, seeds=None,
         only=None) -> int:
    """Run the suite (or its quick slice), write its tables and figures into ``out`` and print the
    summary; returns 0 when every comparison agrees, 1 otherwise."""
    from .engine import find_ns

    find_ns()
    ids = list(only) if only else list(QUICK if quick else SUITE)
    bad = [i for i in ids if i not in SUITE]
    if bad:
        raise ValueError(f"unknown scenario {bad[0]!r}")
    seeds = list(seeds) if seeds else list(QUICK_SEEDS if quick else SEEDS)
    out = Path(out or ("agreement-quick" if quick else "agreement"))
    out.mkdir(parents=True, exist_ok=True)
    bar = None
    if not quiet and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(ids) * len(seeds) * 2, unit="run", file=sys.stderr, leave=False,
                   desc="aqmlab and ns-2.35")
    results = run_suite(ids, seeds, jobs, (lambda d, t: bar.update(1)) if bar else None)
    if bar:
        bar.close()
    runs = [{"scenario": s, "seed": seed, "engine": e, **m} for s, seed, e, m in results]
    write_csv(out / "agreement-runs.csv", runs)
    return report(results, out)


def read_runs(path: Path) -> list:
    """The runs of an earlier ``agreement-runs.csv`` as ``run_suite`` returns them."""
    import csv

    out = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            m = {k: (float(v) if v not in ("", "None") else math.nan) for k, v in r.items()
                 if k not in ("scenario", "seed", "engine")}
            out.append((r["scenario"], int(r["seed"]), r["engine"], m))
    return out


def report(results: list, out: Path) -> int:
    """The comparison table, its CSV and Markdown, the figures and the printed summary."""
    rows = compare(results)
    write_csv(out / "agreement.csv", rows)
    (out / "agreement.md").write_text(markdown(rows), encoding="utf-8")
    files = figures(rows, out)
    for line in summary_lines(rows):
        print(line)
    print(f"\nresults: {out}/ (agreement.md, agreement.csv, agreement-runs.csv, "
          f"{', '.join(f.name for f in files)})")
    return 0 if all(r["within"] for r in rows) else 1


def cli(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m aqmlab.ns2.agreement", description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default=None, help="seeds, e.g. 1,2,3,4,5 (default: 1-5; --quick 1,2)")
    p.add_argument("--only", default=None, help="scenario ids, comma-separated (default: all)")
    p.add_argument("--quick", action="store_true", help="the bounded slice CI runs")
    p.add_argument("--jobs", type=int, default=None, help="parallel runs (default: every core)")
    p.add_argument("--out", default=None, help="output folder (default ./agreement)")
    p.add_argument("--list", action="store_true", help="list the scenarios and tolerances and exit")
    p.add_argument("--replot", action="store_true", help="only compare and draw again from --out's agreement-runs.csv")
    a = p.parse_args(argv)
    if a.list:
        for sid, spec in SUITE.items():
            print(f"{sid:28s} tcp {spec[0]:8s} aqm {spec[1]:10s} flows {spec[2]:4d}  udp {spec[3]!s:5s}  "
                  f"rtt mix {spec[4]}")
        for k, (kind, r, floor, what) in TOLERANCES.items():
            print(f"tolerance {k}: {kind} {r} (floor {floor}): {what}")
        return 0
    if a.replot:
        out = Path(a.out or "agreement")
        return report(read_runs(out / "agreement-runs.csv"), out)
    seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else None
    only = [x for x in a.only.split(",") if x] if a.only else None
    return main(a.out, a.quick, a.jobs, False, seeds, only)


if __name__ == "__main__":
    sys.exit(cli())
