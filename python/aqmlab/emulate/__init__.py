"""`aqmlab emulate`: real Linux TCP and UDP through aqmlab's own queue disciplines.

A scenario's dumbbell is built on this host from network namespaces (one per flow group for the
senders, one for the receivers), each joined by a TUN device to a userspace forwarder written in
Rust (`crates/emu`) that applies the bottleneck exactly as the simulator models it, with the
discipline from `crates/aqm`. Built-in agents run bulk TCP transfers over real sockets with the
congestion control the scenario names, and UDP CBR or ON/OFF sources; results come out in the
simulator's format. See docs/emulation.md.

    from aqmlab.emulate import emulate
    res = emulate("examples/dumbbell-red.toml", overrides=["simulation.duration=20s"])   # needs root
"""

from ..base.errors import EmulationError, PlanError, Terminated
from .netns import leftovers, privilege_problem
from .run import emulate

__all__ = ["emulate", "EmulationError", "PlanError", "Terminated", "privilege_problem", "leftovers"]
