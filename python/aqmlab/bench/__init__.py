"""`aqmlab bench`: how fast the engine is, and what surrounds it costs.

=============  =====================================================================================
module         contents
=============  =====================================================================================
``points``     the engine's benchmark points (RED dumbbells, the htsim comparison points, the scale
               curve), each measured in a fresh process (``python -m aqmlab.bench POINT``)
``overhead``   ``import aqmlab``, a whole ``aqmlab run`` process, a sweep of tiny runs
``choke``      the CHOKe family's engine cost per bottleneck arrival against RED's
``htsim``      aqmlab and htsim side by side on the same dumbbell
=============  =====================================================================================

Uses the engine (``aqmlab._core``) and runs ``aqmlab`` commands in subprocesses; a sibling of
:mod:`aqmlab.reproduce`, :mod:`aqmlab.plot` and :mod:`aqmlab.emulate`, which it never imports.
"""

from .points import (DEFAULT, GROUPS, POINTS, expand, format_table, measure, run_point, run_points,
                     scenario_path)

__all__ = ["POINTS", "GROUPS", "DEFAULT", "expand", "scenario_path", "measure", "run_point", "run_points",
           "format_table"]
