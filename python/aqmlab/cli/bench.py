"""``aqmlab bench [--point NAME ...] [--repeat K] [--json] [--htsim PATH]``: the engine's speed, the
scale curve, the CHOKe family against RED, start-up and sweep overhead (:mod:`aqmlab.bench`)."""

from __future__ import annotations

import json
import os
import sys

from ..base.errors import UserError


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="run the benchmark points")
    b.add_argument("--point", action="append",
                   help="paper, medium, large (RED dumbbells); a, b, c (the htsim comparison points; 'htsim' for "
                        "all three); scale-1k, scale-10k, scale-100k, scale-1m ('scale' for the curve), scale-10m "
                        "(ten million flows at 1 Tb/s: about 7.5 GiB and 6 to 11 minutes); startup "
                        "(import and a whole `aqmlab run` of paper); sweep (runs/s of a sweep of tiny runs); "
                        "choke (the CHOKe family's engine CPU per bottleneck arrival against RED's at equal mean "
                        "queue); repeatable; default all but scale-1m, scale-10m and choke")
    b.add_argument("--sweep-runs", type=int, default=1000, metavar="N", help="runs of the sweep figure (default 1000)")
    b.add_argument("--repeat", type=int, default=None,
                   help="runs per point, the fastest reported (default 1); with --htsim, pairs (default 5)")
    b.add_argument("--htsim", metavar="PATH",
                   help="compare with htsim: PATH is the driver built from the shared peers/htsim folder; runs "
                        "interleaved pairs (--repeat, default 5) at a, b, c or the --point given")
    b.add_argument("--schemes", metavar="S1,S2,...",
                   help="with --point choke: the schemes to compare with RED (default: the CHOKe family and every "
                        "fair scheme)")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(fn=cmd_bench)


def cmd_bench(a) -> int:
    from .. import bench
    from ..bench import overhead

    known = list(bench.POINTS) + list(bench.GROUPS) + list(OVERHEAD_POINTS) + list(NAMED_POINTS)
    for p in a.point or []:
        if p not in known:
            raise UserError(f"--point {p}: unknown; one of: {', '.join(known)}")
    if a.sweep_runs < 1:
        raise UserError("--sweep-runs: must be a positive integer")
    if a.repeat is not None and a.repeat < 1:
        raise UserError("--repeat: must be a positive integer")
    schemes = None
    if a.schemes is not None:
        from ..bench import choke

        schemes = [x.strip() for x in a.schemes.split(",") if x.strip()]
        bad = [x for x in schemes if x not in choke.NAMES]
        if bad or not schemes:
            raise UserError(f"--schemes {a.schemes}: unknown scheme {bad[0] if bad else '(none)'!r}; one of: "
                            f"{', '.join(choke.SCHEMES)}")
    if a.htsim:
        return _bench_htsim(a, bench)
    points = bench.expand(a.point or (bench.DEFAULT + list(OVERHEAD_POINTS)))
    repeat = a.repeat or 1
    rows, extra, choke_rows = [], [], []
    try:
        from ..base.io import progress_bar

        it = progress_bar(points, desc="bench", unit="point", leave=False)
    except ImportError:  # pragma: no cover
        it = points
    for p in it:
        if p == "startup":
            extra.append(overhead.measure_startup(repeat=max(repeat, 3)))
        elif p == "sweep":
            extra.append(overhead.measure_sweep(a.sweep_runs, repeat=repeat))
        elif p == "choke":
            from ..bench import choke

            choke_rows = choke.measure(repeat=max(repeat, 3), schemes=schemes)
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
        from ..bench import choke

        if rows or extra:
            print()
        print(choke.format_rows(choke_rows))
        print(f"\neach scheme at the TCP flow count that gives RED's mean queue (within {choke.TOLERANCE:.0%}: 'vs RED'; DRR,")
        print("HHF and CSFQ with their buffer at that queue, aqmlab.bench.choke); engine")
        print(f"CPU time per packet arriving at the bottleneck, median of {choke_rows[0]['runs']} interleaved runs; 'x RED' its ratio to RED's.")
    return 0


def _bench_htsim(a, bench) -> int:
    """`aqmlab bench --htsim PATH`: interleaved pairs against the htsim driver."""
    from ..bench import htsim

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
