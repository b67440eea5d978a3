"""Running one scenario: its source, the run, its result and the folder it is written to.

=============  =====================================================================================
module         contents
=============  =====================================================================================
``source``     a scenario as given (path, TOML text or dict) read into a :class:`Source`; checks of
               seeds and overrides; the example scenarios installed with the package
``api``        :func:`run`, :func:`validate`, :func:`names`, :func:`spatial_distribution`
``result``     :class:`Result`: the summary and the tables of one run, DataFrames on first use
``rundir``     where a run's results go, and the resolved ``scenario.toml`` beside them
``metrics``    one run's results as one flat row of metrics (the sweep tables' columns)
``snapshots``  the spatial distribution of the flows in the queue, from queue snapshots
``summary``    ``summary.json`` from a flows table and link counts, for the emulator and ns-2.35
``columns``    what every column means: the definitions and units (``columns.toml``) that
               docs/metrics.md's tables and ``aqmlab list metrics`` are made from
=============  =====================================================================================

Uses :mod:`aqmlab.base` and the engine (``aqmlab._core``) only. ``aqmlab.run`` is the function
:func:`run` once ``aqmlab`` is imported: import this package's modules with ``from aqmlab.run
import api`` or ``from aqmlab.run.result import Result``.
"""

from .api import names, run, spatial_distribution, validate
from .result import TABLES, Result
from .source import Source, example, examples, read_source

__all__ = ["run", "validate", "names", "spatial_distribution", "Result", "TABLES", "Source", "read_source", "example",
           "examples"]
