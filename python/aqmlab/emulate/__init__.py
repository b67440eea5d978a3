"""`aqmlab emulate`: real Linux TCP and UDP through aqmlab's own queue disciplines.

A scenario's dumbbell is built on this host from network namespaces (one per flow group for the
senders, one for the receivers), each joined by a TUN device to a userspace forwarder written in
Rust (`crates/emu`) that applies the bottleneck exactly as the simulator models it, with the
discipline from `crates/aqm`. Built-in agents run bulk TCP transfers over real sockets with the
congestion control the scenario names, and UDP CBR or ON/OFF sources; results come out in the
simulator's format. See docs/emulation.md.

    from aqmlab.emulate import emulate
    res = emulate("examples/dumbbell-red.toml", overrides=["simulation.duration=20s"])   # needs root

=============  =====================================================================================
module         contents
=============  =====================================================================================
``netns``      namespaces, TUN devices, addresses and processes of one run, and their clean-up
``plan``       the engine's emulation plan checked for what emulation supports; Linux congestion
               controls
``run``        one emulation run: network, forwarder, agents, collection, tear-down
``results``    the forwarder's and agents' reports as a :class:`~aqmlab.run.result.Result`
``agent``      the traffic agents, run as scripts inside the namespaces (standard library only)
``fidelity``   emulated against simulated runs (``python -m aqmlab.emulate.fidelity``)
``limits``     the forwarder's limits (``python -m aqmlab.emulate.limits``)
=============  =====================================================================================

Uses :mod:`aqmlab.run`, :mod:`aqmlab.base` and the engine; the command is :mod:`aqmlab.cli.emulate`.
"""

from ..base.errors import EmulationError, PlanError, Terminated
from .netns import leftovers, privilege_problem
from .run import emulate

__all__ = ["emulate", "EmulationError", "PlanError", "Terminated", "privilege_problem", "leftovers"]
