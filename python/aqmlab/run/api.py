"""The Python face of the engine: load a scenario, run it, get a :class:`~aqmlab.run.result.Result`.

:func:`run`, :func:`validate`, :func:`names` and :func:`spatial_distribution` are exported by the
``aqmlab`` package itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Sequence

from .. import _core
from ..base.errors import ScenarioError
from .result import Result
from .source import Source, attribute, check_overrides, check_seed, read_source

def _engine(src: Source, call, overrides=()):
    """Call the engine; a too deeply nested value or a bad ``max_memory`` becomes a ScenarioError. An
    error an override caused names the override (:func:`~aqmlab.run.source.attribute`)."""
    try:
        return call()
    except ScenarioError as e:
        from ..base.errors import with_suggestion

        # an unknown name gets a "did you mean"; the class stays the engine's
        better = attribute(with_suggestion(str(e)), overrides)[0]
        if better != str(e):
            raise type(e)(better) from None
        raise
    except RecursionError:
        raise ScenarioError(f"{src.label}: nested too deeply") from None
    except (ValueError, OverflowError, TypeError) as e:  # max_memory / $AQMLAB_MAX_MEMORY
        raise ScenarioError(str(e)) from None


def validate(scenario, overrides: Sequence[str] = (), max_memory: int | str | None = None) -> dict:
    """Check a scenario without running it; returns a short description, with the run's resource
    estimate (``memory_estimate_bytes``, ``events_estimate``).

    Raises :class:`aqmlab.ScenarioError` with ``'<key path>: <what is wrong>'``, also when the
    memory estimate exceeds ``max_memory`` (bytes or a size such as ``"8GB"``; default
    ``$AQMLAB_MAX_MEMORY``, else half the machine's physical memory).
    """
    src = read_source(scenario)
    ov = check_overrides(overrides)
    return json.loads(_engine(src, lambda: _core.validate(src.text, src.name, ov, max_memory), ov))


def run(
    scenario,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    progress: Callable[[float], None] | None = None,
    max_memory: int | str | None = None,
    pcap_dir: str | os.PathLike | bool | None = None,
) -> Result:
    """Run a scenario (a path, a TOML string or a dict) and return a :class:`Result`.

    ``seed`` replaces the scenario's ``simulation.seed`` (an integer from 0 to 2^64-1);
    ``overrides`` are ``"key.path=value"`` strings (one string is one override) applied before
    validation; ``progress(sim_seconds)`` is called periodically. A scenario whose memory estimate
    exceeds ``max_memory`` (bytes or a size such as ``"8GB"``; default ``$AQMLAB_MAX_MEMORY``, else
    half the physical memory) is refused before any work (docs/scenarios.md, "Resources"). Bad input
    raises :class:`aqmlab.ScenarioError`; a failed run :class:`aqmlab.SimulationError`.

    The scenario's ``[[pcap]]`` traces (docs/scenarios.md, "Packet traces") are written into
    ``pcap_dir``; by default into a temporary folder that lives as long as the Result, from which
    :meth:`Result.save` copies them; ``pcap_dir=False`` writes none. ``Result.pcap`` lists them.
    """
    import time

    src = read_source(scenario)
    seed = check_seed(seed)
    ov = check_overrides(overrides)
    if progress is not None and not callable(progress):
        raise ScenarioError(f"progress: expected a function of the simulated time, got {type(progress).__name__}")
    tmp = None
    if pcap_dir is None and ("pcap" in src.text or any("pcap" in o for o in ov)):
        import tempfile

        tmp = tempfile.TemporaryDirectory(prefix="aqmlab-pcap-")
        pcap_dir = tmp.name
    where = None if pcap_dir in (None, False) else os.fspath(pcap_dir)
    t0 = time.perf_counter()
    raw = _engine(src, lambda: _core.run(src.text, src.name, seed, ov, progress, max_memory, where), ov)
    wall = time.perf_counter() - t0
    summary = json.loads(raw["summary"])
    if ov:
        from .rundir import describe

        summary["scenario"]["overrides"] = list(ov)
        summary["scenario"]["description"] = describe(summary["scenario"].get("description", ""), ov)
    res = Result(summary, raw["flows"], raw["timeseries"], wall, raw.get("snapshots"), raw.get("flow_series"),
                 raw.get("latency"))
    res._resolve = (src.text, src.name, src.label, list(ov), seed)
    res.pcap = [Path(f) for f in raw.get("pcap", [])]
    res._pcap_tmp = tmp  # removed with the Result
    return res


def spatial_distribution(result: Result, grid: int = 200):
    """The spatial distribution (docs/metrics.md) of a run made with ``simulation.queue_snapshots = true``: the probability ``rho_udp(y)``
    that the packet at position ``y`` of the queue (``y = 0`` tail, ``y = b_avg`` head, rescaled per
    snapshot) is a UDP packet. Returns columns ``y`` and ``rho_udp`` (see docs/metrics.md).
    """
    from .snapshots import spatial_distribution as m10

    if result.snapshots is None:
        raise ValueError("this run took no queue snapshots (set simulation.queue_snapshots = true)")
    return m10(result.snapshots, n_grid=grid, source="snapshots", count=result.summary["queue_snapshots"]["count"])


def names(kind: str) -> list[tuple[str, str]]:
    """Available names with descriptions; ``kind`` is ``"aqm"``, ``"tcp"`` or ``"traffic"``."""
    return list(_core.names(kind))
