"""The same sweep in another engine: each point ns-2.35 can express, as runs of their own.

:func:`ns2_tasks` turns a sweep's runs into the runs of the points ns-2.35 can express
(:mod:`aqmlab.ns2.plan`), the same seeds, under keys of their own (:func:`aqmlab.sweep.keys.engine_id`):
they are made, cached and gathered like any run (``Task.engine == "ns2"``). A point it cannot
express is left out, with the translator's one-line reason.

One substitution is made, and said: the TCP presets of the ns-2 releases before 2.35 cap the RTO
back-off at 64 (``tcp.max_backoff``), which ns-2.35 cannot (its cap comes only with
``rfc2988_ false``, which also moves the minimum RTO after the back-off; docs/crosscheck.md). A
point refused for that alone runs in ns-2.35 with ns-2.35's own back-off (doubling while the RTO is
below ``maxrto_``), its other settings as the preset gives them, and :data:`BACKOFF_NOTE` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .keys import key_hasher, seeded
from .spec import Sweep, Task

#: the override that gives ns-2.35's RTO back-off (no cap but ``maxrto_``)
NS2_BACKOFF = "tcp.max_backoff=1048576"
BACKOFF_NOTE = ("ns-2.35 runs these points with its own RTO back-off (doubling while the RTO is below maxrto_); "
                "the paper's ns-2 release capped it at 64, which ns-2.35 cannot express")


@dataclass
class EnginePlan:
    """The runs of a sweep in another engine: ``tasks``; ``refused``: point index -> the
    translator's reason; ``substituted``: point index -> the overrides added (with ``note``)."""

    tasks: list = field(default_factory=list)
    refused: dict = field(default_factory=dict)
    substituted: dict = field(default_factory=dict)
    note: str = ""


def ns2_tasks(sweep: Sweep, tasks: list[Task]) -> EnginePlan:
    """The runs of ``tasks`` (a sweep's own) that ns-2.35 can make: one per point and seed ns-2.35
    can express. Needs no ``ns`` to decide what translates, but the keys need its build
    (:class:`~aqmlab.base.errors.Ns2Missing` without it)."""
    from ..base.errors import ScenarioError
    from ..ns2.plan import make_plan

    out = EnginePlan()
    points = sweep.points()
    by_point: dict = {}
    for t in tasks:
        by_point.setdefault(t.point, []).append(t)
    for i, ts in by_point.items():
        p = points[i]
        ov = list(ts[0].overrides)
        try:
            make_plan(p.source, ts[0].seed, ov)
        except ScenarioError as e:
            if ".max_backoff:" not in str(e):
                out.refused[i] = str(e)
                continue
            try:
                make_plan(p.source, ts[0].seed, ov + [NS2_BACKOFF])
            except ScenarioError as e2:
                out.refused[i] = str(e2)
                continue
            ov.append(NS2_BACKOFF)
            out.substituted[i] = [NS2_BACKOFF]
            out.note = BACKOFF_NOTE
        h = key_hasher(p.source.text, p.source.name, ov, engine="ns2")
        out.tasks += [Task(i, t.seed, seeded(h, t.seed), t.text, t.name, tuple(ov), t.label, "ns2") for t in ts]
    return out


__all__ = ["ns2_tasks", "EnginePlan", "NS2_BACKOFF", "BACKOFF_NOTE"]
