"""ns-2.35 as a second engine: aqmlab's scenarios translated, run by ``ns`` and read back as
aqmlab's own tables (docs/crosscheck.md), and the agreement of the two engines (docs/validation.md).

=============  =====================================================================================
module         contents
=============  =====================================================================================
``plan``       the translator's first half: a resolved scenario as ns-2.35's network, queues, agents
               and applications, or a one-line refusal naming the key ns-2.35 cannot express
``script``     the translator's second half: the plan as a Tcl script
``trace``      ns-2's packet trace read into aqmlab's counters, with a packet-conservation check
``results``    the counters as a :class:`~aqmlab.run.result.Result`: flows table, summary, series
``engine``     :func:`run` (``aqmlab.run`` in ns-2.35) and :func:`row` (its flat metrics row)
``crosscheck`` one scenario in both engines, side by side (``aqmlab crosscheck ns2``)
``agreement``  the agreement suite (``python -m aqmlab.ns2.agreement``; docs/validation.md)
=============  =====================================================================================

This layer sits above ``run`` (it returns its ``Result`` and uses its summary functions) and below
``sweep``, so sweeps and reproductions can run scenarios in ns-2.35.
"""

from .engine import available, find_ns, row, run
from .plan import make_plan
from .script import write_script

__all__ = ["run", "row", "available", "find_ns", "make_plan", "write_script"]
