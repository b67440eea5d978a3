"""ns-3 (release 3.44, the ``ns3`` wheel's C++ libraries) as a third opinion on the modern senders and
queues (docs/validation-ns3.md).

* :mod:`~aqmlab.ns3.build` compiles ``dumbbell.cc`` against the wheel, once;
* :mod:`~aqmlab.ns3.plan` translates a resolved aqmlab dumbbell into the program's input, refusing
  what ns-3 cannot run and listing what it cannot match;
* :mod:`~aqmlab.ns3.engine` runs it and returns aqmlab's :class:`~aqmlab.run.result.Result`;
* :mod:`~aqmlab.ns3.vsns3` is the comparison: its cases, tolerances, table and figures
  (``python -m aqmlab.ns3.vsns3 --out DIR``).
"""
