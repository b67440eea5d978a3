"""``aqmlab validate SCENARIO [--set ...]``: check a scenario without running it; print what it
describes and what it needs."""

from __future__ import annotations

import json

from .. import _core
from ..base.errors import ScenarioError
from ..base.units import fmt_rate
from .common import add_max_memory, add_scenario, print_notes, scenario_error, source


def add_parser(sub) -> None:
    v = sub.add_parser("validate", help="check a scenario without running it")
    add_scenario(v)
    v.add_argument("--set", action="append", metavar="KEY.PATH=VALUE")
    add_max_memory(v)
    v.set_defaults(fn=cmd_validate)


def cmd_validate(a) -> int:
    src = source(a.scenario)
    try:
        info = json.loads(_core.validate(src.text, src.name, a.set or []))
    except ScenarioError as e:
        raise scenario_error(a.scenario, e, a.set)
    print_notes(a.scenario, info)
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
