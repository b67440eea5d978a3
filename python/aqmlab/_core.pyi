"""Stubs of ``aqmlab._core``, the native module built from crates/py (PyO3).

The bindings only convert and delegate: scenarios travel as TOML text with their default name and
``"key.path=value"`` overrides; summaries and plans come back as JSON text, tables as lists of
``(column, values)`` pairs. Python wraps them (``aqmlab.run``, ``aqmlab.emulate``, ...); call these
directly only from aqmlab's own layers.
"""

import os
from typing import Any, Callable, Sequence, TypedDict

__version__: str

_Columns = list[tuple[str, list[Any]]]
_MaxMemory = int | str | None

class _RunOutput(TypedDict, total=False):
    summary: str
    pcap: list[str]
    flows: _Columns
    timeseries: _Columns
    snapshots: _Columns
    flow_series: _Columns

class _BenchOutput(TypedDict):
    summary: str
    marks: tuple[Any, Any, Any, Any]

class ScenarioError(ValueError):
    """A mistake in a scenario; ``str(e)`` is ``'<key path>: <what is wrong>'``."""

class SimulationError(RuntimeError):
    """A run failed (e.g. a packet-conservation violation, or an engine bug)."""

def validate(text: str, name: str, overrides: Sequence[str] = ..., max_memory: _MaxMemory = None) -> str:
    """Load and check a scenario without running it; a JSON description with the memory and event estimates
    and ``notes``: what each link's queue discipline never uses though it acts, one line each."""

def run(
    text: str,
    name: str,
    seed: int | None = None,
    overrides: Sequence[str] = ...,
    progress: Callable[[float], object] | None = None,
    max_memory: _MaxMemory = None,
    pcap_dir: str | os.PathLike[str] | None = None,
) -> _RunOutput:
    """Run a scenario: the summary as JSON text, the tables as columns, the pcap files written to ``pcap_dir``."""

def bench(text: str, name: str, overrides: Sequence[str], clock: Callable[[], Any]) -> _BenchOutput:
    """Run a scenario and read ``clock`` before building, after building, after the event loop and after the results."""

def resolve(
    text: str, name: str, overrides: Sequence[str] = ..., seed: int | None = None, header: Sequence[str] = ...
) -> str:
    """The scenario with the overrides applied and the seed set, as TOML with every default filled in."""

def flow_plan(text: str, name: str, overrides: Sequence[str] = ..., seed: int | None = None) -> str:
    """Where and when the scenario's flows run (JSON): per group, each host pair's start time drawn
    from its own stream, its two nodes and the link names of its data and ACK routes."""

def parse_size(s: str) -> int:
    """A size (``"8GB"``, ``"512MiB"``, ``"1000000"``) in bytes, at least 1; ``ValueError`` if malformed."""

def parse_rate(s: str) -> float:
    """A rate (``"10Mb/s"``, ``"600 kbps"``, ``"1e6"``) in bits per second, at least 1; ``ValueError`` if malformed."""

def parse_duration(s: str) -> float:
    """A duration (``"100ms"``, ``"1.5s"``, ``"2min"``, ``"0.1"``) in seconds; ``ValueError`` if malformed."""

def names(kind: str) -> list[tuple[str, str]]:
    """The names of ``"aqm"``, ``"tcp"`` or ``"traffic"`` with one-line descriptions."""

def tcp_presets(details: bool) -> list[tuple[str, str]]:
    """The TCP presets with descriptions; with ``details``, each ns-2 preset's values and sources."""

def flow_columns() -> tuple[list[str], list[str]]:
    """The flows table's columns in order, and those that hold strings: every engine's flows schema."""

def aqm_describe(name: str) -> tuple[str, str, list[tuple[str, str | None, str, str | None, str, list[tuple[str, str]]]]] | None:
    """A queue discipline's summary, reference and parameters: (name, alias, unit, default as a
    scenario writes it or None when required, description, [(choice, meaning)]); None for an
    unknown name."""

def emulation_plan(text: str, name: str, overrides: Sequence[str] = ..., seed: int | None = None) -> str:
    """The dumbbell scenario resolved for emulation (JSON): links, groups, host pairs, start times, ON/OFF bursts."""

def emu_bench(text: str, name: str, overrides: Sequence[str] = ..., packets: int = 1000000) -> dict[str, Any]:
    """The forwarder core's speed on synthetic congested traffic (no I/O, no privileges)."""

def tun_open(netns_path: str, name: str) -> int:
    """Create a TUN device ``name`` in the network namespace bound at ``netns_path``; its file descriptor."""

def monotonic_ns() -> int:
    """CLOCK_MONOTONIC in nanoseconds (as ``time.monotonic_ns()``)."""

class Forwarder:
    """The forwarder of one emulation run: the bottleneck applied to real packets from TUN devices."""

    def __new__(
        cls,
        text: str,
        name: str,
        overrides: Sequence[str],
        seed: int | None,
        ports: Sequence[int],
        pair_ports: Sequence[int],
        receiver_port: int,
        sender_base: int,
        receiver_base: int,
        max_packet: int,
        t0: int,
    ) -> Forwarder:
        """Configure a run: ``ports[i]`` is port i's descriptor, host pair i sends through ``pair_ports[i]``."""
    def run(self) -> dict[str, Any]:
        """Forward until the run ends (GIL released); the report: flows, bottleneck, timeseries, counts, timing."""
    def stop(self) -> None:
        """End the run early (from another thread)."""
    @property
    def now_s(self) -> float:
        """The run's progress in seconds."""
